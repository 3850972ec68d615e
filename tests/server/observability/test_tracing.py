"""Traces: a span per request continuing the caller's trace, a child span per storage call;
the request's log lines carry its trace; a ratio sampler, checked at start like every
setting."""

from __future__ import annotations

import io
import json
import logging
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from typing import Any

import httpx
import pytest
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.sdk.trace.sampling import (
    ALWAYS_OFF,
    ALWAYS_ON,
    ParentBased,
    Sampler,
    TraceIdRatioBased,
)
from opentelemetry.trace import SpanKind
from pydantic import ValidationError

from server.cli import main
from server.http.app import create_app
from server.observability.logs import JsonFormatter
from server.observability.tracing import Tracing, sampler
from server.settings import Settings
from storage.engine.table import TableRef
from tests.api_helpers import SECRET

TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736"
PARENT_ID = "00f067aa0ba902b7"
PAGE = """query ProductPage {
  product(productId: "tracing-none") { stats { total } comments(first: 5) { totalCount } } }"""


@asynccontextmanager
async def traced(
    table: TableRef, **overrides: Any
) -> AsyncIterator[tuple[httpx.AsyncClient, InMemorySpanExporter]]:
    exporter = InMemorySpanExporter()
    # As the server samples in development: the caller's decision, else every request.
    provider = TracerProvider(sampler=sampler("parentbased_traceidratio", 1.0))
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    settings = Settings(
        dynamodb_endpoint_url="http://unused.invalid",
        dynamodb_table=table.name,
        jwt_secret=SECRET,
        gc_freeze=False,
        metrics="off",
        **overrides,
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


@contextmanager
def request_lines() -> Iterator[io.StringIO]:
    """The request lines (comments.requests) as LOG_FORMAT=json writes them."""
    written = io.StringIO()
    handler = logging.StreamHandler(written)
    handler.setFormatter(JsonFormatter())
    logger = logging.getLogger("comments.requests")
    logger.addHandler(handler)
    level = logger.level
    logger.setLevel(logging.INFO)
    try:
        yield written
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)


async def test_a_sampled_requests_log_lines_carry_its_trace(table: TableRef) -> None:
    json_lines = {"log_format": "json", "access_log": True}
    with request_lines() as written:
        async with traced(table, **json_lines) as (http, exporter):
            sampled = await http.post(
                "/graphql",
                json={"query": PAGE},
                headers={"traceparent": f"00-{TRACE_ID}-{PARENT_ID}-01"},
            )
            # The caller decided against tracing it: no span, and no trace to lead to.
            unsampled = await http.post(
                "/graphql",
                json={"query": PAGE},
                headers={"traceparent": f"00-{'5' * 32}-{PARENT_ID}-00"},
            )
            spans = _server_spans(exporter.get_finished_spans())
    lines = {
        entry["request_id"]: entry
        for entry in map(json.loads, written.getvalue().splitlines())
        if entry["message"] == "request"
    }
    [span] = spans
    assert span.context is not None
    line = lines[sampled.headers["x-request-id"]]
    assert line["trace_id"] == TRACE_ID
    assert line["span_id"] == format(span.context.span_id, "016x")
    quiet = lines[unsampled.headers["x-request-id"]]
    assert "trace_id" not in quiet
    assert "span_id" not in quiet


def _described(chosen: Sampler) -> str:
    return chosen.get_description()


def test_a_ratio_sampler_follows_the_caller_and_samples_the_rest_at_its_ratio() -> None:
    assert _described(sampler("parentbased_traceidratio", 0.1)) == _described(
        ParentBased(TraceIdRatioBased(0.1))
    )
    assert _described(sampler("traceidratio", 0.25)) == _described(TraceIdRatioBased(0.25))
    assert sampler("always_off", 1.0) is ALWAYS_OFF
    assert _described(sampler("parentbased_always_on", 1.0)) == _described(ParentBased(ALWAYS_ON))


def test_production_samples_a_tenth_and_development_every_request() -> None:
    production: dict[str, Any] = {
        "production": True,
        "dynamodb_endpoint_url": "http://db:8000",
        "author_id_key": SECRET,
    }
    assert Settings(jwt_secret=SECRET).traces_sampler == ("parentbased_traceidratio", 1.0)
    assert Settings(jwt_secret=SECRET, **production).traces_sampler == (
        "parentbased_traceidratio",
        0.1,
    )
    assert Settings(
        jwt_secret=SECRET, otel_traces_sampler_arg=0.5, **production
    ).traces_sampler == ("parentbased_traceidratio", 0.5)
    assert Settings(jwt_secret=SECRET, otel_traces_sampler="always_on").traces_sampler[0] == (
        "always_on"
    )


@pytest.mark.parametrize(
    ("variables", "problem"),
    [
        ({"OTEL_TRACES_SAMPLER": "sometimes"}, "error: OTEL_TRACES_SAMPLER: Input should be "),
        ({"OTEL_TRACES_SAMPLER_ARG": "1.5"}, "error: OTEL_TRACES_SAMPLER_ARG: Input should be "),
        (
            {"OTEL_TRACES_SAMPLER_ARG": "a tenth"},
            "error: OTEL_TRACES_SAMPLER_ARG: Input should be ",
        ),
        (
            {"OTEL_TRACES_SAMPLER": "always_on", "OTEL_TRACES_SAMPLER_ARG": "0.5"},
            "error: OTEL_TRACES_SAMPLER_ARG is a ratio: OTEL_TRACES_SAMPLER=always_on takes none",
        ),
    ],
    ids=["unknown-sampler", "ratio-over-one", "ratio-not-a-number", "ratio-without-ratio-sampler"],
)
def test_serve_refuses_a_sampler_it_cannot_use_in_one_line(
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    variables: dict[str, str],
    problem: str,
) -> None:
    for name in Settings.model_fields:
        monkeypatch.delenv(name.upper(), raising=False)
    for name, value in variables.items():
        monkeypatch.setenv(name, value)
    assert main(["serve"]) == 2
    err = capsys.readouterr().err
    assert err.startswith(problem), err
    assert err.count("\n") == 1, err
    with pytest.raises(ValidationError):
        Settings()
