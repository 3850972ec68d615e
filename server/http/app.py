"""The Starlette application: GraphQL (with GraphiQL), the health check, the HTTP guards."""

from __future__ import annotations

import asyncio
import logging
import uuid
from datetime import timedelta
from typing import TYPE_CHECKING, Any

import orjson
from cross_web import AsyncHTTPRequestAdapter, HTTPException
from graphql import GraphQLError, OperationDefinitionNode, parse
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.middleware.gzip import GZipMiddleware
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route, WebSocketRoute
from starlette.types import Receive, Scope, Send
from starlette.websockets import WebSocket
from strawberry.asgi import GraphQL
from strawberry.exceptions import ConnectionRejectionError
from strawberry.http import GraphQLHTTPResponse, GraphQLRequestData, process_result
from strawberry.http.base import BaseRequestProtocol
from strawberry.http.parse_content_type import parse_content_type
from strawberry.schema.exceptions import CannotGetOperationTypeError, InvalidOperationTypeError
from strawberry.subscriptions import GRAPHQL_TRANSPORT_WS_PROTOCOL
from strawberry.types import ExecutionResult
from strawberry.types.execution import PreExecutionError
from strawberry.types.graphql import OperationType
from strawberry.types.unset import UNSET, UnsetType

from resolvers.context import Context, make_context
from schema import SchemaOptions, build_schema, with_codes
from schema.caches import DocumentCaches
from server.http.answers import Answer, AnswerCache, AnswerKey
from server.http.cache_tags import MAX_TAG_BYTES, MAX_TAGS, bounded, tag_headers
from server.http.caching import NO_STORE, Conditional
from server.http.event_groups import EventGroups
from server.http.forwarded import client_address
from server.http.graphiql import ASSET_PATH, GraphiQLPage
from server.http.guards import (
    BodyLimit,
    Cors,
    HeaderLimit,
    RequestId,
    SecurityHeaders,
)
from server.http.persisted import PersistedQueries, load_manifest
from server.http.sockets import (
    CURRENT,
    PROCESS_FULL,
    TOKEN_FULL,
    TOO_MANY_FOR_TOKEN,
    TRY_AGAIN_LATER,
    SocketPlaces,
)
from server.http.subscriptions import (
    SubscriptionHandler,
    SubscriptionLimits,
    TextFrames,
    authorize,
)
from server.http.transport import (
    GRAPHQL_RESPONSE_JSON,
    JSON,
    MediaType,
    Refused,
    RequestErrors,
    content_type,
    negotiate,
    refusal,
    result_status,
)
from server.observability import metrics as process_metrics
from server.observability.metrics import Metrics, Outcome
from server.observability.middleware import Exchange, Observed, OperationName, exchange_of
from server.runtime import Prepared, lifespan, runtime_of
from server.settings import Settings
from server.shutdown import Drain
from server.webhooks.service import endpoint_rules
from storage.base.errors import StorageUnavailable
from storage.base.types import DynamoClient
from storage.engine.health import ping
from storage.engine.layout_check import LayoutGate

if TYPE_CHECKING:
    from server.observability.tracing import Tracing

log = logging.getLogger("comments.server")


def _media_type_in_lower_case(header: tuple[bytes, bytes]) -> tuple[bytes, bytes]:
    """A Content-Type header with its media type in lower case: media types are
    case-insensitive (RFC 9110, 8.3.1), Strawberry compares them as written."""
    name, value = header
    if name != b"content-type":
        return header
    media_type, separator, parameters = value.partition(b";")
    return name, media_type.strip().lower() + separator + parameters


# Host names a browser on this machine uses for a server on loopback.
LOOPBACK_HOSTS = frozenset({"127.0.0.1", "localhost", "::1", "[::1]"})

# Where GraphQL is served.
GRAPHQL_PATH = "/graphql"

# zlib's default: on a page of 20 comments (10 KB) level 9 saves 1 % more, level 1 is 6 %
# larger; all take about 0.1 ms.
GZIP_LEVEL = 6


class GraphQLApp(GraphQL[Context, None]):
    """Strawberry's ASGI view with our per-request context, speaking GraphQL over HTTP
    (server.http.transport): queries over GET and POST, mutations over POST, the response's
    media type and status from the Accept header and the result; subscriptions over
    WebSocket (server.http.subscriptions)."""

    graphql_transport_ws_handler_class = SubscriptionHandler
    websocket_adapter_class = TextFrames

    def __init__(
        self, settings: Settings, ide: GraphiQLPage | None = None, *, observed: bool = False
    ) -> None:
        self.caches = DocumentCaches() if settings.graphql_caches else DocumentCaches.off()
        schema = build_schema(
            SchemaOptions(
                introspection=settings.introspection_on,
                caches=settings.graphql_caches,
                max_cost=settings.max_query_cost,
                max_nodes=settings.max_response_nodes,
            ),
            caches=self.caches,
        )
        # Observed requests (server.observability.middleware) carry the operation's name, which the
        # document gives when the request does not.
        named = (OperationName,) if observed else ()
        # Last, so that it sees what the extensions before it decided.
        schema.extensions = (*schema.extensions, *named, RequestErrors)
        super().__init__(
            schema,
            graphql_ide="graphiql" if ide is not None else None,
            allow_queries_via_get=True,
            # graphql-transport-ws only: its limits are ours (server.http.subscriptions).
            subscription_protocols=(GRAPHQL_TRANSPORT_WS_PROTOCOL,),
            connection_init_wait_timeout=timedelta(seconds=settings.connection_init_seconds),
            max_subscriptions_per_connection=None,
            # A page of another origin may open a socket only where CORS lets it read.
            allowed_origins=settings.cors_origins,
        )
        # WebSocket connections open now, and how many may be, in all and per client
        # (server.http.sockets), whose address is server.http.forwarded's.
        self.places = SocketPlaces(
            settings.max_websockets,
            settings.max_websockets_per_address,
            settings.max_websockets_per_token,
        )
        self.trusted_proxies = settings.trusted_proxies
        self.webhook_rules = endpoint_rules(settings)
        self.subscription_limits = SubscriptionLimits(
            per_connection=settings.subscriptions_per_connection,
            idle_seconds=settings.subscription_idle_seconds,
            max_cost=settings.max_query_cost,
            max_nodes=settings.max_response_nodes,
            suggestions=settings.suggestions_on,
            event_cost=settings.subscription_event_cost,
            connection_cost=settings.subscription_connection_cost,
        )
        # The process's shared resolutions of subscription events, and their budgets.
        self.event_groups = EventGroups(
            product_cost=settings.subscription_product_cost,
            process_cost=settings.subscription_process_cost,
            client_cost=settings.subscription_client_cost,
            max_members=settings.subscriptions_per_process,
            queue_size=settings.subscription_queue,
            max_bytes=min(settings.max_response_bytes, settings.subscription_event_bytes),
        )
        # Events are counted in the bytes the view sends them as (set once the view is
        # made: encode_json reads use_orjson).
        self.event_groups.encode = self.encode_json
        self.max_response_bytes = settings.max_response_bytes
        trusted = None
        if settings.trusted_documents is not None:
            trusted = load_manifest(settings.trusted_documents)
        self.persisted = PersistedQueries(settings.apq_max_bytes if settings.apq else 0, trusted)
        self.use_orjson = settings.orjson
        self.cache = settings.cache_policy
        # Bounds of the cache tags public answers carry (server.http.cache_tags).
        self.max_tags = MAX_TAGS
        self.max_tag_bytes = MAX_TAG_BYTES
        # The process's map of public answers, told of changes by the stream's follower.
        self.answers = AnswerCache(settings.answer_cache_bytes, settings.storage_timeout)
        self.suggestions = settings.suggestions_on
        self.ide = ide
        # The page carries the dev token only in development (never in production posture).
        self.ide_token = not settings.production

    def watch(self, metrics: Metrics) -> None:
        """Count the lookups of the parser and validation caches and of persisted queries."""
        documents, validated = self.caches.documents, self.caches.validated
        metrics.watch_lookups("documents", lambda: (documents.hits, documents.misses))
        metrics.watch_lookups("validated", lambda: (validated.hits, validated.misses))
        answers = self.answers
        metrics.watch_lookups("answers", lambda: (answers.hits, answers.misses))
        metrics.watch_answers(
            lambda: (answers.evictions, answers.invalidations, answers.not_stored, answers.bytes)
        )
        persisted = self.persisted
        metrics.watch_persisted(lambda: (persisted.hits, persisted.misses, persisted.registered))

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        # Strawberry answers requests it cannot read (bad JSON, wrong content type, a batch,
        # a mutation over GET) in plain text; clients get the GraphQL shape instead.
        if scope["type"] == "websocket":
            await self._socket(scope, receive, send)
            return
        if scope["type"] != "http":
            await super().__call__(scope, receive, send)
            return
        scope["headers"] = [_media_type_in_lower_case(h) for h in scope["headers"]]
        request = Request(scope, receive)
        media_type = negotiate(request.headers.get("accept")) or JSON
        exchange = exchange_of(scope)
        key = self._answer_key(request, media_type)
        kept = None
        if key is not None:
            kept = await self.answers.find(key)
        if kept is not None:
            # Answered from the process's map (server.http.answers): nothing is executed.
            response = Response(kept.body, headers=dict(kept.headers))
            if exchange is not None:
                exchange.outcome = "ok"
                exchange.named = kept.operation
        else:
            flight = None if key is None else self.answers.take_flight(key)
            started = self.answers.start()
            try:
                response = await self._answer(request, media_type, exchange)
                if key is not None:
                    self._keep(key, request, response, started, exchange)
            finally:
                if key is not None and flight is not None:
                    self.answers.land(key, flight)
        response.headers.setdefault("cache-control", NO_STORE)
        # What an answer depends on besides the URL: the media type and the token (CORS
        # adds Origin, compression Accept-Encoding).
        response.headers["vary"] = "Accept, Authorization"
        await response(scope, receive, send)

    def _answer_key(self, request: Request, media_type: str) -> AnswerKey | None:
        """The key of the process's map for this request, when it is one the map serves:
        an anonymous query over GET (a document or a persisted query's hash), while the map
        is serving (on, and the stream followed)."""
        if (
            not self.answers.serving
            or not self.cache.on
            or request.method != "GET"
            or "authorization" in request.headers
        ):
            return None
        params = request.query_params
        if params.get("query") is None and params.get("extensions") is None:
            return None  # the GraphiQL page
        return AnswerKey.of(
            params.get("query"),
            params.get("operationName") or None,
            params.get("variables"),
            params.get("extensions"),
            media_type,
        )

    def _keep(
        self,
        key: AnswerKey,
        request: Request,
        response: Response,
        started: int,
        exchange: Exchange | None,
    ) -> None:
        """Keep a public answer in the process's map, with its tags and operation."""
        if response.status_code != 200 or not response.headers.get("cache-control", "").startswith(
            "public"
        ):
            return
        headers = tuple(
            (name, response.headers[name])
            for name in ("content-type", "cache-control", "surrogate-key", "cache-tag")
            if name in response.headers
        )
        tags = frozenset(self.answer_tags(request))
        operation = None if exchange is None else exchange.operation
        self.answers.store(key, Answer(bytes(response.body), headers, tags, operation), started)

    async def _answer(
        self, request: Request, media_type: MediaType, exchange: Exchange | None
    ) -> Response:
        """The answer to one request over HTTP, executed."""
        try:
            response = await self.run(request)
        except HTTPException as exc:
            # Refusals are never kept: a PersistedQueryNotFound kept by a cache would send
            # Apollo's link round the same miss until it expired.
            response = refusal(exc, media_type)
            if exchange is not None:
                exchange.codes = [exc.code if isinstance(exc, Refused) else "BAD_USER_INPUT"]
        else:
            outcome = getattr(request.state, "graphql_outcome", None)
            if outcome is not None and len(response.body) > self.max_response_bytes:
                response = self._too_large(len(response.body), request)
                outcome = (False, False, True)
            if exchange is not None:
                if outcome is None:
                    exchange.graphql = False  # the GraphiQL page, not an operation
                else:
                    exchange.outcome = _outcome(*outcome)
            if outcome is not None:
                request_error, internal, errors = outcome
                response.status_code = result_status(
                    media_type, request_error=request_error, internal=internal
                )
                response.headers["content-type"] = content_type(media_type)
                if response.status_code == 200 and self.shareable(request, errors=errors):
                    # server.http.caching.Conditional adds the ETag and answers 304s.
                    response.headers["cache-control"] = self.cache.cache_control()
                    response.headers.update(tag_headers(self.answer_tags(request)))
                elif response.status_code == 200 and self.kept_privately(request, errors=errors):
                    response.headers["cache-control"] = self.cache.private_cache_control()
        return response

    def _too_large(self, size: int, request: Request) -> Response:
        """The answer in place of one over MAX_RESPONSE_BYTES: it was computed, never sent
        (its bytes count against no one but this request)."""
        request_id = getattr(request.state, "request_id", "unknown")
        error = {
            "message": f"The answer would be {size} bytes; at most {self.max_response_bytes} "
            "are allowed (MAX_RESPONSE_BYTES). Ask for smaller pages, fewer aliases or "
            "fewer fields.",
            "extensions": {
                "code": "QUERY_TOO_COMPLEX",
                "bytes": size,
                "maxBytes": self.max_response_bytes,
            },
        }
        exchange = exchange_of(request.scope)
        if exchange is not None:
            exchange.codes = ["QUERY_TOO_COMPLEX"]
        body = {"data": None, "errors": [error], "extensions": {"requestId": request_id}}
        return Response(orjson.dumps(body), media_type=JSON)

    async def _socket(self, scope: Scope, receive: Receive, send: Send) -> None:
        """A WebSocket connection, within its places (server.http.sockets): one more is accepted
        and closed at once with 1013 (try again later), which graphql-ws retries."""
        place = self.places.take(client_address(scope, self.trusted_proxies), send)
        if isinstance(place, str):
            process_metrics.websocket_refused(
                "max_websockets" if place == PROCESS_FULL else "per_address"
            )
            socket = WebSocket(scope, receive, send)
            offered = scope.get("subprotocols") or ()
            chosen = (
                GRAPHQL_TRANSPORT_WS_PROTOCOL if GRAPHQL_TRANSPORT_WS_PROTOCOL in offered else None
            )
            await socket.accept(subprotocol=chosen)
            await socket.close(code=TRY_AGAIN_LATER, reason=place)
            return
        current = CURRENT.set(place)
        try:
            await super().__call__(scope, receive, place.forward)
        finally:
            CURRENT.reset(current)
            self.places.give_back(place)

    def shareable(self, request: Request, *, errors: bool) -> bool:
        """Whether anyone (a browser, a CDN, a proxy) may keep this answer and give it to
        anyone: a query over GET (mutations are refused over GET, and POST answers are not
        kept by caches anyway), without a token (an answer with one may hold what only its
        holder may see: a moderator's plans, an author's own fields), without errors."""
        # A result with errors, partial ones included, is no-store: a field error is often
        # passing (STORAGE_UNAVAILABLE, RATE_LIMITED, a masked error whose message names one
        # request's id), and a cache would serve it to everyone for max-age instead of the
        # next request getting the whole answer.
        return (
            self.cache.on
            and request.method == "GET"
            and "authorization" not in request.headers
            and not errors
        )

    def answer_tags(self, request: Request) -> list[str]:
        """The cache tags of a public answer: what its execution read (resolvers.read_set),
        within the bounds (server.http.cache_tags). Private answers carry none: no shared
        cache keeps them, and their tags would only tell what a token's holder read."""
        context = getattr(request.state, "context", None)
        if not isinstance(context, Context):
            return []
        return bounded(context.reads, self.max_tags, self.max_tag_bytes)

    def kept_privately(self, request: Request, *, errors: bool) -> bool:
        """Whether the caller's own browser may keep this answer: a query over GET with a
        token, without errors, whose execution never read who is calling (a viewer field,
        a role, a comment only its author or a moderator may see: ``Context.viewer``), so
        that it is the same for every caller. Never a shared cache's to keep: ``private``,
        and Vary: Authorization."""
        context = getattr(request.state, "context", None)
        return (
            self.cache.on
            and request.method == "GET"
            and "authorization" in request.headers
            and not errors
            and isinstance(context, Context)
            and not context.viewer_read
        )

    def should_render_graphql_ide(self, request: BaseRequestProtocol) -> bool:
        # A GET with only a persisted query's hash is a query, not a visit to the IDE.
        return super().should_render_graphql_ide(request) and (
            request.query_params.get("extensions") is None
        )

    async def parse_http_body(self, request: AsyncHTTPRequestAdapter) -> GraphQLRequestData:
        if negotiate(request.headers.get("accept")) is None:
            raise Refused(
                406,
                f"The Accept header allows neither {GRAPHQL_RESPONSE_JSON} nor {JSON}.",
            )
        if request.method == "POST":
            media_type, parameters = parse_content_type(request.content_type or "")
            # Media types are case-insensitive (RFC 9110, 8.3.1); the body is read as
            # UTF-8, so another declared charset is refused rather than misread.
            charset = {k.lower(): v for k, v in parameters.items()}.get("charset", "utf-8").lower()
            if media_type.lower() != JSON or charset not in ("utf-8", "utf8"):
                raise Refused(415, f"The request body must be {JSON} in UTF-8.")
        data = await super().parse_http_body(request)
        if isinstance(data, list):  # batching is off: Strawberry refuses batches
            raise Refused(400, "Batches are not accepted.")
        name: object = data.operation_name
        if name is not None and not isinstance(name, str):
            raise Refused(400, "The operationName must be a string or null, if provided.")
        # GraphQL over HTTP: an empty operationName is the same as none.
        data.operation_name = name or None
        return data

    async def execute_single(
        self,
        request: Request,
        request_adapter: AsyncHTTPRequestAdapter,
        sub_response: Response,
        context: Context,
        root_value: None,
        request_data: GraphQLRequestData,
    ) -> ExecutionResult:
        context.operation_name = request_data.operation_name
        register = self.persisted.resolve(request_data)
        if register is not None:
            # Registered once the document has run without a request error.
            request.state.persist = (register, request_data.query)
        try:
            return await super().execute_single(
                request, request_adapter, sub_response, context, root_value, request_data
            )
        except HTTPException as exc:
            cause = exc.__cause__
            if not isinstance(cause, CannotGetOperationTypeError | InvalidOperationTypeError):
                raise
            if (
                isinstance(cause, InvalidOperationTypeError)
                and cause.operation_type == OperationType.MUTATION
                and request_adapter.method == "GET"
                and not _several_operations_unnamed(request_data)
            ):
                raise Refused(
                    405, "Mutations are sent with POST.", headers={"allow": "POST"}
                ) from cause
            # The operation cannot be determined, or is not one this API runs: a request
            # error, told as GraphQL errors.
            problem = _operation_problem(cause, request_data, request_adapter.method)
            error = GraphQLError(problem)
            return PreExecutionError(data=None, errors=[error])

    async def render_graphql_ide(self, request: Request) -> Response:
        # Our own page (server.http.graphiql), not Strawberry's, which loads GraphiQL from a CDN.
        if self.ide is None:  # Strawberry asks only when the IDE is on
            raise HTTPException(404, "Not Found")
        # Only to a page asked for by a loopback name: a page under another Host may be a
        # DNS-rebinding attacker's, reaching this loopback server from a victim's browser.
        # And only to a client on this machine: a proxy forwards the Host it was sent, and
        # a page from elsewhere under Host: localhost is someone else's.
        client = client_address(request.scope, self.trusted_proxies)
        loopback = (
            request.url.hostname in LOOPBACK_HOSTS and client is not None and client.is_loopback
        )
        tokens = runtime_of(request.app).dev_tokens if self.ide_token and loopback else None
        return self.ide.render(request.url.path, tokens)

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

    def decode_json(self, data: str | bytes) -> object:
        # WebSocket messages (and GET parameters): orjson, as for bodies (see parse_json).
        return orjson.loads(data)

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
        # Over WebSocket the token comes with connection_init only (server.http.subscriptions
        # checks it there); a header on the upgrade would be an identity never checked.
        authorization = (
            None if isinstance(request, WebSocket) else request.headers.get("authorization")
        )
        # Checks of the token are synchronous: a key it names that the set lacks is looked
        # for here, once and rate-limited, before any of them.
        await runtime.ready_for(authorization)
        context = make_context(
            runtime.table,
            request_id=request_id,
            tokens=runtime.tokens,
            authorization=authorization,
            storage_timeout=runtime.settings.storage_timeout,
            tuning=runtime.tuning,
            write_limits=runtime.write_limits,
            author_id_secret=runtime.settings.author_id_key,
            explain=runtime.settings.explain_on,
            moderation=runtime.settings.moderation_mode,
            report_threshold=runtime.settings.report_threshold,
            feed=runtime.feed,
            erasure_mode=runtime.settings.default_erasure_mode,
            webhooks=self.webhook_rules,
        )
        context.over_socket = isinstance(request, WebSocket)
        context.ready_for = runtime.ready_for
        # Read by kept_privately once the answer is made.
        request.state.context = context
        exchange = exchange_of(request.scope)
        if exchange is not None:
            exchange.context = context
        return context

    async def on_ws_connect(self, context: Context) -> UnsetType | dict[str, object] | None:
        viewer = await authorize(context)
        socket = CURRENT.get()
        if (
            socket is not None
            and viewer is not None
            and not self.places.take_for_holder(socket, viewer.author_id)
        ):
            # Closed here with our code; the handler's own close (4403) is dropped.
            process_metrics.websocket_refused("per_token")
            await socket.close(TOO_MANY_FOR_TOKEN, TOKEN_FULL)
            raise ConnectionRejectionError()
        unset: UnsetType = UNSET
        return unset

    async def process_result(
        self, request: Request, result: ExecutionResult
    ) -> GraphQLHTTPResponse:
        if result.errors:
            request_id = getattr(request.state, "request_id", "unknown")
            result.errors = with_codes(result.errors, request_id, suggestions=self.suggestions)
            exchange = exchange_of(request.scope)
            if exchange is not None:
                exchange.codes = [str((e.extensions or {}).get("code")) for e in result.errors]
        response = process_result(result)
        request_error = isinstance(result, PreExecutionError)
        internal = any(
            (error.extensions or {}).get("code") == "INTERNAL_SERVER_ERROR"
            for error in result.errors or []
        )
        errors = bool(result.errors)
        # Read by __call__, which sets the status, the media type and the caching headers.
        request.state.graphql_outcome = (request_error, internal, errors)
        if self.shareable(request, errors=errors) or self.kept_privately(request, errors=errors):
            # The same answer must be the same bytes, or no ETag would ever match again: the
            # request id stays in the X-Request-Id header only.
            extensions = response.get("extensions")
            if extensions:
                extensions.pop("requestId", None)
        persist = getattr(request.state, "persist", None)
        if persist is not None and not request_error:
            self.persisted.register(*persist)
        if request_error and negotiate(request.headers.get("accept")) == GRAPHQL_RESPONSE_JSON:
            # Nothing was executed: no data entry at all.
            response.pop("data", None)
        return response


def _outcome(request_error: bool, internal: bool, errors: bool) -> Outcome:
    if internal:
        return "internal"
    if request_error:
        return "request_error"
    return "error" if errors else "ok"


def _several_operations_unnamed(request_data: GraphQLRequestData) -> bool:
    """Whether the document holds several operations and the request names none (a request
    error, whatever the first of them is). The document parsed once already, within the
    token limit."""
    if request_data.operation_name is not None or request_data.query is None:
        return False
    document = parse(request_data.query, no_location=True)
    return sum(isinstance(d, OperationDefinitionNode) for d in document.definitions) > 1


def _operation_problem(
    cause: CannotGetOperationTypeError | InvalidOperationTypeError,
    request_data: GraphQLRequestData,
    method: str,
) -> str:
    if isinstance(cause, InvalidOperationTypeError):
        if _several_operations_unnamed(request_data):
            return "The document has several operations; name the one to run in operationName."
        return f"{cause.operation_type.value.capitalize()} operations are not run over {method}."
    if request_data.operation_name is None:
        return "The document has no operation to run."
    return "The document has no operation of the name in operationName."


async def livez(request: Request) -> Response:
    """200 while the process answers at all: what a liveness check asks (restart it only
    when this fails). It reads nothing, so a storage outage never restarts the fleet."""
    return JSONResponse({"status": "ok"})


async def healthz(request: Request) -> Response:
    """Readiness (``/readyz``, and ``/healthz`` as it always was): 200 when the table answers
    within the storage timeout and its layout fits this code (``storage.model.layout_version``),
    else 503 saying which, so a load balancer sends no traffic here meanwhile; 503 at once
    when the server is shutting down (server.shutdown)."""
    drain: Drain = request.app.state.drain
    if drain.draining:
        return JSONResponse({"status": "draining"}, status_code=503)
    runtime = runtime_of(request.app)
    try:
        async with asyncio.timeout(runtime.settings.storage_timeout):
            await ping(runtime.table)
    except (StorageUnavailable, TimeoutError) as exc:
        # The engine's own error, when there is one, says more than ours.
        cause = exc.__cause__ if isinstance(exc, StorageUnavailable) else exc
        log.warning("health check: storage unavailable (%s)", type(cause).__name__)
        return JSONResponse({"status": "unavailable", "storage": "down"}, status_code=503)
    # The table's layout as the process last read it (no read here): a table behind this
    # code, or code behind the table, is no place to send traffic.
    gate = runtime.table.memory(LayoutGate)
    if not gate.enforced:  # storage prepared by the caller (tests): no layout is read
        return JSONResponse({"status": "ok", "storage": "up"})
    if not gate.ready():
        body = {"status": "unavailable", "storage": "up", "layout": gate.reason()}
        return JSONResponse(body, status_code=503)
    return JSONResponse({"status": "ok", "storage": "up", "layout": gate.reason()})


def create_app(
    settings: Settings | None = None,
    *,
    client: DynamoClient | None = None,
    prepared: Prepared | None = None,
    tracing: Tracing | None = None,
    drain: Drain | None = None,
) -> Starlette:
    """The application: routes and middleware; the lifespan (server.runtime) opens storage.
    ``client`` lets tests supply storage instead; ``prepared`` makes a worker's application,
    on what its parent prepared (server.workers), with the settings it carries; ``tracing``
    sends spans elsewhere than ``OTEL_EXPORTER_OTLP_ENDPOINT`` (tests keep them in memory);
    ``drain`` is what the server serving it sets on SIGTERM (server.shutdown)."""
    if prepared is not None:
        settings = prepared.settings
    settings = settings or Settings()
    metrics = None
    if settings.metrics_mode != "off":
        metrics = Metrics(max_operations=settings.metrics_operations)
    if tracing is None and settings.tracing_on:
        from server.observability.tracing import Tracing, sampler

        tracing = Tracing.otlp(settings.otel_service_name, sampler(*settings.traces_sampler))
    observed = metrics is not None or tracing is not None or settings.request_lines
    # Outermost first. Every refusal is made inside RequestId and CORS, so a browser can
    # read it and a client can quote its id.
    middleware = [Middleware(SecurityHeaders), Middleware(RequestId)]
    if observed:
        # Inside RequestId, whose id it reports; outside everything that may refuse.
        middleware.append(
            Middleware(
                Observed,
                metrics=metrics,
                tracing=tracing,
                request_lines=settings.request_lines,
                graphql_path=GRAPHQL_PATH,
            )
        )
    if settings.cors_origins:
        middleware.append(
            Middleware(
                Cors,
                allow_origins=settings.cors_origins,
                allow_methods=["GET", "POST", "OPTIONS"],
                allow_headers=settings.cors_allow_headers,
                expose_headers=["x-request-id"],
                max_age=settings.cors_max_age,
            )
        )
    # Inside CORS and the request id, so that a 304 carries them too; outside compression,
    # so that the ETag is taken over the bytes sent and each content coding has its own.
    middleware.append(Middleware(Conditional))
    if settings.gzip_min_bytes:
        # Starlette's gzip is deterministic (zlib's header carries no time), so the same
        # answer compresses to the same bytes and keeps its ETag.
        middleware.append(
            Middleware(
                GZipMiddleware, minimum_size=settings.gzip_min_bytes, compresslevel=GZIP_LEVEL
            )
        )
    middleware += [
        Middleware(
            HeaderLimit, max_headers=settings.max_headers, max_bytes=settings.max_header_bytes
        ),
        Middleware(BodyLimit, max_bytes=settings.max_body_bytes, timeout=settings.body_timeout),
    ]
    routes: list[BaseRoute] = [
        Route("/livez", livez),
        Route("/readyz", healthz),
        Route("/healthz", healthz),
    ]
    ide = GraphiQLPage.load() if settings.graphiql_on else None
    if ide is not None:
        routes.append(Route(ASSET_PATH + "/{name}", ide.asset))
    view = GraphQLApp(settings, ide, observed=observed)
    routes.append(Route(GRAPHQL_PATH, view))
    # The same view answers WebSocket upgrades there (subscriptions).
    routes.append(WebSocketRoute(GRAPHQL_PATH, view))
    if metrics is not None:
        view.watch(metrics)
        if settings.metrics_mode == "on":
            routes.append(Route("/metrics", metrics.endpoint))
    app = Starlette(
        routes=routes,
        middleware=middleware,
        lifespan=lifespan(
            settings, client, prepared, metrics=metrics, tracing=tracing, answers=view.answers
        ),
    )
    # Starlette would answer /graphql/ with a redirect to a URL built from the Host header,
    # which the client controls: unknown paths are a 404, nothing else.
    app.router.redirect_slashes = False
    app.state.drain = drain or Drain()
    # The process's map of answers, for whatever else tells it of changes.
    app.state.answers = view.answers
    return app
