"""Traces: a span per request continuing the caller's trace, a child span per storage call."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import httpx
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind

from server.http.app import create_app
from server.observability.tracing import Tracing
from server.settings import Settings
from storage.engine.table import TableRef
from tests.api_helpers import SECRET

TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736"
PARENT_ID = "00f067aa0ba902b7"
PAGE = """query ProductPage {
  product(productId: "tracing-none") { stats { total } comments(first: 5) { totalCount } } }"""


@asynccontextmanager
async def traced(table: TableRef) -> AsyncIterator[tuple[httpx.AsyncClient, InMemorySpanExporter]]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    settings = Settings(
        dynamodb_endpoint_url="http://unused.invalid",
        dynamodb_table=table.name,
        jwt_secret=SECRET,
        gc_freeze=False,
        metrics="off",
    )
    app = create_app(settings, client=table.client, tracing=Tracing(provider))
    async with (
        app.router.lifespan_context(app),
        httpx.AsyncClient(
            transport=httpx.ASGITransport(app=app), base_url="http://api.test"
        ) as http,
    ):
        yield http, exporter


def _server_spans(spans: tuple[ReadableSpan, ...]) -> list[ReadableSpan]:
    return [s for s in spans if s.kind == SpanKind.SERVER]


async def test_a_request_continues_the_callers_trace_with_a_span_per_storage_call(
    table: TableRef,
) -> None:
    async with traced(table) as (http, exporter):
        response = await http.post(
            "/graphql",
            json={"query": PAGE},
            headers={"traceparent": f"00-{TRACE_ID}-{PARENT_ID}-01"},
        )
        body = response.json()
        assert "errors" not in body, body
        spans = exporter.get_finished_spans()

    [request] = _server_spans(spans)
    assert request.context is not None
    assert request.parent is not None
    assert format(request.context.trace_id, "032x") == TRACE_ID
    assert format(request.parent.span_id, "016x") == PARENT_ID
    assert request.name == "graphql ProductPage"
    attributes = dict(request.attributes or {})
    assert attributes["graphql.operation.name"] == "ProductPage"
    assert attributes["comments.outcome"] == "ok"
    assert attributes["comments.request_id"] == response.headers["x-request-id"]
    calls = [s for s in spans if s.kind == SpanKind.CLIENT]
    # One span per storage call, each a child of the request's span in the same trace.
    assert (
        len(calls) == body["extensions"]["storage"]["calls"] == attributes["comments.storage_calls"]
    )
    for call in calls:
        assert call.parent is not None
        assert call.context is not None
        assert call.parent.span_id == request.context.span_id
        assert call.context.trace_id == request.context.trace_id
        found = dict(call.attributes or {})
        assert found["db.system.name"] == "aws.dynamodb"
        assert found["aws.dynamodb.table_names"] == (table.name,)
        assert "comments.items_read" in found
        assert "comments.read_capacity_units" in found
    operations = {dict(c.attributes or {})["db.operation.name"] for c in calls}
    assert "Query" in operations
    indexed = [c for c in calls if "aws.dynamodb.index_name" in (c.attributes or {})]
    assert indexed, [c.name for c in calls]


async def test_without_a_traceparent_each_request_starts_a_trace(table: TableRef) -> None:
    async with traced(table) as (http, exporter):
        for _ in range(2):
            await http.post("/graphql", json={"query": "{ __typename }"})
        await http.post("/graphql", json={"query": "{"})
        spans = _server_spans(exporter.get_finished_spans())
    assert len(spans) == 3
    assert all(s.parent is None for s in spans)
    assert len({s.context.trace_id for s in spans if s.context is not None}) == 3
    outcomes = [dict(s.attributes or {})["comments.outcome"] for s in spans]
    assert outcomes == ["ok", "ok", "request_error"]
    assert spans[0].name == "graphql anonymous"


def test_tracing_is_off_without_an_endpoint() -> None:
    assert not Settings(jwt_secret=SECRET).tracing_on
    assert not Settings(jwt_secret=SECRET, otel_exporter_otlp_endpoint="").tracing_on
    assert Settings(jwt_secret=SECRET, otel_exporter_otlp_endpoint="http://c:4318").tracing_on
