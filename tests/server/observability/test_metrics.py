"""Prometheus metrics: a scrape after known requests shows exactly what they did; operation
names are bounded; the subscription and stream functions report through /metrics; the
process exports its build, CPU and memory; storage's throttling and retries are counted;
the production posture keeps /metrics off the public port."""

from __future__ import annotations

import os
import re
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest
from botocore.exceptions import ClientError

from resolvers.auth import mint
from server.dev.local_engine import free_port
from server.http.app import create_app
from server.http.persisted import sha256_hex
from server.observability import metrics
from server.observability.build import version
from server.observability.metrics import OPERATION_NAME, BoundedLabel
from server.settings import Settings
from storage.base.types import DynamoClient, Response
from storage.engine.table import TableRef
from storage.engine.wrapping import ClientWrapper
from storage.model.groups import membership_key
from testing.scrape import Samples, parse_scrape
from testing.scrape import sample as value
from tests.api_helpers import SECRET

ROOT = Path(__file__).resolve().parents[3]
METRIC_NAME = re.compile(r"\bcomments_[a-z_]+")

STATS = 'query ProductStats { product(productId: "metrics-none") { stats { total } } }'
POST = """mutation Post {
  createComment(input: {productId: "metrics-none", rating: 4, language: "en", body: "Hi"}) {
    created } }"""


def total(samples: Samples, name: str) -> float:
    return sum(v for (n, _), v in samples.items() if n == name)


def settings(table: TableRef, **overrides: Any) -> Settings:
    return Settings(
        dynamodb_endpoint_url="http://unused.invalid",
        dynamodb_table=table.name,
        jwt_secret=SECRET,
        author_id_key=SECRET,
        gc_freeze=False,
        **overrides,
    )


@asynccontextmanager
async def serving(
    table: TableRef, client: DynamoClient | None = None, **overrides: Any
) -> AsyncIterator[httpx.AsyncClient]:
    """A fresh application (fresh metrics) over the session's table (through ``client``
    when given)."""
    app = create_app(settings(table, **overrides), client=client or table.client)
    async with (
        app.router.lifespan_context(app),
        httpx.AsyncClient(
            transport=httpx.ASGITransport(app=app), base_url="http://api.test"
        ) as http,
    ):
        yield http


async def scrape(http: httpx.AsyncClient) -> Samples:
    response = await http.get("/metrics")
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith("text/plain; version=")
    return parse_scrape(response.text)


async def test_a_scrape_counts_exactly_the_requests_made(table: TableRef) -> None:
    async with serving(table) as http:
        calls = items = 0
        units = 0.0
        for _ in range(3):
            body = (await http.post("/graphql", json={"query": STATS})).json()
            assert "errors" not in body, body
            storage = body["extensions"]["storage"]
            calls += storage["calls"]
            items += storage["itemsRead"]
            units += storage["readCapacityUnits"]
        assert calls > 0
        # Without a token: executed, with an UNAUTHENTICATED error.
        answer = await http.post("/graphql", json={"query": POST})
        assert answer.json()["errors"][0]["extensions"]["code"] == "UNAUTHENTICATED"
        # A document that does not parse: nothing executed.
        await http.post("/graphql", json={"query": "query Broken {"})
        # Not JSON: refused before GraphQL.
        await http.post("/graphql", content=b"{", headers={"content-type": "application/json"})
        # Too large: refused before the view reads it.
        large = await http.post("/graphql", content=b" " * 2_000_000)
        assert large.status_code == 413
        # A CORS preflight and the GraphiQL page are not GraphQL requests.
        await http.options("/graphql")
        assert (await http.get("/graphql", headers={"accept": "text/html"})).status_code == 200
        samples = await scrape(http)

    count = "comments_graphql_request_duration_seconds_count"
    assert value(samples, count, operation="ProductStats", outcome="ok") == 3
    assert value(samples, count, operation="Post", outcome="error") == 1
    assert value(samples, count, operation="anonymous", outcome="request_error") == 1
    assert value(samples, count, operation="anonymous", outcome="refused") == 2
    assert total(samples, count) == 7
    assert value(samples, "comments_graphql_errors_total", code="UNAUTHENTICATED") == 1
    assert value(samples, "comments_graphql_errors_total", code="BAD_USER_INPUT") == 2
    # Storage figures: one observation per request that got a context, and the calls
    # each reported in its extensions.
    assert value(samples, "comments_storage_rounds_count", operation="ProductStats") == 3
    assert value(samples, "comments_storage_items_read_count", operation="ProductStats") == 3
    assert total(samples, "comments_storage_calls_total") == calls
    stats = {"operation": "ProductStats"}
    assert 3 <= value(samples, "comments_storage_rounds_sum", **stats) <= calls
    assert value(samples, "comments_storage_items_read_sum", **stats) == items
    read_units = value(samples, "comments_storage_read_capacity_units_sum", **stats)
    assert read_units == pytest.approx(units, abs=0.01)
    assert value(samples, "comments_storage_write_capacity_units_sum", operation="Post") == 0


async def test_cache_lookups_and_persisted_queries_are_counted(table: TableRef) -> None:
    digest = {"persistedQuery": {"version": 1, "sha256Hash": sha256_hex(STATS)}}
    async with serving(table) as http:
        await http.post("/graphql", json={"query": STATS})
        await http.post("/graphql", json={"query": STATS})
        missed = await http.post("/graphql", json={"extensions": digest})
        assert missed.json()["errors"][0]["extensions"]["code"] == "PERSISTED_QUERY_NOT_FOUND"
        await http.post("/graphql", json={"query": STATS, "extensions": digest})
        for _ in range(2):
            found = await http.post("/graphql", json={"extensions": digest})
            assert "errors" not in found.json(), found.json()
        samples = await scrape(http)

    lookups = "comments_cache_lookups_total"
    # Three requests ran the text (twice plain, once to register it), two by its hash.
    assert value(samples, lookups, cache="documents", result="miss") == 1
    assert value(samples, lookups, cache="documents", result="hit") == 4
    assert value(samples, lookups, cache="validated", result="miss") == 1
    assert value(samples, lookups, cache="validated", result="hit") == 4
    persisted = "comments_persisted_queries_total"
    assert value(samples, persisted, result="miss") == 1
    assert value(samples, persisted, result="registered") == 1
    assert value(samples, persisted, result="hit") == 2
    assert value(samples, "comments_graphql_errors_total", code="PERSISTED_QUERY_NOT_FOUND") == 1
    count = "comments_graphql_request_duration_seconds_count"
    assert value(samples, count, operation="ProductStats", outcome="ok") == 5
    assert value(samples, count, operation="anonymous", outcome="refused") == 1


async def test_operation_names_are_bounded(table: TableRef) -> None:
    long_name = "Q" * 65
    names = ["First", "Second", "Third", "First", long_name]
    async with serving(table, metrics_operations=2) as http:
        for name in names:
            query = f'query {name} {{ product(productId: "x") {{ productId }} }}'
            await http.post("/graphql", json={"query": query})
        await http.post("/graphql", json={"query": '{ product(productId: "x") { productId } }'})
        # A name sent in operationName that no operation has: a request error, and the
        # free text the client sent is not a label.
        await http.post(
            "/graphql", json={"query": "query First { __typename }", "operationName": "x y"}
        )
        samples = await scrape(http)

    count = "comments_graphql_request_duration_seconds_count"
    labelled: dict[str, float] = {}
    for (name, labels), n in samples.items():
        if name == count:
            operation = dict(labels)["operation"]
            labelled[operation] = labelled.get(operation, 0) + n
    assert labelled == {"First": 2, "Second": 1, "other": 3, "anonymous": 1}


def test_a_bounded_label_admits_names_until_its_limit() -> None:
    label = BoundedLabel(OPERATION_NAME, 2)
    assert [label(v) for v in ("a", "b", "c", "a", None, "1x", "b")] == [
        "a",
        "b",
        "other",
        "a",
        "anonymous",
        "other",
        "b",
    ]


async def test_subscription_and_stream_functions_show_in_the_scrape(table: TableRef) -> None:
    # Without a running application they do nothing, and do not fail.
    metrics.subscriptions_open(7)
    metrics.stream_lag(9.0)
    metrics.subscription_ended("TOO_SLOW")
    metrics.http_refused("max_connections")
    metrics.websocket_refused("per_address")
    metrics.StorageWatcher().throttled("query")
    async with serving(table) as http:
        before = await scrape(http)
        metrics.subscriptions_open(3)
        metrics.subscriptions_open(2)
        metrics.stream_lag(2.5)
        metrics.stream_events(40)
        metrics.stream_events()
        metrics.stream_gaps()
        metrics.subscription_ended("TOO_SLOW")
        metrics.subscription_ended("EVENTS_LOST")
        metrics.subscription_ended("EVENTS_LOST")
        metrics.http_refused("max_connections")
        metrics.websocket_refused("per_address")
        watcher = metrics.StorageWatcher()
        watcher.throttled("query")
        watcher.retried("sdk", 2)
        watcher.retried("unprocessed", 0)
        samples = await scrape(http)
    assert value(samples, "comments_subscriptions_open") == 2
    assert value(samples, "comments_stream_lag_seconds") == 2.5
    assert value(samples, "comments_stream_events_total") == 41
    assert value(samples, "comments_stream_gaps_total") == 1
    ended = "comments_subscriptions_ended_total"
    assert value(samples, ended, code="TOO_SLOW") == 1
    assert value(samples, ended, code="EVENTS_LOST") == 2
    assert value(samples, "comments_http_refusals_total", reason="max_connections") == 1
    assert value(samples, "comments_websocket_refusals_total", reason="per_address") == 1
    assert value(samples, "comments_storage_throttles_total", operation="query") == 1
    assert value(samples, "comments_storage_retries_total", reason="sdk") == 2
    assert value(samples, "comments_storage_retries_total", reason="unprocessed") == 0
    # Label values known in advance are there at 0 before anything happens, so that the
    # first event shows as an increase.
    for reason in ("max_connections", "head_too_large", "head_timeout"):
        assert ("comments_http_refusals_total", frozenset({("reason", reason)})) in before
    assert ("comments_subscriptions_ended_total", frozenset({("code", "TOO_SLOW")})) in before
    # Once the application has stopped, they do nothing again.
    metrics.subscriptions_open(1)


async def test_the_process_exports_its_build_cpu_and_memory(table: TableRef) -> None:
    pid = str(os.getpid())
    cpu, memory = "comments_process_cpu_seconds_total", "comments_process_resident_memory_bytes"
    async with serving(table) as http:
        first = await scrape(http)
        # Work the next scrape must show: CPU time, and 64 MB written (resident, not only
        # reserved).
        spent = time.process_time() + 0.2
        while time.process_time() < spent:
            sum(range(10_000))
        held = b"x" * (64 << 20)
        second = await scrape(http)
        del held
    assert value(first, "comments_build_info", version=version()) == 1
    assert version() != "unknown"  # scripts/setup installs the project into .venv
    assert value(first, cpu, pid=pid) > 0
    assert value(second, cpu, pid=pid) - value(first, cpu, pid=pid) >= 0.2
    assert value(second, memory, pid=pid) - value(first, memory, pid=pid) >= 60 << 20
    # One process: nothing to restart.
    assert value(second, "comments_worker_restarts_total") == 0


def _client_error(code: str, retries: int, **extra: Any) -> ClientError:
    error: dict[str, Any] = {
        "Error": {"Code": code, "Message": "from the test"},
        "ResponseMetadata": {"RetryAttempts": retries},
        **extra,
    }
    return ClientError(error, "Call")


class Throttling(ClientWrapper):
    """DynamoDB as it answers when it throttles: reads throttled after two SDK retries,
    transactions cancelled by a conflict. Other calls go through."""

    def __init__(self, inner: DynamoClient) -> None:
        super().__init__(inner)
        self.calls: list[str] = []

    async def _call(self, operation: str, kwargs: dict[str, Any]) -> Response:
        # A create reads the shop's taxonomy head (to tag topics) and its product's group
        # once per process (storage.writes.membership): let both through, so that the
        # write reaches its transactions.
        taxonomy = kwargs.get("Key", {}).get("PK", {}).get("S") == "TAXONOMY"
        if operation == "get_item" and (
            taxonomy or kwargs["Key"] == membership_key("metrics-none")
        ):
            return await super()._call(operation, kwargs)
        if operation in ("get_item", "batch_get_item", "query"):
            self.calls.append(operation)
            raise _client_error("ProvisionedThroughputExceededException", 2)
        if operation == "transact_write_items":
            self.calls.append(operation)
            reasons = [{"Code": "TransactionConflict"}] + [{"Code": "None"}] * 3
            raise _client_error("TransactionCanceledException", 0, CancellationReasons=reasons)
        return await super()._call(operation, kwargs)


async def test_storage_throttling_and_retries_are_counted(table: TableRef) -> None:
    throttling = Throttling(table.client)
    token = mint(SECRET, "metrics-writer")
    async with serving(table, client=throttling) as http:
        read = (await http.post("/graphql", json={"query": STATS})).json()
        assert read["errors"][0]["extensions"]["code"] == "STORAGE_UNAVAILABLE"
        reads = len(throttling.calls)
        assert reads >= 1
        headers = {"authorization": f"Bearer {token}"}
        write = (await http.post("/graphql", json={"query": POST}, headers=headers)).json()
        assert write["errors"][0]["extensions"]["code"] == "CONFLICT", write
        samples = await scrape(http)
    writes = throttling.calls[reads:]
    assert set(writes) == {"transact_write_items"}
    throttled = {
        operation: value(samples, "comments_storage_throttles_total", operation=operation)
        for operation in set(throttling.calls[:reads])
    }
    assert throttled == {o: throttling.calls[:reads].count(o) for o in throttled}
    retries = "comments_storage_retries_total"
    assert value(samples, retries, reason="sdk") == 2 * reads
    # Each cancelled transaction is written again, until the attempts run out.
    assert value(samples, retries, reason="transaction") == len(writes) > 1
    assert value(samples, "comments_storage_throttles_total", operation="transact_write_items") == 0


async def test_metrics_off_serves_nothing(table: TableRef) -> None:
    async with serving(table, metrics="off") as http:
        assert (await http.get("/metrics")).status_code == 404
        body = (await http.post("/graphql", json={"query": STATS})).json()
        assert "errors" not in body


async def test_production_keeps_metrics_off_the_public_port(table: TableRef) -> None:
    port = free_port()
    async with serving(table, production=True, metrics_port=port) as http:
        assert (await http.get("/metrics")).status_code == 404
        await http.post("/graphql", json={"query": STATS})
        async with httpx.AsyncClient() as scraper:
            response = await scraper.get(f"http://127.0.0.1:{port}/metrics")
        assert response.status_code == 200
        samples = parse_scrape(response.text)
    count = "comments_graphql_request_duration_seconds_count"
    assert value(samples, count, operation="ProductStats", outcome="ok") == 1


def test_metrics_settings() -> None:
    endpoint: dict[str, Any] = {
        "dynamodb_endpoint_url": "http://db.invalid",
        "jwt_secret": SECRET,
        "author_id_key": SECRET,
    }
    assert Settings(**endpoint).metrics_mode == "on"
    assert Settings(production=True, **endpoint).metrics_mode == "port"
    assert Settings(production=True, metrics="off", **endpoint).metrics_mode == "off"
    with pytest.raises(ValueError, match="METRICS_PORT must differ from PORT"):
        Settings(production=True, port=9464, **endpoint)
    assert Settings(metrics="on", port=9464, **endpoint).metrics_mode == "on"
