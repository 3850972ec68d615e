"""The Starlette application: GraphQL (with GraphiQL), the health check, the HTTP guards."""

from __future__ import annotations

import asyncio
import logging
import uuid
from typing import Any

import orjson
from cross_web import HTTPException
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.middleware.cors import CORSMiddleware
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route
from starlette.types import Receive, Scope, Send
from starlette.websockets import WebSocket
from strawberry.asgi import GraphQL
from strawberry.http import GraphQLHTTPResponse, process_result
from strawberry.types import ExecutionResult

from resolvers.context import Context, make_context
from schema import SchemaOptions, build_schema, with_codes
from server.graphiql import ASSET_PATH, GraphiQLPage
from server.guards import (
    BodyLimit,
    HeaderLimit,
    RequestId,
    SecurityHeaders,
    error_body,
)
from server.runtime import lifespan, runtime_of
from server.settings import Settings
from storage.errors import StorageUnavailable
from storage.health import ping
from storage.types import DynamoClient

log = logging.getLogger("comments.server")


class GraphQLApp(GraphQL[Context, None]):
    """Strawberry's ASGI view with our per-request context."""

    def __init__(self, settings: Settings, ide: GraphiQLPage | None = None) -> None:
        super().__init__(
            build_schema(
                SchemaOptions(
                    introspection=settings.introspection_on,
                    caches=settings.graphql_caches,
                    max_cost=settings.max_query_cost,
                    max_nodes=settings.max_response_nodes,
                )
            ),
            graphql_ide="graphiql" if ide is not None else None,
            allow_queries_via_get=False,
        )
        self.use_orjson = settings.orjson
        self.suggestions = settings.suggestions_on
        self.ide = ide
        # The page carries the dev token only in development (never in production posture).
        self.ide_token = not settings.production

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
        # Our own page (server.graphiql), not Strawberry's, which loads GraphiQL from a CDN.
        if self.ide is None:  # Strawberry asks only when the IDE is on
            raise HTTPException(404, "Not Found")
        token = runtime_of(request.app).dev_token if self.ide_token else None
        return self.ide.render(request.url.path, token)

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
        runtime = runtime_of(request.app)
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


async def healthz(request: Request) -> Response:
    """200 when the table answers within the storage timeout, else 503."""
    runtime = runtime_of(request.app)
    try:
        async with asyncio.timeout(runtime.settings.storage_timeout):
            await ping(runtime.table)
    except (StorageUnavailable, TimeoutError) as exc:
        # The engine's own error, when there is one, says more than ours.
        cause = exc.__cause__ if isinstance(exc, StorageUnavailable) else exc
        log.warning("health check: storage unavailable (%s)", type(cause).__name__)
        return JSONResponse({"status": "unavailable", "storage": "down"}, status_code=503)
    return JSONResponse({"status": "ok", "storage": "up"})


def create_app(
    settings: Settings | None = None, *, client: DynamoClient | None = None
) -> Starlette:
    """The application: routes and middleware; the lifespan (server.runtime) opens storage.
    ``client`` lets tests supply storage instead."""
    settings = settings or Settings()
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
    routes = [Route("/healthz", healthz)]
    ide = GraphiQLPage.load() if settings.graphiql_on else None
    if ide is not None:
        routes.append(Route(ASSET_PATH + "/{name}", ide.asset))
    routes.append(Route("/graphql", GraphQLApp(settings, ide)))
    app = Starlette(
        routes=routes,
        middleware=middleware,
        lifespan=lifespan(settings, client),
    )
    # Starlette would answer /graphql/ with a redirect to a URL built from the Host header,
    # which the client controls: unknown paths are a 404, nothing else.
    app.router.redirect_slashes = False
    return app
