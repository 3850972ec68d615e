"""Subscriptions over WebSocket (graphql-transport-ws), with their limits.

Strawberry speaks the protocol; this module adds what a public server needs around it:

- **Subscriptions only.** Queries and mutations go over HTTP, where caching and their
  limits live; one sent over the socket is refused with BAD_USER_INPUT.
- **One document policy.** What HTTP enforces holds here too: trusted documents only when
  the server has a manifest (FORBIDDEN otherwise), a persisted query's hash for its
  document (``payload.extensions.persistedQuery``), and the schema's own limits (tokens,
  depth, aliases, introspection), which run in every execution.
- **Auth at connection_init.** ``payload.authorization`` (``"Bearer <token>"``, the same
  tokens as over HTTP) is checked when the connection is initialised; an invalid one closes
  the socket with 4403. Without one the connection is anonymous (comments are public).
- **Cost charged once, at subscribe time.** An operation is estimated as an HTTP request
  would be (``schema.cost``), refused with QUERY_TOO_COMPLEX when it selects a listing
  (an event carries the comment and the counters; listings are read over HTTP) or when
  one event could make more than ``event_cost`` storage calls; its points (those calls
  plus one) count against the connection's ``connection_cost`` for as long as it runs,
  and against the product's (or group's) and the process's budgets of
  server.http.event_groups, where
  subscriptions sharing a document, variables and view share one resolution per event.
- **Limits.** Subscriptions per connection (TOO_MANY_SUBSCRIPTIONS as an ``error``
  message), per process (the same code), the wait for connection_init (4408,
  Strawberry's), and an idle timeout: a connection without a subscription for
  ``idle_seconds`` is closed with 4000, and one whose token has expired with 4403.
  uvicorn caps a message at the HTTP body limit and pings the client to find dead
  connections. An event larger than MAX_RESPONSE_BYTES ends its subscription with
  QUERY_TOO_COMPLEX.
- **Codes.** Every error sent (``error`` and ``next`` messages) carries its contract code,
  as over HTTP (``schema.masking.with_codes``).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, Mapping
from dataclasses import dataclass
from typing import Any

from cross_web import HTTPException
from graphql import (
    DocumentNode,
    FieldNode,
    FragmentDefinitionNode,
    FragmentSpreadNode,
    GraphQLError,
    GraphQLSchema,
    GraphQLSyntaxError,
    InlineFragmentNode,
    OperationType,
    SelectionSetNode,
    TypeInfo,
    TypeInfoVisitor,
    Visitor,
    parse,
    visit,
)
from graphql.execution.values import get_argument_values, get_variable_values
from starlette.websockets import WebSocketDisconnect
from strawberry.asgi import ASGIWebSocketAdapter
from strawberry.exceptions import ConnectionRejectionError
from strawberry.http import GraphQLRequestData
from strawberry.http.exceptions import WebSocketDisconnected
from strawberry.schema import BaseSchema
from strawberry.subscriptions.protocols.graphql_transport_ws.handlers import (
    BaseGraphQLTransportWSHandler,
)
from strawberry.subscriptions.protocols.graphql_transport_ws.types import (
    CompleteMessage,
    SubscribeMessage,
)
from strawberry.types import ExecutionResult
from strawberry.types.execution import PreExecutionError

from resolvers.auth import Viewer, authenticate
from resolvers.context import Context
from resolvers.errors import Unauthenticated
from schema import SchemaOptions
from schema.cost import Refusal, estimate, over_budget, select_operation
from schema.masking import with_codes
from server.http.event_groups import VIEWER_FIELDS, EventGroups, GroupKey, Refused, bounded
from server.http.forwarded import client_key
from server.http.persisted import PersistedQueries
from server.http.sockets import CURRENT
from server.http.transport import Refused as TransportRefused
from server.observability import metrics as process_metrics
from storage.live.events import GROUP_WATCH_PREFIX

# Close code of a connection that held no subscription for the idle timeout (4000-4399 are
# the application's; the protocol's own are 44xx).
IDLE_CLOSE_CODE = 4000
# Seconds between checks of a connection's token (and of its idleness, at most).
TOKEN_CHECK_SECONDS = 1.0


@dataclass(frozen=True, slots=True)
class SubscriptionLimits:
    """What the view's settings allow a connection (server.http.app makes it from them)."""

    per_connection: int
    idle_seconds: float
    max_cost: int
    max_nodes: int
    suggestions: bool
    max_tokens: int = SchemaOptions().max_tokens
    # Points (see server.http.event_groups) one event of a subscription may cost, beyond the
    # one of resolving it, and that a connection's subscriptions may cost together.
    event_cost: int = 5
    connection_cost: int = 20


async def authorize(context: Context) -> Viewer | None:
    """Take the token of connection_init's payload: the viewer it names (None without one);
    ConnectionRejectionError (4403) when it is not one we accept. A key the token names
    that the provider's set lacks is looked for first (``Context.ready_for``)."""
    params = context.connection_params or {}
    value = params.get("authorization", params.get("Authorization"))
    if value is None:
        return None
    if not isinstance(value, str):
        raise ConnectionRejectionError()
    if context.ready_for is not None:
        await context.ready_for(value)
    try:
        viewer = authenticate(value, context.tokens)
    except Unauthenticated as exc:
        raise ConnectionRejectionError() from exc
    context.authorization = value
    return viewer


def _error(message: str, code: str) -> PreExecutionError:
    return PreExecutionError(data=None, errors=[GraphQLError(message, extensions={"code": code})])


class TextFrames(ASGIWebSocketAdapter):
    """Messages as text frames, as graphql-transport-ws requires (the view encodes JSON
    with orjson, to bytes, which Strawberry would send as binary frames: the graphql-ws
    client refuses those), and read with orjson (which refuses nesting deep enough to
    exhaust the interpreter's recursion, as for HTTP bodies)."""

    _sending: asyncio.Lock | None = None

    async def send_json(self, message: Mapping[str, object]) -> None:
        # One message of a connection at a time, encoded only when its turn comes: the
        # subscriptions of a connection that reads slowly wait here holding references to
        # their events, not one encoded copy each (a shared event, encoded per member and
        # held in front of a socket nobody reads, would multiply by its subscriptions).
        if self._sending is None:
            self._sending = asyncio.Lock()
        async with self._sending:
            encoded = self.view.encode_json(message)
            text = encoded.decode() if isinstance(encoded, bytes) else encoded
            del encoded
            try:
                await self.ws.send_text(text)
            except WebSocketDisconnect as exc:
                raise WebSocketDisconnected from exc


@dataclass(frozen=True, slots=True)
class Accepted:
    """A subscription the document policy lets run: its points (the storage calls one event
    may make, plus one for resolving it), what it watches (a product id, or a group's as
    ``_watched`` keys it), and whether its answer depends on the viewer."""

    points: int
    product_id: str
    per_viewer: bool
    # The operation's variables as declared and coerced (what the group is keyed by:
    # anything else a client sends in them changes nothing).
    variables: dict[str, Any]


class _Operations:
    """The schema as one connection's handler sees it: each operation checked against the
    document policy, charged to the connection's budget, and joined to the process's group
    of the same document (server.http.event_groups), whose one resolution per event it shares."""

    def __init__(self, schema: BaseSchema, handler: SubscriptionHandler) -> None:
        self.schema = schema
        self.handler = handler

    async def stream(
        self,
        query: str | None,
        variable_values: dict[str, Any] | None = None,
        context_value: Context | None = None,
        root_value: Any | None = None,
        operation_name: str | None = None,
        **_: Any,
    ) -> AsyncGenerator[ExecutionResult, None]:
        assert context_value is not None
        return self._run(query, variable_values, context_value, root_value, operation_name)

    async def _run(
        self,
        query: str | None,
        variables: dict[str, Any] | None,
        connection: Context,
        root_value: Any,
        operation_name: str | None,
    ) -> AsyncGenerator[ExecutionResult, None]:
        accepted = self._accept(query, variables, operation_name)
        if isinstance(accepted, PreExecutionError):
            refusal, _ = bounded(
                self._coded(accepted, connection),
                self.handler.groups.max_bytes,
                self.handler.groups.encode,
            )
            yield refusal
            return
        assert query is not None
        handler = self.handler
        limits = handler.limits
        if handler.points + accepted.points > limits.connection_cost:
            refused = _error(
                f"This connection's subscriptions would cost {handler.points + accepted.points} "
                f"points per event; at most {limits.connection_cost} are allowed. Complete "
                "one first, or select fewer fields that read storage.",
                "QUERY_TOO_COMPLEX",
            )
            yield self._coded(refused, connection)
            return
        viewer = connection.authorization if accepted.per_viewer else None
        key = GroupKey.of(query, operation_name, accepted.variables, viewer)

        async def start() -> AsyncGenerator[ExecutionResult, None]:
            # The group's own context: the connection's caller when the answer depends on
            # who asks, else nobody's (every member sees what anonymous viewers see).
            context = connection.for_operation()
            if viewer is None:
                context.authorization = None
            return self._resolved(query, variables, context, root_value, operation_name)

        try:
            member = handler.groups.join(
                key, accepted.product_id, accepted.points, start, handler.client
            )
        except Refused as refused_here:
            refusal = PreExecutionError(data=None, errors=[refused_here.error()])
            yield self._coded(refusal, connection)
            return
        handler.points += accepted.points
        process_metrics.subscriptions_open(handler.groups.members)
        try:
            async for result in member.results():
                yield result
        finally:
            handler.points -= accepted.points
            handler.groups.leave(member)
            process_metrics.subscriptions_open(handler.groups.members)

    async def _resolved(
        self,
        query: str,
        variables: dict[str, Any] | None,
        context: Context,
        root_value: Any,
        operation_name: str | None,
    ) -> AsyncGenerator[ExecutionResult, None]:
        """The group's one execution, its errors coded once for all members."""
        results = await self.schema.stream(
            query,
            variable_values=variables,
            context_value=context,
            root_value=root_value,
            operation_name=operation_name,
        )
        try:
            async for result in results:
                # Subscriptions yield results, never incremental frames (no @defer here).
                assert isinstance(result, ExecutionResult)
                if not isinstance(result, PreExecutionError):
                    # The meter is the event's own (live renews it per event).
                    process_metrics.subscription_resolved(context.meter.started)
                yield self._coded(result, context)
        finally:
            await results.aclose()

    def _accept(
        self, query: str | None, variables: object, operation_name: str | None
    ) -> Accepted | PreExecutionError:
        limits = self.handler.limits
        if not isinstance(query, str):
            return _error("The subscribe message has no query.", "BAD_USER_INPUT")
        if operation_name is not None and not isinstance(operation_name, str):
            return _error("The operationName must be a string or null.", "BAD_USER_INPUT")
        try:
            document = parse(query, no_location=True, max_tokens=limits.max_tokens)
        except GraphQLSyntaxError as exc:
            return PreExecutionError(data=None, errors=[exc])
        schema = self.schema._schema  # type: ignore[attr-defined]
        try:
            operation = select_operation(document, operation_name)
            if operation.operation is not OperationType.SUBSCRIPTION:
                return _error(
                    "Only subscriptions are sent over WebSocket; send queries and "
                    "mutations over HTTP.",
                    "BAD_USER_INPUT",
                )
            found = estimate(schema, document, operation_name, variables)
        except Refusal as refused:
            return PreExecutionError(data=None, errors=list(refused.errors))
        error = over_budget(found, limits.max_cost, limits.max_nodes)
        if error is not None:
            return PreExecutionError(data=None, errors=[error])
        if found.listings:
            named = ", ".join(sorted(found.listings))
            return _error(
                f"An event cannot select listings ({named}); read them over HTTP when an "
                "event says the listing changed.",
                "QUERY_TOO_COMPLEX",
            )
        if found.points > limits.event_cost:
            return _error(
                f"One event of this subscription could make {found.points} storage calls; "
                f"at most {limits.event_cost} are allowed. Select fewer fields that read "
                "storage.",
                "QUERY_TOO_COMPLEX",
            )
        root = _root_arguments(schema, document, operation_name, variables)
        watched = None if root is None else _watched(root[0])
        if root is None or watched is None:
            return _error(
                "The subscription names no product or group to watch (exactly one of "
                "productId and groupId).",
                "BAD_USER_INPUT",
            )
        return Accepted(
            points=found.points + 1,
            product_id=watched,
            per_viewer=_selects(schema, document, VIEWER_FIELDS),
            variables=root[1],
        )

    def _coded(self, result: ExecutionResult, context: Context) -> ExecutionResult:
        if result.errors:
            result.errors = with_codes(
                result.errors, context.request_id, suggestions=self.handler.limits.suggestions
            )
        return result


class SubscriptionHandler(BaseGraphQLTransportWSHandler[Context, None]):
    """Strawberry's graphql-transport-ws handler with the limits of ``SubscriptionLimits``
    (the view's ``subscription_limits``)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # The view is server.http.app's GraphQLApp, which carries them.
        self.limits: SubscriptionLimits = self.view.subscription_limits  # type: ignore[attr-defined]
        self.groups: EventGroups = self.view.event_groups  # type: ignore[attr-defined]
        self.persisted: PersistedQueries = self.view.persisted  # type: ignore[attr-defined]
        self.schema = _Operations(self.schema, self)  # type: ignore[assignment]
        # Points this connection's subscriptions hold (at most limits.connection_cost).
        self.points = 0
        # Whose budget the groups this connection starts count against (its client's).
        socket = CURRENT.get()
        self.client = client_key(None if socket is None else socket.address)
        self._idle: asyncio.Task[None] | None = None

    async def handle_subscribe(self, message: SubscribeMessage) -> None:
        # The protocol's shape: a string id and an object payload (Strawberry would fail on
        # anything else with a traceback and an abrupt close).
        raw: dict[str, object] = dict(message)
        if not isinstance(raw.get("id"), str) or not isinstance(raw.get("payload"), dict):
            await self.websocket.close(code=4400, reason="Invalid subscribe message")
            return
        # Counted as the messages arrive (operations start later, in tasks of their own).
        if (
            self.connection_acknowledged
            and message["id"] not in self.operations
            and len(self.operations) >= self.limits.per_connection
        ):
            error = GraphQLError(
                f"A connection may hold {self.limits.per_connection} subscriptions; complete "
                "one first, or open another connection.",
                extensions={"code": "TOO_MANY_SUBSCRIPTIONS"},
            )
            await self.send_message(
                {"id": message["id"], "type": "error", "payload": [error.formatted]}
            )
            return
        # The same document policy as over HTTP: trusted documents only, when the server
        # has a manifest; a persisted query's hash stands for its document.
        payload: dict[str, object] = dict(raw["payload"])  # type: ignore[call-overload]
        query, extensions = payload.get("query"), payload.get("extensions")
        data = GraphQLRequestData(
            query=query if isinstance(query, str) else None,
            variables=None,
            operation_name=None,
            extensions=extensions if isinstance(extensions, dict) else None,
        )
        try:
            # Nothing is registered over WebSocket: a document is registered by the HTTP
            # request that ran it.
            self.persisted.resolve(data)
        except HTTPException as refused:
            code = refused.code if isinstance(refused, TransportRefused) else "BAD_USER_INPUT"
            error = GraphQLError(refused.reason, extensions={"code": code})
            await self.send_message(
                {"id": message["id"], "type": "error", "payload": [error.formatted]}
            )
            return
        if data.query is not None and data.query != query:
            message = {**message, "payload": {**message["payload"], "query": data.query}}
        await super().handle_subscribe(message)

    async def handle_complete(self, message: CompleteMessage) -> None:
        # The protocol's shape: a string id (Strawberry would fail on a list with a
        # traceback and an abrupt close).
        if not isinstance(dict(message).get("id"), str):
            await self.websocket.close(code=4400, reason="Invalid complete message")
            return
        await super().handle_complete(message)

    def on_request_accepted(self) -> None:
        super().on_request_accepted()
        self._idle = asyncio.create_task(self._close_when_idle())

    async def shutdown(self) -> None:
        if self._idle is not None:
            self._idle.cancel()
        await super().shutdown()

    async def _close_when_idle(self) -> None:
        """Close the connection once it has held no subscription for the idle timeout, or
        once the token it was initialised with has expired (a subscription lives no longer
        than the token that opened it; the client reconnects with a fresh one)."""
        loop = asyncio.get_running_loop()
        idle = self.limits.idle_seconds
        since = loop.time()
        while True:
            await asyncio.sleep(min(idle / 4, TOKEN_CHECK_SECONDS))
            if self.context.authorization is not None:
                try:
                    authenticate(self.context.authorization, self.context.tokens)
                except Unauthenticated:
                    await self.websocket.close(code=4403, reason="Token expired")
                    return
            if self.operations:
                since = loop.time()
                continue
            if loop.time() - since >= idle:
                await self.websocket.close(
                    code=IDLE_CLOSE_CODE, reason=f"No subscription for {idle:g} s"
                )
                return


def _selects(
    schema: GraphQLSchema, document: DocumentNode, fields: frozenset[tuple[str, str]]
) -> bool:
    """Whether the document selects any of ``fields`` ((type, field) pairs), anywhere: in
    another operation or an unused fragment too (it errs towards resolving per viewer)."""
    info = TypeInfo(schema)
    found = False

    class Finder(Visitor):
        def enter_field(self, node: FieldNode, *_: Any) -> None:
            nonlocal found
            parent = info.get_parent_type()
            if parent is not None and (parent.name, node.name.value) in fields:
                found = True

    visit(document, TypeInfoVisitor(info, Finder()))
    return found


def _watched(arguments: dict[str, Any]) -> str | None:
    """What a subscription's budget is charged to: its product id, or its group's id after
    the prefix a group's watchers have in the feed (no product id holds it); None unless
    exactly one is named (execution refuses it then)."""
    product_id, group_id = arguments.get("productId"), arguments.get("groupId")
    if isinstance(product_id, str) and group_id is None:
        return product_id
    if isinstance(group_id, str) and product_id is None:
        return GROUP_WATCH_PREFIX + group_id
    return None


def _root_arguments(
    schema: GraphQLSchema, document: DocumentNode, operation_name: str | None, variables: object
) -> tuple[dict[str, Any], dict[str, Any]] | None:
    """The arguments of the subscription's root field (a subscription has one), found
    through fragments and inline fragments, and the operation's coerced variables; None
    when there is no such field or they do not coerce (execution refuses it then)."""
    operation = select_operation(document, operation_name)
    root = schema.subscription_type
    given = variables if isinstance(variables, dict) else {}
    coerced = get_variable_values(schema, operation.variable_definitions or (), given)
    if root is None or isinstance(coerced, list):
        return None
    fragments = {
        d.name.value: d for d in document.definitions if isinstance(d, FragmentDefinitionNode)
    }
    pending: list[SelectionSetNode] = [operation.selection_set]
    seen: set[str] = set()
    while pending:
        for selection in pending.pop().selections:
            if isinstance(selection, FieldNode) and selection.name.value in root.fields:
                try:
                    arguments = get_argument_values(
                        root.fields[selection.name.value], selection, coerced
                    )
                except GraphQLError:
                    return None
                return arguments, dict(coerced.coerced)
            if isinstance(selection, InlineFragmentNode):
                pending.append(selection.selection_set)
            elif isinstance(selection, FragmentSpreadNode):
                name = selection.name.value
                if name not in seen and name in fragments:
                    seen.add(name)
                    pending.append(fragments[name].selection_set)
    return None
