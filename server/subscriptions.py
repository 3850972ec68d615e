"""Subscriptions over WebSocket (graphql-transport-ws), with their limits.

Strawberry speaks the protocol; this module adds what a public server needs around it:

- **Subscriptions only.** Queries and mutations go over HTTP, where caching, persisted
  queries and their limits live; one sent over the socket is refused with BAD_USER_INPUT.
- **Auth at connection_init.** ``payload.authorization`` (``"Bearer <token>"``, the same
  tokens as over HTTP) is checked when the connection is initialised; an invalid one closes
  the socket with 4403. Without one the connection is anonymous (comments are public).
- **Cost counted like queries.** An operation is estimated as an HTTP request would be
  (``schema.cost``) and refused over budget with QUERY_TOO_COMPLEX; the estimate is each
  event's budget of storage calls, and each event is resolved with a context of its own.
- **Limits.** Subscriptions per connection (TOO_MANY_SUBSCRIPTIONS as an ``error``
  message), per process (the feed's cap, the same code), the wait for connection_init
  (4408, Strawberry's), and an idle timeout: a connection without a subscription for
  ``idle_seconds`` is closed with 4000, and one whose token has expired with 4403.
  uvicorn caps a message at the HTTP body limit and pings the client to find dead
  connections.
- **Codes.** Every error sent (``error`` and ``next`` messages) carries its contract code,
  as over HTTP (``schema.errors.with_codes``).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, Mapping
from dataclasses import dataclass
from typing import Any

from graphql import GraphQLError, GraphQLSyntaxError, OperationType, parse
from starlette.websockets import WebSocketDisconnect
from strawberry.asgi import ASGIWebSocketAdapter
from strawberry.exceptions import ConnectionRejectionError
from strawberry.http.exceptions import WebSocketDisconnected
from strawberry.schema import BaseSchema
from strawberry.subscriptions.protocols.graphql_transport_ws.handlers import (
    BaseGraphQLTransportWSHandler,
)
from strawberry.subscriptions.protocols.graphql_transport_ws.types import SubscribeMessage
from strawberry.types import ExecutionResult
from strawberry.types.execution import PreExecutionError

from resolvers.auth import authenticate
from resolvers.context import Context
from resolvers.errors import Unauthenticated
from schema import SchemaOptions
from schema.cost import Refusal, estimate, over_budget, select_operation
from schema.errors import with_codes

# Close code of a connection that held no subscription for the idle timeout (4000-4399 are
# the application's; the protocol's own are 44xx).
IDLE_CLOSE_CODE = 4000
# Seconds between checks of a connection's token (and of its idleness, at most).
TOKEN_CHECK_SECONDS = 1.0


@dataclass(frozen=True, slots=True)
class SubscriptionLimits:
    """What the view's settings allow a connection (server.app makes it from them)."""

    per_connection: int
    idle_seconds: float
    max_cost: int
    max_nodes: int
    suggestions: bool
    max_tokens: int = SchemaOptions().max_tokens


def authorize(context: Context) -> None:
    """Take the token of connection_init's payload; ConnectionRejectionError (4403) when
    it is not one we accept."""
    params = context.connection_params or {}
    value = params.get("authorization", params.get("Authorization"))
    if value is None:
        return
    if not isinstance(value, str):
        raise ConnectionRejectionError()
    try:
        authenticate(value, context.tokens)
    except Unauthenticated as exc:
        raise ConnectionRejectionError() from exc
    context.authorization = value


def _error(message: str, code: str) -> PreExecutionError:
    return PreExecutionError(data=None, errors=[GraphQLError(message, extensions={"code": code})])


class TextFrames(ASGIWebSocketAdapter):
    """Messages as text frames, as graphql-transport-ws requires (the view encodes JSON
    with orjson, to bytes, which Strawberry would send as binary frames: the graphql-ws
    client refuses those), and read with orjson (which refuses nesting deep enough to
    exhaust the interpreter's recursion, as for HTTP bodies)."""

    async def send_json(self, message: Mapping[str, object]) -> None:
        encoded = self.view.encode_json(message)
        text = encoded.decode() if isinstance(encoded, bytes) else encoded
        try:
            await self.ws.send_text(text)
        except WebSocketDisconnect as exc:
            raise WebSocketDisconnected from exc


class _Operations:
    """The schema as one connection's handler sees it: each operation checked, given a
    context of its own, and its errors coded."""

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
        context = context_value.for_operation()
        return self._run(query, variable_values, context, root_value, operation_name)

    async def _run(
        self,
        query: str | None,
        variables: dict[str, Any] | None,
        context: Context,
        root_value: Any,
        operation_name: str | None,
    ) -> AsyncGenerator[ExecutionResult, None]:
        refusal = self._refusal(query, variables, operation_name)
        if refusal is not None:
            yield self._coded(refusal, context)
            return
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
                yield self._coded(result, context)
        finally:
            await results.aclose()

    def _refusal(
        self, query: str | None, variables: object, operation_name: str | None
    ) -> PreExecutionError | None:
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
        return None

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
        # The view is server.app's GraphQLApp, which carries them.
        self.limits: SubscriptionLimits = self.view.subscription_limits  # type: ignore[attr-defined]
        self.schema = _Operations(self.schema, self)  # type: ignore[assignment]
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
        await super().handle_subscribe(message)

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
