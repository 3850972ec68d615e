"""What the application holds while it runs, opened and closed by its lifespan.

The lifespan starts DynamoDB Local when no endpoint is configured, opens the one aioboto3
client of the application's lifetime, creates (and seeds) the table where the settings ask
for it, settles the token rules, and leaves a ``Runtime`` on ``app.state`` for the routes.
Leaving it closes everything in reverse order.
"""

from __future__ import annotations

import asyncio
import gc
import logging
import secrets
import sys
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, AsyncExitStack, asynccontextmanager
from dataclasses import dataclass, replace

from starlette.applications import Starlette

from resolvers.auth import TokenRules, mint
from server.demo import demo_comments
from server.local_engine import LocalEngine
from server.progress import progress_bar
from server.settings import Settings
from storage.bulk import load_new_products
from storage.client import open_client
from storage.planner import Tuning
from storage.snapshots import PlanMemory
from storage.table import TableRef, create_table
from storage.types import DynamoClient
from storage.writes import WriteLimits

log = logging.getLogger("comments.server")

# Seconds a printed dev token lives (at most; JWT_MAX_LIFETIME may be shorter).
DEV_TOKEN_LIFETIME = 24 * 3600


@dataclass(frozen=True, slots=True)
class Runtime:
    """What the routes need from the lifespan: the table (with its one client), the token
    rules and the settings, and the dev token printed at start-up, if one was."""

    table: TableRef
    tokens: TokenRules
    settings: Settings
    dev_token: str | None = None

    @property
    def tuning(self) -> Tuning:
        return Tuning(z=self.settings.read_headroom)

    @property
    def write_limits(self) -> WriteLimits:
        return self.settings.write_limits


def runtime_of(app: Starlette) -> Runtime:
    """The runtime the lifespan left on ``app.state``; RuntimeError outside the lifespan."""
    runtime = getattr(app.state, "runtime", None)
    if not isinstance(runtime, Runtime):
        raise RuntimeError("the application has not started")
    return runtime


def lifespan(
    settings: Settings, client: DynamoClient | None = None
) -> Callable[[Starlette], AbstractAsyncContextManager[None]]:
    """Starlette's ``lifespan`` for these settings. ``client`` lets tests supply storage;
    otherwise the lifespan opens it (and starts DynamoDB Local first when no endpoint is
    configured)."""

    @asynccontextmanager
    async def run(app: Starlette) -> AsyncIterator[None]:
        async with open_runtime(settings, client) as runtime:
            app.state.runtime = runtime
            if settings.gc_freeze:
                # Everything made so far lives as long as the process: stop scanning it.
                gc.collect()
                gc.freeze()
            try:
                yield
            finally:
                del app.state.runtime

    return run


@asynccontextmanager
async def open_runtime(
    settings: Settings, client: DynamoClient | None = None
) -> AsyncIterator[Runtime]:
    """Open storage and settle the token rules; close storage when the block ends."""
    async with AsyncExitStack() as stack:
        table = await _open_table(stack, settings, client)
        if settings.port:  # 0: the port is chosen when the socket binds, unknown here
            name = "GraphiQL" if settings.graphiql_on else "GraphQL"
            print(f"{name}: {local_url(settings)}/graphql", file=sys.stderr)
        rules, dev_token = _token_rules(settings)
        yield Runtime(table, rules, settings, dev_token)


def local_url(settings: Settings) -> str:
    """Where a person on this machine reaches the server: listening on every interface
    (0.0.0.0, ::) is reached on loopback, which a browser can open."""
    host = {"": "127.0.0.1", "0.0.0.0": "127.0.0.1", "::": "::1"}.get(settings.host, settings.host)
    if ":" in host:
        host = f"[{host}]"
    return f"http://{host}:{settings.port}"


async def _open_table(
    stack: AsyncExitStack, settings: Settings, client: DynamoClient | None
) -> TableRef:
    if client is not None:
        # Storage supplied from outside is the caller's to prepare: no table is created.
        return TableRef(client, settings.dynamodb_table, memory=_memory(settings))
    client_settings = settings.client_settings()
    if settings.embedded:
        engine = LocalEngine(data_dir=settings.data_dir)
        await asyncio.to_thread(engine.start)
        stack.callback(engine.stop)
        client_settings = replace(client_settings, endpoint_url=engine.endpoint_url)
        log.info("DynamoDB Local started (pid %s), data in %s", engine.pid, settings.data_dir)
    opened = await stack.enter_async_context(open_client(client_settings))
    table = TableRef(opened, settings.dynamodb_table, memory=_memory(settings))
    if settings.creates_table:
        created = await create_table(opened, settings.dynamodb_table)
        if created and settings.seed_demo:
            await _seed_demo(table, settings)
    return table


def _memory(settings: Settings) -> PlanMemory:
    return PlanMemory(settings.plan_memory_bytes)


async def _seed_demo(table: TableRef, settings: Settings) -> None:
    comments = list(demo_comments(settings.demo_products))
    progress = progress_bar(len(comments), "seeding demo data")
    await load_new_products(table, comments, progress=progress)


def _token_rules(settings: Settings) -> tuple[TokenRules, str | None]:
    """The rules bearer tokens must meet, and the dev token printed, if any; without
    JWT_SECRET (the settings allow that only with the embedded engine) a secret is made for
    this start, and the dev token printed with it is the only way in."""
    secret = settings.jwt_secret
    generated = secret is None
    if secret is None:
        secret = secrets.token_urlsafe(32)
    token = None
    if settings.dev_token or (settings.dev_token is None and generated):
        lifetime = min(DEV_TOKEN_LIFETIME, settings.jwt_max_lifetime or DEV_TOKEN_LIFETIME)
        token = mint(
            secret,
            "dev-user",
            name="Dev User",
            roles=["moderator"],
            ttl_seconds=lifetime,
            issuer=settings.jwt_issuer,
            audience=settings.jwt_audience,
        )
        print(f"Dev token (moderator, {lifetime / 3600:g} h): {token}", file=sys.stderr)
    rules = TokenRules(
        secret,
        issuer=settings.jwt_issuer,
        audience=settings.jwt_audience,
        max_lifetime=settings.jwt_max_lifetime or None,
    )
    return rules, token
