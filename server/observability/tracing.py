"""OpenTelemetry traces, on when ``OTEL_EXPORTER_OTLP_ENDPOINT`` is set.

A span per HTTP request (``server.observability.middleware``), its parent taken from the request's
``traceparent`` header (W3C trace context, or what ``OTEL_PROPAGATORS`` names), and a
child span per storage call (``TracedClient``), with the DynamoDB operation, the table and
index, the items read and the capacity consumed. Spans leave in batches over OTLP
(http/protobuf); the exporter reads the standard ``OTEL_EXPORTER_OTLP_*`` variables, and
the resource ``OTEL_SERVICE_NAME`` and ``OTEL_RESOURCE_ATTRIBUTES``. Which requests are
traced is the settings' (``OTEL_TRACES_SAMPLER`` and ``OTEL_TRACES_SAMPLER_ARG``, checked
there; by default a request follows its caller's decision, and one of its own is traced at
a ratio, a tenth in production): ``sampler``. While a sampled request runs, its trace and
span ids are the log lines' (``server.observability.logs.TRACE``).

Off, this module is not even imported (``server.http.app`` imports it only when the variable is
set), and a request pays one check.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import orjson
from opentelemetry import context, propagate, trace
from opentelemetry.sdk.resources import SERVICE_NAME, Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor
from opentelemetry.sdk.trace.sampling import (
    ALWAYS_OFF,
    ALWAYS_ON,
    ParentBased,
    Sampler,
    TraceIdRatioBased,
)
from opentelemetry.trace import Span, SpanKind, Status, StatusCode, Tracer
from starlette.types import Scope

from server.observability.logs import TRACE
from server.settings.observability import TracesSampler
from storage.base.types import DynamoClient, Response
from storage.engine.metering import Meter, call_figures
from storage.engine.wrapping import ClientWrapper

# The service name when OTEL_SERVICE_NAME does not give one.
DEFAULT_SERVICE_NAME = "product-comments"
INSTRUMENTATION = "comments"


class Tracing:
    """Where spans go: a tracer provider of this application's own (the process-wide one
    of OpenTelemetry is left alone), closed with the application."""

    def __init__(self, provider: TracerProvider) -> None:
        self.provider = provider
        self.tracer: Tracer = provider.get_tracer(INSTRUMENTATION)

    @classmethod
    def otlp(cls, service_name: str | None, sampled: Sampler) -> Tracing:
        """Spans exported over OTLP (http/protobuf) to ``OTEL_EXPORTER_OTLP_ENDPOINT``, as
        ``service_name`` (``OTEL_SERVICE_NAME``; unset: ours), of the requests ``sampled``
        picks (``sampler``)."""
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

        named = {SERVICE_NAME: service_name or DEFAULT_SERVICE_NAME}
        provider = TracerProvider(resource=Resource.create(named), sampler=sampled)
        provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
        return cls(provider)

    def client(self, inner: DynamoClient) -> DynamoClient:
        """``inner`` with a span for each call made within a traced request."""
        return TracedClient(inner, self.tracer)

    def close(self) -> None:
        """Send what is left and stop the exporter."""
        self.provider.shutdown()

    @contextmanager
    def request_span(self, scope: Scope) -> Iterator[Span]:
        """The span of one HTTP request, current while the block runs, continuing the trace
        its headers name (``traceparent``); it ends with the block."""
        carrier = {
            name.decode("latin-1"): value.decode("latin-1")
            for name, value in scope.get("headers", ())
        }
        parent = propagate.extract(carrier)
        method = str(scope.get("method", ""))
        path = str(scope.get("path", ""))
        span = self.tracer.start_span(
            f"{method} {path}",
            context=parent,
            kind=SpanKind.SERVER,
            attributes={"http.request.method": method, "url.path": path},
        )
        token = context.attach(trace.set_span_in_context(span, parent))
        ids = span.get_span_context()
        logged = TRACE.set(
            (format(ids.trace_id, "032x"), format(ids.span_id, "016x"))
            if ids.trace_flags.sampled
            else None
        )
        try:
            yield span
        except BaseException as exc:
            span.record_exception(exc)
            raise
        finally:
            TRACE.reset(logged)
            context.detach(token)
            span.end()


def sampler(name: TracesSampler, ratio: float) -> Sampler:
    """OpenTelemetry's sampler of that name (``OTEL_TRACES_SAMPLER``'s values), with
    ``ratio`` for the ``traceidratio`` ones."""
    base = name.removeprefix("parentbased_")
    chosen = {
        "always_on": ALWAYS_ON,
        "always_off": ALWAYS_OFF,
        "traceidratio": TraceIdRatioBased(ratio),
    }[base]
    return ParentBased(chosen) if name.startswith("parentbased_") else chosen


def annotate_request(
    span: Span,
    *,
    request_id: str,
    status: int,
    operation: str | None,
    outcome: str | None,
    meter: Meter | None,
) -> None:
    """What a request came to, on its span; ``outcome`` None: not a GraphQL request."""
    span.set_attribute("comments.request_id", request_id)
    span.set_attribute("http.response.status_code", status)
    if outcome is None:
        if status >= 500:
            span.set_status(Status(StatusCode.ERROR))
        return
    span.update_name(f"graphql {operation or 'anonymous'}")
    if operation is not None:
        span.set_attribute("graphql.operation.name", operation)
    span.set_attribute("comments.outcome", outcome)
    if meter is not None:
        span.set_attribute("comments.storage_calls", meter.total_calls)
        span.set_attribute("comments.storage_rounds", meter.rounds)
        span.set_attribute("comments.items_read", meter.items_read)
        span.set_attribute("comments.read_capacity_units", meter.read_capacity)
        span.set_attribute("comments.write_capacity_units", meter.write_capacity)
    if outcome == "internal" or status >= 500:
        span.set_status(Status(StatusCode.ERROR))


def dynamodb_name(operation: str) -> str:
    """``batch_get_item`` as DynamoDB names it: ``BatchGetItem``."""
    return "".join(word.capitalize() for word in operation.split("_"))


def _tables(kwargs: dict[str, Any]) -> list[str]:
    if "TableName" in kwargs:
        return [str(kwargs["TableName"])]
    if "RequestItems" in kwargs:
        return sorted(str(name) for name in kwargs["RequestItems"])
    names: set[str] = set()
    for item in kwargs.get("TransactItems", []):
        for action in item.values():
            if isinstance(action, dict) and "TableName" in action:
                names.add(str(action["TableName"]))
    return sorted(names)


class TracedClient(ClientWrapper):
    """A DynamoClient that makes a span for each call within a recording span (a traced
    request); calls outside one (the health check, start-up) pass through untouched."""

    def __init__(self, inner: DynamoClient, tracer: Tracer) -> None:
        super().__init__(inner)
        self.tracer = tracer

    async def _call(self, operation: str, kwargs: dict[str, Any]) -> Response:
        if not trace.get_current_span().is_recording():
            return await super()._call(operation, kwargs)
        name = dynamodb_name(operation)
        attributes: dict[str, Any] = {
            "db.system.name": "aws.dynamodb",
            "db.operation.name": name,
            "rpc.system": "aws-api",
            "rpc.service": "DynamoDB",
            "rpc.method": name,
        }
        tables = _tables(kwargs)
        if tables:
            attributes["aws.dynamodb.table_names"] = tables
        if "IndexName" in kwargs:
            attributes["aws.dynamodb.index_name"] = str(kwargs["IndexName"])
        if "Limit" in kwargs:
            attributes["aws.dynamodb.limit"] = int(kwargs["Limit"])
        target = kwargs.get("IndexName") or (tables[0] if len(tables) == 1 else None)
        span_name = f"{name} {target}" if target else name
        with self.tracer.start_as_current_span(
            span_name, kind=SpanKind.CLIENT, attributes=attributes
        ) as span:
            response = await super()._call(operation, kwargs)
            items, reads, writes = call_figures(operation, response)
            span.set_attribute("comments.items_read", items)
            span.set_attribute("comments.read_capacity_units", reads)
            span.set_attribute("comments.write_capacity_units", writes)
            for key, attribute in (("Count", "count"), ("ScannedCount", "scanned_count")):
                if key in response:
                    span.set_attribute(f"aws.dynamodb.{attribute}", int(response[key]))
            capacity = response.get("ConsumedCapacity")
            if capacity:
                entries = capacity if isinstance(capacity, list) else [capacity]
                span.set_attribute(
                    "aws.dynamodb.consumed_capacity",
                    [orjson.dumps(entry).decode() for entry in entries],
                )
            return response
