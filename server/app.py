"""The Starlette application: GraphQL (with GraphiQL), health check, lifespan-owned storage."""

from __future__ import annotations

import asyncio
import gc
import logging
import secrets
import sys
import uuid
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass
from typing import Any

import orjson
from cross_web import HTTPException
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.middleware.cors import CORSMiddleware
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, Response
from starlette.routing import Route
from starlette.types import Receive, Scope, Send
from starlette.websockets import WebSocket
from strawberry.asgi import GraphQL
from strawberry.http import GraphQLHTTPResponse, process_result
from strawberry.types import ExecutionResult

from resolvers.auth import TokenRules, mint
from resolvers.context import Context, make_context
from schema import SchemaOptions, build_schema, with_codes
from server.demo import demo_comments
from server.guards import (
    BodyLimit,
    HeaderLimit,
    RequestId,
    SecurityHeaders,
    content_security_policy,
    error_body,
)
from server.progress import progress_bar
from server.settings import Settings
from storage.bulk import load_new_products
from storage.client import ClientSettings, open_client
from storage.local_engine import LocalEngine
from storage.planner import Tuning
from storage.seam import ENGINE_ERRORS
from storage.table import TableRef, create_table
from storage.types import DynamoClient
from storage.writes import WriteLimits

log = logging.getLogger("comments.server")


@dataclass(slots=True)
class Runtime:
    """What the lifespan opened: one client (and engine) for the application's lifetime."""

    table: TableRef
    tokens: TokenRules
    settings: Settings

    @property
    def tuning(self) -> Tuning:
        return Tuning(z=self.settings.read_headroom)

    @property
    def write_limits(self) -> WriteLimits:
        return self.settings.write_limits


class GraphQLApp(GraphQL[Context, None]):
    """Strawberry's ASGI view with our per-request context."""

    def __init__(self, runtime: RuntimeHolder, settings: Settings) -> None:
        super().__init__(
            build_schema(
                SchemaOptions(
                    introspection=settings.introspection_on,
                    caches=settings.graphql_caches,
                    max_cost=settings.max_query_cost,
                    max_nodes=settings.max_response_nodes,
                )
            ),
            graphql_ide="graphiql" if settings.graphiql_on else None,
            allow_queries_via_get=False,
        )
        self.runtime = runtime
        self.use_orjson = settings.orjson
        self.suggestions = settings.suggestions_on
        self.ide_html = self.graphql_ide_html
        self.ide_csp = content_security_policy(self.ide_html)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        # Strawberry answers requests it cannot read (bad JSON, wrong content type, a batch,
        # a mutation over GET) in plain text; clients get the same GraphQL shape as always.
        if scope["type"] != "http":
            await super().__call__(scope, receive, send)
            return
        try:
            response = await self.run(Request(scope, receive))
        except HTTPException as exc:
            response = Response(
                error_body(exc.reason), status_code=exc.status_code, media_type="application/json"
            )
        await response(scope, receive, send)

    async def render_graphql_ide(self, request: Request) -> Response:
        return HTMLResponse(self.ide_html, headers={"content-security-policy": self.ide_csp})

    def parse_json(self, data: str | bytes) -> Any:
        # orjson refuses what json.loads lets through or chokes on: NaN, invalid UTF-8,
        # nesting deep enough to exhaust the interpreter's recursion limit.
        try:
            parsed = orjson.loads(data)
        except orjson.JSONDecodeError as exc:
            raise HTTPException(400, "The request body is not valid JSON.") from exc
        if not isinstance(parsed, dict | list):
            raise HTTPException(400, "The request body must be a JSON object with a query.")
        return parsed

    def encode_json(self, data: object) -> str | bytes:
        if self.use_orjson:
            return orjson.dumps(data)
        return super().encode_json(data)

    async def get_context(
        self, request: Request | WebSocket, response: Response | WebSocket
    ) -> Context:
        runtime = self.runtime.get()
        # Named by the RequestId middleware, which also sends it back in X-Request-Id.
        request_id = getattr(request.state, "request_id", None)
        if request_id is None:
            request_id = request.state.request_id = uuid.uuid4().hex
        return make_context(
            runtime.table,
            request_id=request_id,
            tokens=runtime.tokens,
            authorization=request.headers.get("authorization"),
            storage_timeout=runtime.settings.storage_timeout,
            tuning=runtime.tuning,
            write_limits=runtime.write_limits,
            author_id_secret=runtime.settings.author_id_key,
        )

    async def process_result(
        self, request: Request, result: ExecutionResult
    ) -> GraphQLHTTPResponse:
        if result.errors:
            request_id = getattr(request.state, "request_id", "unknown")
            result.errors = with_codes(result.errors, request_id, suggestions=self.suggestions)
        return process_result(result)


class RuntimeHolder:
    """Filled by the lifespan; routes read it per request."""

    def __init__(self) -> None:
        self._runtime: Runtime | None = None

    def get(self) -> Runtime:
        if self._runtime is None:
            raise RuntimeError("the application has not started")
        return self._runtime

    def set(self, runtime: Runtime | None) -> None:
        self._runtime = runtime


async def _seed_demo(table: TableRef, settings: Settings) -> None:
    comments = list(demo_comments(settings.demo_products))
    progress = progress_bar(len(comments), "seeding demo data")
    await load_new_products(table, comments, progress=progress)


def create_app(
    settings: Settings | None = None, *, client: DynamoClient | None = None
) -> Starlette:
    """The application. ``client`` lets tests supply storage; otherwise the lifespan opens it
    (and starts DynamoDB Local first when no endpoint is configured)."""
    settings = settings or Settings()
    holder = RuntimeHolder()

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        async with AsyncExitStack() as stack:
            secret = settings.jwt_secret
            endpoint = settings.dynamodb_endpoint_url
            created = False
            if client is not None:
                opened = client
            else:
                if settings.embedded:
                    engine = LocalEngine(data_dir=settings.data_dir)
                    await asyncio.to_thread(engine.start)
                    stack.callback(engine.stop)
                    endpoint = engine.endpoint_url
                    log.info(
                        "DynamoDB Local started (pid %s), data in %s", engine.pid, settings.data_dir
                    )
                elif secret is None:
                    raise RuntimeError("JWT_SECRET must be set when DYNAMODB_ENDPOINT_URL is")
                client_settings = ClientSettings(
                    endpoint_url=endpoint,
                    region=settings.aws_region,
                    fast_attribute_parsing=settings.fast_attribute_parsing,
                )
                opened = await stack.enter_async_context(open_client(client_settings))
            table = TableRef(opened, settings.dynamodb_table)
            if settings.creates_table and client is None:
                created = await create_table(opened, settings.dynamodb_table)
                if created and settings.seed_demo:
                    await _seed_demo(table, settings)
            generated = secret is None
            if secret is None:
                secret = secrets.token_urlsafe(32)
            tokens = TokenRules(
                secret,
                issuer=settings.jwt_issuer,
                audience=settings.jwt_audience,
                max_lifetime=settings.jwt_max_lifetime or None,
            )
            if settings.dev_token or (settings.dev_token is None and generated):
                lifetime = min(24 * 3600, settings.jwt_max_lifetime or 24 * 3600)
                token = mint(
                    secret,
                    "dev-user",
                    name="Dev User",
                    roles=["moderator"],
                    ttl_seconds=lifetime,
                    issuer=settings.jwt_issuer,
                    audience=settings.jwt_audience,
                )
                print(f"GraphiQL: http://{settings.host}:{settings.port}/graphql", file=sys.stderr)
                print(f"Dev token (moderator, {lifetime / 3600:g} h): {token}", file=sys.stderr)
            holder.set(Runtime(table, tokens, settings))
            if settings.gc_freeze:
                # Everything made so far lives as long as the process: stop scanning it.
                gc.collect()
                gc.freeze()
            try:
                yield
            finally:
                holder.set(None)

    async def healthz(request: Request) -> Response:
        runtime = holder.get()
        try:
            async with asyncio.timeout(runtime.settings.storage_timeout):
                await runtime.table.client.describe_table(TableName=runtime.table.name)
        except (*ENGINE_ERRORS, TimeoutError) as exc:
            log.warning("health check: storage unavailable (%s)", type(exc).__name__)
            return JSONResponse({"status": "unavailable", "storage": "down"}, status_code=503)
        return JSONResponse({"status": "ok", "storage": "up"})

    # Outermost first. Every refusal is made inside RequestId and CORS, so a browser can
    # read it and a client can quote its id.
    middleware = [Middleware(SecurityHeaders), Middleware(RequestId)]
    if settings.cors_origins:
        middleware.append(
            Middleware(
                CORSMiddleware,
                allow_origins=settings.cors_origins,
                allow_methods=["GET", "POST", "OPTIONS"],
                allow_headers=["authorization", "content-type"],
                expose_headers=["x-request-id"],
            )
        )
    middleware += [
        Middleware(
            HeaderLimit, max_headers=settings.max_headers, max_bytes=settings.max_header_bytes
        ),
        Middleware(BodyLimit, max_bytes=settings.max_body_bytes, timeout=settings.body_timeout),
    ]
    graphql = GraphQLApp(holder, settings)
    app = Starlette(
        routes=[Route("/healthz", healthz), Route("/graphql", graphql)],
        middleware=middleware,
        lifespan=lifespan,
    )
    # Starlette would answer /graphql/ with a redirect to a URL built from the Host header,
    # which the client controls: unknown paths are a 404, nothing else.
    app.router.redirect_slashes = False
    return app
