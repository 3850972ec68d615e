"""What the application holds while it runs, opened and closed by its lifespan.

The lifespan starts DynamoDB Local when no endpoint is configured, opens the one aioboto3
client of the application's lifetime, creates (and seeds) the table where the settings ask
for it, settles the token rules, and leaves a ``Runtime`` on ``app.state`` for the routes.
Leaving it closes everything in reverse order.

With several worker processes (``server.workers``) the parent does the start-up's shared
part once, ``prepare``: the engine, the table and its demo data, the secret and the dev
token; each worker's lifespan then only opens its own client and reads the rest from the
``Prepared`` it was handed.
"""

from __future__ import annotations

import asyncio
import gc
import logging
import os
import secrets
import socket
import sys
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import (
    AbstractAsyncContextManager,
    AsyncExitStack,
    ExitStack,
    asynccontextmanager,
    contextmanager,
    suppress,
)
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from starlette.applications import Starlette

from resolvers.auth import TokenRules, mint
from server.dev.demo import demo_comments
from server.dev.demo_facets import facet_reviews
from server.dev.local_broker import LocalBroker
from server.dev.local_engine import LocalEngine
from server.dev.progress import progress_bar
from server.dev.seeding import seed_demo
from server.fanout import start_fanout
from server.http.answers import AnswerCache
from server.jwks import KeyStore
from server.listeners import Listeners
from server.observability import metrics as process_metrics
from server.observability.metrics import Metrics, listener
from server.purging.service import Purging, start_purging
from server.secret_file import dev_secret_path, secret_from_file
from server.settings import Settings
from server.tasks import stream_when_on
from server.webhooks.service import start_webhooks
from storage.base.errors import StorageError
from storage.base.types import DynamoClient
from storage.engine.client import open_client, open_streams_client
from storage.engine.layout_check import (
    FencedWrites,
    LayoutGate,
    ProcessId,
    check_layout,
    read_table_layout,
)
from storage.engine.seam import EngineSeam
from storage.engine.table import TableRef
from storage.live.feed import Feed
from storage.live.stream import Change, StreamFollower
from storage.model.layout_version import Fit, fit
from storage.ops.create import create_table, missing_indexes
from storage.ops.migrate import migrate
from storage.reads.planner import Tuning
from storage.reads.snapshots import PlanMemory
from storage.writes import WriteLimits
from storage.writes.ballots import VoteLanes

if TYPE_CHECKING:
    from server.observability.tracing import Tracing

log = logging.getLogger("comments.server")

# Seconds between looks for the stream of a table that has none.

# Seconds a printed dev token lives (at most; JWT_MAX_LIFETIME may be shorter).
DEV_TOKEN_LIFETIME = 24 * 3600


@dataclass(frozen=True, slots=True)
class DevTokens:
    """The tokens a development start prints: a shopper's, which GraphiQL opens with (what
    shoppers see), and a moderator's, a tab away."""

    shopper: str
    moderator: str


@dataclass(frozen=True, slots=True)
class Runtime:
    """What the routes need from the lifespan: the table (with its one client), the token
    rules and the settings, and the dev tokens printed at start-up, if they were."""

    table: TableRef
    tokens: TokenRules
    settings: Settings
    dev_tokens: DevTokens | None = None
    # The process's feed of the table's stream; None when live updates are off.
    feed: Feed | None = None
    # The login provider's keys (JWT_JWKS_URL); None when tokens are checked with a secret.
    keys: KeyStore | None = None

    async def ready_for(self, authorization: str | None) -> None:
        """Before a token is checked (synchronously): when it names a key the set lacks,
        one rate-limited refresh of the set."""
        if self.keys is not None:
            await self.keys.ensure(authorization)

    @property
    def tuning(self) -> Tuning:
        return Tuning(z=self.settings.read_headroom)

    @property
    def write_limits(self) -> WriteLimits:
        return self.settings.write_limits


@dataclass(frozen=True, slots=True)
class Prepared:
    """What the parent of several workers settled once for all of them: the settings each
    worker runs with (the endpoint of the one engine, the one secret, no table to create)
    and the dev tokens the parent printed, which every worker's GraphiQL page carries."""

    settings: Settings
    dev_tokens: DevTokens | None = None


def runtime_of(app: Starlette) -> Runtime:
    """The runtime the lifespan left on ``app.state``; RuntimeError outside the lifespan."""
    runtime = getattr(app.state, "runtime", None)
    if not isinstance(runtime, Runtime):
        raise RuntimeError("the application has not started")
    return runtime


def lifespan(
    settings: Settings,
    client: DynamoClient | None = None,
    prepared: Prepared | None = None,
    *,
    metrics: Metrics | None = None,
    tracing: Tracing | None = None,
    answers: AnswerCache | None = None,
) -> Callable[[Starlette], AbstractAsyncContextManager[None]]:
    """Starlette's ``lifespan`` for these settings. ``client`` lets tests supply storage;
    otherwise the lifespan opens it (and starts DynamoDB Local first when no endpoint is
    configured). ``prepared``: a worker's, whose parent did the shared start-up. ``metrics``
    are made the process's (``server.observability.metrics``), with their own listener where
    the settings ask for one and no parent serves them; ``tracing`` is closed last."""

    @asynccontextmanager
    async def run(app: Starlette) -> AsyncIterator[None]:
        with ExitStack() as observing:
            if tracing is not None:
                observing.callback(tracing.close)
            opened = (
                open_runtime(settings, client, tracing, answers)
                if prepared is None
                else open_worker(prepared, tracing, answers)
            )
            async with opened as runtime:
                app.state.runtime = runtime
                if metrics is not None:
                    _watch_memory(metrics, runtime.table.memory(PlanMemory))
                    observing.enter_context(metrics.active())
                    if runtime.feed is not None and runtime.settings.fanout_url is not None:
                        # Its changes come from the broker (server.fanout), not its own reader.
                        metrics.fanout_processes.set(1)
                    if settings.metrics_mode == "port" and prepared is None:
                        host, port = settings.metrics_host, settings.metrics_port
                        observing.enter_context(listener(metrics.scraped, host, port))
                        log.info("metrics on http://%s:%s/metrics", host, port)
                if settings.gc_freeze:
                    # Everything made so far lives as long as the process: stop scanning it.
                    gc.collect()
                    gc.freeze()
                try:
                    yield
                finally:
                    del app.state.runtime
                    # Votes' follow-ups (their comments' helpful order) finish before the
                    # client closes; one that cannot is left to the next vote or repair.
                    with suppress(TimeoutError):
                        async with asyncio.timeout(settings.storage_timeout):
                            await runtime.table.memory(VoteLanes).drain()

    return run


def _watch_memory(metrics: Metrics, memory: PlanMemory) -> None:
    metrics.watch_lookups("plan_counts", lambda: memory.lookups()["plan_counts"])
    metrics.watch_lookups("plan_heads", lambda: memory.lookups()["plan_heads"])


@asynccontextmanager
async def open_runtime(
    settings: Settings,
    client: DynamoClient | None = None,
    tracing: Tracing | None = None,
    answers: AnswerCache | None = None,
) -> AsyncIterator[Runtime]:
    """Open storage and settle the token rules; close storage when the block ends."""
    async with AsyncExitStack() as stack:
        table, feed = await _open_table(stack, settings, client, tracing, answers=answers)
        if settings.port:  # 0: the port is chosen when the socket binds, unknown here
            name = "GraphiQL" if settings.graphiql_on else "GraphQL"
            announce(settings, f"{name}: {local_url(settings)}/graphql")
        keys = await _open_keys(stack, settings)
        rules, dev_tokens = _token_rules(settings, keys)
        yield Runtime(table, rules, settings, dev_tokens, feed, keys)


@asynccontextmanager
async def open_worker(
    prepared: Prepared, tracing: Tracing | None = None, answers: AnswerCache | None = None
) -> AsyncIterator[Runtime]:
    """A worker's runtime: its own client to the table its parent prepared, the shared
    secret; nothing created, nothing printed."""
    settings = prepared.settings
    signed = settings.jwt_secret is not None or settings.jwt_jwks_url is not None
    if not signed or settings.embedded:
        raise RuntimeError("a worker needs the endpoint and the secret its parent settled")
    async with AsyncExitStack() as stack:
        table, feed = await _open_table(stack, settings, None, tracing, answers=answers)
        keys = await _open_keys(stack, settings)
        rules = _rules(settings, settings.jwt_secret, keys)
        yield Runtime(table, rules, settings, prepared.dev_tokens, feed, keys)


async def _open_keys(stack: AsyncExitStack, settings: Settings) -> KeyStore | None:
    """The login provider's keys, fetched once now and kept fresh while the block runs
    (a failed first fetch is logged and retried: tokens are refused until one succeeds)."""
    if settings.jwt_jwks_url is None:
        return None
    store = KeyStore(
        settings.jwt_jwks_url,
        algorithms=tuple(settings.jwt_algorithms),
        limits=settings.fetch_limits,
    )
    return await stack.enter_async_context(store)


@contextmanager
def prepare(settings: Settings) -> Iterator[Prepared]:
    """The shared start-up of several workers, done once in their parent: DynamoDB Local
    when no endpoint is configured (stopped when the block ends), the table and its demo
    data where the settings ask for them, the secret (made here when none is configured,
    so that every worker accepts the same tokens and derives the same author ids) and the
    dev token, printed once."""
    with ExitStack() as stack:
        endpoint = settings.dynamodb_endpoint_url
        if settings.embedded:
            engine = stack.enter_context(LocalEngine(data_dir=settings.data_dir))
            endpoint = engine.endpoint_url
            log.info("DynamoDB Local started (pid %s), data in %s", engine.pid, settings.data_dir)
        fanout_url = settings.fanout_url
        if fanout_url is None and settings.live_updates and not settings.production:
            # Several processes read each shard once and fan its changes out (docs/scale.md):
            # in development through a redis-server of their own, on loopback.
            broker = stack.enter_context(LocalBroker())
            fanout_url = broker.url
            log.info("redis-server started (pid %s) for the fan-out, on %s", broker.pid, fanout_url)
        # The endpoint fixed, whether this start creates the table still follows the
        # settings as given (unset: only with the embedded engine).
        shared = settings.model_copy(
            update={
                "dynamodb_endpoint_url": endpoint,
                "create_table": settings.creates_table,
                "fanout_url": fanout_url,
            }
        )
        if shared.creates_table:
            asyncio.run(_prepare_table(shared))
        if settings.port:
            name = "GraphiQL" if settings.graphiql_on else "GraphQL"
            announce(settings, f"{name}: {local_url(settings)}/graphql")
        # With JWT_JWKS_URL there is no secret to share: each worker fetches the keys.
        secret, dev_tokens = None, None
        if settings.jwt_jwks_url is None:
            rules, dev_tokens = _token_rules(settings, None)
            secret = rules.secret
        worker = shared.model_copy(
            update={"jwt_secret": secret, "create_table": False, "dev_token": False}
        )
        yield Prepared(worker, dev_tokens)


async def _prepare_table(settings: Settings) -> None:
    async with AsyncExitStack() as stack:
        await _open_table(stack, settings, None, follow=False)


def _json(settings: Settings) -> bool:
    return settings.log_format == "json"


def announce(settings: Settings, line: str) -> None:
    """A line for the person who started the server (where it listens, the dev token): on
    stderr as it is, or as a log line among the JSON ones."""
    if _json(settings):
        log.info("%s", line)
    else:
        print(line, file=sys.stderr)


def local_url(settings: Settings) -> str:
    """Where a person on this machine reaches the server: listening on every interface
    (0.0.0.0, ::) is reached on loopback, which a browser can open."""
    host = {"": "127.0.0.1", "0.0.0.0": "127.0.0.1", "::": "::1"}.get(settings.host, settings.host)
    if ":" in host:
        host = f"[{host}]"
    return f"http://{host}:{settings.port}"


async def _open_table(
    stack: AsyncExitStack,
    settings: Settings,
    client: DynamoClient | None,
    tracing: Tracing | None = None,
    *,
    follow: bool = True,
    answers: AnswerCache | None = None,
) -> tuple[TableRef, Feed | None]:
    """The table (created where the settings ask), and the feed of its stream when live
    updates are on and ``follow`` (the parent of workers only prepares the table)."""
    if client is not None:
        # Storage supplied from outside is the caller's to prepare: no table is created,
        # no stream followed.
        if tracing is not None:
            client = tracing.client(client)
        return _table(client, settings), None
    client_settings = settings.client_settings()
    if settings.embedded:
        engine = LocalEngine(data_dir=settings.data_dir)
        await asyncio.to_thread(engine.start)
        stack.callback(engine.stop)
        client_settings = replace(client_settings, endpoint_url=engine.endpoint_url)
        log.info("DynamoDB Local started (pid %s), data in %s", engine.pid, settings.data_dir)
    opened = await stack.enter_async_context(open_client(client_settings))
    served = opened if tracing is None else tracing.client(opened)
    # Every write asks the layout gate first (storage.engine.layout_check); the process that
    # serves keeps it up to date, and the parent of workers, which serves nothing, has none.
    gate = LayoutGate(enforced=follow, write_window=client_settings.longest_call_seconds)
    table = _table(FencedWrites(served, gate), settings).keep(gate)
    created = False
    if settings.creates_table:
        created = await create_table(
            opened, settings.dynamodb_table, stream=settings.live_updates, missing_ok=True
        )
        if not created:  # one it just made is whole
            await _bring_to_layout(TableRef(opened, settings.dynamodb_table))
    if follow:
        await _start_checking(stack, TableRef(opened, settings.dynamodb_table), gate)
    if created and settings.seed_demo:  # through the gate, which the first check opened
        await _seed_demo(table, settings)
    feed = None
    streams: Any = None
    if (settings.live_updates or settings.webhooks) and follow:
        opened_streams = await stack.enter_async_context(open_streams_client(client_settings))
        streams = CountedStreams(opened_streams)
    purging = None
    if settings.live_updates and follow:
        # Before the feed's start, so that its stop (last in, first out) comes first and
        # the purges of its last batches are flushed after it.
        purging = await start_purging(stack, settings)
        feed = Feed(
            table,
            queue_size=settings.subscription_queue,
            max_subscribers=settings.subscriptions_per_process,
        )
        if settings.fanout_url is not None:
            await start_fanout(stack, feed, streams, settings, process_id().key, answers, purging)
        else:
            task = asyncio.create_task(
                _follow(feed, streams, settings.stream_poll_seconds, answers, purging)
            )
            stack.push_async_callback(_stop_following, feed, task)
    if settings.webhooks and follow:
        await start_webhooks(stack, table, streams, settings, process_id().key)
    return table, feed


async def _follow(
    feed: Feed,
    streams: Any,
    poll_seconds: float,
    answers: AnswerCache | None = None,
    purging: Purging | None = None,
) -> None:
    """Follow the table's stream for as long as the process runs; while the table has no
    stream, look again every minute (migrate-table may turn it on). The process's map of
    answers (server.http.answers) is told of each batch first, and of every loss; so are
    the caches in front (``purging``): without a broker, each process purges what it reads,
    and a follower's start, which reads from the stream's end, purges everything."""
    arn = await stream_when_on(
        feed.table,
        "live updates",
        f"table {feed.table.name!r} has no stream of new and old images; subscriptions are "
        "refused until it has one (comments migrate-table turns it on)",
    )

    told = Listeners(feed, answers, purging)

    def batches() -> AsyncIterator[list[Change]]:
        return told.told(
            StreamFollower(streams, arn, poll_seconds=poll_seconds, on_gap=told.lost).batches()
        )

    await feed.follow(batches, on_batch=told.delivered, on_failure=told.failed)


async def _bring_to_layout(table: TableRef) -> None:
    """A table this process makes when missing (development), found made before, is
    brought to this code's layout at start, the indexes a newer release added included (a
    DATA_DIR kept across releases): no other process serves it, so there is no one to wait
    for."""
    behind = fit(await read_table_layout(table)) is not Fit.READY
    if behind or await missing_indexes(table):
        done = await migrate(table, fence=True, legacy_processes_gone=True)
        for line in done.describe():
            log.info("table layout: %s", line)


def process_id() -> ProcessId:
    """This process in heartbeats: unique per start, named by host and pid."""
    name = f"{socket.gethostname()}:{os.getpid()}"
    return ProcessId(f"{name}:{secrets.token_hex(4)}", name)


async def _start_checking(stack: AsyncExitStack, table: TableRef, gate: LayoutGate) -> None:
    """Check the table's layout once before serving, then every lease / 4 seconds; the
    heartbeats go through ``table``, which no gate stands before."""
    me = process_id()

    async def check() -> None:
        try:
            await check_layout(table, gate, me)
        except StorageError as exc:
            log.warning("table layout: the check failed (%s)", type(exc).__name__)
        except Exception:  # a malformed item, say: the loop must outlive it
            log.exception("table layout: the check failed")

    async def keep_checking() -> None:
        while True:
            # Sooner while the lease has run out (storage away at start, say): the process
            # is ready again within a second of storage answering.
            interval = gate.lease_seconds / 4
            await asyncio.sleep(interval if gate.lease_valid() else min(1.0, interval))
            await check()

    await check()
    task = asyncio.create_task(keep_checking())

    async def stop() -> None:
        task.cancel()
        with suppress(asyncio.CancelledError):
            await task

    stack.push_async_callback(stop)


async def _stop_following(feed: Feed, task: asyncio.Task[None]) -> None:
    task.cancel()
    with suppress(asyncio.CancelledError):
        await task
    # uvicorn has closed the sockets by now (1012, service restart), so no client reads
    # this; it ends what is left of the subscriptions' generators.
    feed.interrupt("EVENTS_LOST", "The server is shutting down; subscribe again.")


class CountedStreams:
    """The streams client, each GetRecords counted (``comments_stream_get_records_total``):
    what a shard's readers cost, whichever reader of the process calls."""

    def __init__(self, client: Any) -> None:
        self._client = client

    async def get_records(self, **request: Any) -> Any:
        process_metrics.stream_reads()
        return await self._client.get_records(**request)

    async def describe_stream(self, **request: Any) -> Any:
        return await self._client.describe_stream(**request)

    async def get_shard_iterator(self, **request: Any) -> Any:
        return await self._client.get_shard_iterator(**request)


def _memory(settings: Settings) -> PlanMemory:
    return PlanMemory(settings.plan_memory_bytes)


def _table(client: DynamoClient, settings: Settings) -> TableRef:
    """The application's table: its client behind a seam whose retries and throttling the
    process's metrics count."""
    watched = EngineSeam(client, process_metrics.StorageWatcher())
    return TableRef(watched, settings.dynamodb_table).keep(_memory(settings))


async def _seed_demo(table: TableRef, settings: Settings) -> None:
    comments = list(demo_comments(settings.demo_products))
    reviews = facet_reviews()
    total = len(comments) + len(reviews)
    # A progress bar redraws one line: not a log line, so not among JSON ones.
    progress = progress_bar(total, "seeding demo data") if not _json(settings) else None
    await seed_demo(table, comments, reviews, progress=progress)


def _token_rules(settings: Settings, keys: KeyStore | None) -> tuple[TokenRules, DevTokens | None]:
    """The rules bearer tokens must meet, and the dev tokens printed, if any. With
    JWT_JWKS_URL tokens come from the login provider only: no secret, no dev tokens.
    Without JWT_SECRET (the settings allow that only with the embedded engine) the secret
    is the development one, made in DATA_DIR on the first start and kept there (``comments
    token`` finds it), and the dev tokens are printed with it."""
    if settings.jwt_jwks_url is not None:
        if keys is None:
            raise RuntimeError("JWT_JWKS_URL without the key store that fetches it")
        return _rules(settings, None, keys), None
    secret = settings.jwt_secret
    generated = secret is None
    if secret is None:
        secret = secret_from_file(dev_secret_path(settings.data_dir))
    if not (settings.dev_token or (settings.dev_token is None and generated)):
        return _rules(settings, secret, None), None
    lifetime = min(DEV_TOKEN_LIFETIME, settings.jwt_max_lifetime or DEV_TOKEN_LIFETIME)

    def dev(subject: str, name: str, roles: list[str]) -> str:
        return mint(
            secret,
            subject,
            name=name,
            roles=roles,
            ttl_seconds=lifetime,
            issuer=settings.jwt_issuer,
            audience=settings.jwt_audience,
        )

    tokens = DevTokens(
        shopper=dev("dev-shopper", "Dev Shopper", []),
        moderator=dev("dev-user", "Dev User", ["moderator"]),
    )
    hours = f"{lifetime / 3600:g} h"
    announce(settings, f"Dev token (shopper, {hours}): {tokens.shopper}")
    announce(settings, f"Dev token (moderator, {hours}): {tokens.moderator}")
    return _rules(settings, secret, None), tokens


def _rules(settings: Settings, secret: str | None, keys: KeyStore | None) -> TokenRules:
    # During a rotation tokens signed with the previous secret are still accepted; the dev
    # tokens above are signed with the current one only.
    return TokenRules(
        secret,
        issuer=settings.jwt_issuer,
        audience=settings.jwt_audience,
        max_lifetime=settings.jwt_max_lifetime or None,
        keys=keys,
        algorithms=tuple(settings.jwt_algorithms),
        claims=settings.claim_map,
        previous_secret=settings.jwt_previous_secret,
    )
