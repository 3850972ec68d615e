"""Observing requests: metrics, a span and a log line for each, from one place.

``Observed`` is pure ASGI middleware just inside ``RequestId``, installed only when
something observes (metrics, traces, or JSON request lines). It leaves an ``Exchange`` in
the request's state; the GraphQL view (``server.http.app``) fills in what only it knows (the
per-request context with its storage meter and the operation's name, the outcome, the
error codes), and when the answer has gone the middleware counts the request
(``server.observability.metrics``), ends its span (``server.observability.tracing``) and
writes its line.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from starlette.types import ASGIApp, Message, Receive, Scope, Send
from strawberry.extensions import SchemaExtension

from resolvers.context import Context
from server.observability.metrics import Metrics, Outcome

if TYPE_CHECKING:
    from server.observability.tracing import Tracing

log = logging.getLogger("comments.requests")

# Where the exchange lives in the request's state (``request.state.exchange``).
EXCHANGE = "exchange"
# Operation names past this length are cut in spans and log lines (metrics bound them
# otherwise, see server.observability.metrics).
MAX_NAME_CHARS = 100


@dataclass(slots=True)
class Exchange:
    """What one HTTP request came to. ``graphql``: a GraphQL request (the rest is then
    meaningful)."""

    request_id: str
    graphql: bool = False
    outcome: Outcome = "refused"
    # The request's context, once made: its meter and the operation's name.
    context: Context | None = None
    codes: list[str] = field(default_factory=list)
    status: int = 0
    # The operation's name when no context was made: an answer served from the process's
    # map (server.http.answers) names the operation that made it.
    named: str | None = None

    @property
    def operation(self) -> str | None:
        name = self.named if self.context is None else self.context.operation_name
        return None if name is None else name[:MAX_NAME_CHARS]

    def fields(self, scope: Scope, seconds: float) -> dict[str, Any]:
        """The request line's fields."""
        fields: dict[str, Any] = {
            "request_id": self.request_id,
            "method": scope.get("method"),
            "path": scope.get("path"),
            "status": self.status,
            "duration_ms": round(seconds * 1000, 3),
        }
        if not self.graphql:
            return fields
        fields |= {"operation": self.operation, "outcome": self.outcome}
        if self.codes:
            fields["error_codes"] = self.codes
        if self.context is not None:
            meter = self.context.meter
            fields |= {
                "storage_calls": meter.total_calls,
                "storage_rounds": meter.rounds,
                "items_read": meter.items_read,
                "read_capacity_units": round(meter.read_capacity, 3),
                "write_capacity_units": round(meter.write_capacity, 3),
            }
        return fields


def exchange_of(scope: Scope) -> Exchange | None:
    """The request's exchange, when requests are observed."""
    found = scope.get("state", {}).get(EXCHANGE)
    return found if isinstance(found, Exchange) else None


class OperationName(SchemaExtension):
    """Names the operation on the request's context once the document is parsed (a request
    that named none runs the document's only operation, whose name is then known)."""

    def on_validate(self) -> Iterator[None]:
        execution = self.execution_context
        context = execution.context
        if isinstance(context, Context) and context.operation_name is None:
            context.operation_name = execution.operation_name
        yield


class Observed:
    """Counts, traces and logs every HTTP request (see the module's docstring)."""

    def __init__(
        self,
        app: ASGIApp,
        *,
        metrics: Metrics | None = None,
        tracing: Tracing | None = None,
        request_lines: bool = False,
        graphql_path: str = "/graphql",
    ) -> None:
        self.app = app
        self.graphql_path = graphql_path
        self.metrics = metrics
        self.tracing = tracing
        self.request_lines = request_lines
        if tracing is not None:
            from server.observability.tracing import annotate_request

            self.annotate = annotate_request

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        state = scope.setdefault("state", {})
        exchange = Exchange(str(state.get("request_id", "")))
        # Every request to the GraphQL path is one, also those refused before the view
        # reads them (a body or a head too large), but CORS preflights; the view says when
        # it served the GraphiQL page instead.
        exchange.graphql = scope.get("path") == self.graphql_path and scope["method"] != "OPTIONS"
        state[EXCHANGE] = exchange

        async def noting_status(message: Message) -> None:
            if message["type"] == "http.response.start":
                exchange.status = message["status"]
            await send(message)

        if self.tracing is None:
            try:
                await self.app(scope, receive, noting_status)
            except BaseException:
                exchange.outcome, exchange.status = "internal", exchange.status or 500
                raise
            finally:
                self._done(scope, exchange, time.perf_counter() - started)
            return
        with self.tracing.request_span(scope) as span:
            try:
                await self.app(scope, receive, noting_status)
            except BaseException:
                exchange.outcome, exchange.status = "internal", exchange.status or 500
                raise
            finally:
                self.annotate(
                    span,
                    request_id=exchange.request_id,
                    status=exchange.status,
                    operation=exchange.operation,
                    outcome=exchange.outcome if exchange.graphql else None,
                    meter=None if exchange.context is None else exchange.context.meter,
                )
                self._done(scope, exchange, time.perf_counter() - started)

    def _done(self, scope: Scope, exchange: Exchange, seconds: float) -> None:
        if self.metrics is not None and exchange.graphql:
            context = exchange.context
            self.metrics.observe_request(
                exchange.named if context is None else context.operation_name,
                exchange.outcome,
                seconds,
                None if context is None else context.meter,
                exchange.codes,
            )
        if self.request_lines:
            log.info("request", extra={"fields": exchange.fields(scope, seconds)})
