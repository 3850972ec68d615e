"""Storage faults through a TCP proxy between the app and DynamoDB Local: throttling, 500s,
slow answers, dropped connections. Retried within budget, then STORAGE_UNAVAILABLE within
the request deadline; no partial page; writes exactly once and counters exact."""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import AsyncIterator
from typing import Any

import pytest

from server.dev.local_engine import LocalEngine
from storage.base.types import DynamoClient
from storage.engine.client import ClientSettings, open_client
from storage.engine.table import TableRef
from storage.model.comments import NewComment
from storage.ops.verify import verify
from testing.fault_proxy import Fault, FaultProxy
from tests.api_helpers import Api, running_api, token
from tests.helpers import create_many, own_table, stamp

DEADLINE = 1.0  # STORAGE_TIMEOUT of the app under test
MARGIN = 1.0  # how far past the deadline a request may end (scheduling, retries in flight)
PAGE = """query($pid: ID!, $ratings: [Int!], $first: Int) {
  product(productId: $pid) {
    comments(ratings: $ratings, first: $first) { totalCount nodes { commentId rating } }
  }
}"""
CREATE = """mutation($input: CreateCommentInput!) {
  createComment(input: $input) { created comment { commentId } }
}"""


@pytest.fixture(scope="module")
async def faults_table(table: TableRef) -> TableRef:
    return await own_table(table, "faults")


@pytest.fixture(scope="module")
async def proxy(engine: LocalEngine) -> AsyncIterator[FaultProxy]:
    assert engine.port is not None
    running = await FaultProxy(engine.port, seed=7).start()
    yield running
    await running.stop()


@pytest.fixture(scope="module")
async def proxied(proxy: FaultProxy) -> AsyncIterator[DynamoClient]:
    settings = ClientSettings(
        endpoint_url=proxy.endpoint_url, max_attempts=3, connect_timeout=0.5, read_timeout=0.8
    )
    async with open_client(settings) as client:
        yield client


@pytest.fixture(scope="module")
async def faulty(proxied: DynamoClient, faults_table: TableRef) -> AsyncIterator[Api]:
    """The app through the proxy, with a short storage deadline."""
    async with running_api(proxied, faults_table.name, storage_timeout=DEADLINE) as running:
        yield running


@pytest.fixture(scope="module")
async def patient(proxied: DynamoClient, faults_table: TableRef) -> AsyncIterator[Api]:
    """The same with the default deadline (5 s): room for botocore's retry back-off, which
    waits up to 2**attempt seconds after throttling."""
    async with running_api(proxied, faults_table.name) as running:
        yield running


@pytest.fixture
def clean(proxy: FaultProxy) -> FaultProxy:
    proxy.faults = []
    proxy.injected.clear()
    return proxy


@pytest.fixture(scope="module")
async def product(faults_table: TableRef) -> tuple[str, list[str]]:
    pid = f"f-{uuid.uuid4().hex[:8]}"
    made = await create_many(
        faults_table,
        [
            NewComment(pid, "en", [5, 1, 2][n % 3], f"b{n}", f"u{n}", created_at=stamp(n))
            for n in range(24)
        ],
    )
    return pid, [c.comment_id for c in sorted(made, key=lambda c: c.sort_key, reverse=True)]


async def test_intermittent_faults_are_retried_within_budget(
    patient: Api, clean: FaultProxy, product: tuple[str, list[str]]
) -> None:
    pid, newest_first = product
    clean.faults = [
        Fault("throttle", 0.1),
        Fault("error500", 0.1),
        Fault("drop", 0.05),
        Fault("reset", 0.05),
    ]
    for _ in range(12):
        data = await patient.data(PAGE, {"pid": pid, "first": 10})
        page = data["product"]["comments"]
        assert page["totalCount"] == 24
        assert [n["commentId"] for n in page["nodes"]] == newest_first[:10]
    assert sum(clean.injected.values()) > 0


@pytest.mark.parametrize(
    "fault",
    [
        Fault("throttle"),
        Fault("error500"),
        Fault("drop"),
        Fault("slow", delay=3.0),
        Fault("reset"),
    ],
    ids=lambda f: f.kind,
)
async def test_persistent_faults_are_storage_unavailable_within_the_deadline(
    faulty: Api, clean: FaultProxy, product: tuple[str, list[str]], fault: Fault
) -> None:
    pid, _ = product
    clean.faults = [fault]
    started = time.monotonic()
    body = await faulty.gql(PAGE, {"pid": pid, "ratings": [1, 5]})
    elapsed = time.monotonic() - started
    error = body["errors"][0]
    assert error["extensions"] == {"code": "STORAGE_UNAVAILABLE", "retryable": True}
    # The failing field is null with its error (v2: partial results), never half a page.
    assert error["path"] == ["product", "comments"]
    assert body["data"] == {"product": {"comments": None}}
    assert elapsed < DEADLINE + MARGIN, elapsed
    assert clean.injected[fault.kind] > 0


async def test_one_failing_query_of_a_fan_out_returns_no_partial_page(
    faulty: Api, clean: FaultProxy, product: tuple[str, list[str]]
) -> None:
    pid, _ = product
    # Only the rating-1 query of the fan-out fails (its partition key is in the body).
    clean.faults = [Fault("error500", match=f"{pid}/1".encode())]
    body = await faulty.gql(PAGE, {"pid": pid, "ratings": [1, 5], "first": 20})
    assert body["errors"][0]["extensions"]["code"] == "STORAGE_UNAVAILABLE"
    assert body["data"] == {"product": {"comments": None}}
    assert clean.injected["error500"] > 0
    clean.faults = []
    healed = await faulty.data(PAGE, {"pid": pid, "ratings": [1, 5], "first": 20})
    assert len(healed["product"]["comments"]["nodes"]) == 16


async def _create_until_acknowledged(api: Api, pid: str, n: int) -> tuple[str, int]:
    """A well-behaved client: retries retryable errors with the same idempotency key."""
    variables: dict[str, Any] = {
        "input": {
            "productId": pid,
            "rating": [5, 4, 1][n % 3],
            "language": ["en", "de"][n % 2],
            "body": f"under faults {n}",
            "idempotencyKey": f"key-{n}",
        }
    }
    for attempt in range(30):
        body = await api.gql(CREATE, variables, token(f"writer{n % 5}"))
        if "errors" not in body:
            return body["data"]["createComment"]["comment"]["commentId"], attempt
        assert body["errors"][0]["extensions"].get("retryable") is True, body
        await asyncio.sleep(0.05)
    raise AssertionError(f"create {n} never acknowledged")


async def test_writes_under_faults_land_exactly_once_and_counters_stay_exact(
    faulty: Api, clean: FaultProxy, faults_table: TableRef
) -> None:
    pid = f"w-{uuid.uuid4().hex[:8]}"
    # "reset" forwards the write and drops the answer: the client must retry blind.
    clean.faults = [Fault("reset", 0.15), Fault("throttle", 0.15), Fault("error500", 0.1)]
    results = await asyncio.gather(*(_create_until_acknowledged(faulty, pid, n) for n in range(40)))
    clean.faults = []
    acknowledged = [comment_id for comment_id, _ in results]
    assert len(set(acknowledged)) == 40
    assert clean.injected["reset"] > 0
    assert sum(attempts for _, attempts in results) > 0  # some writes needed retries
    # Everything acknowledged is there once; nothing else is.
    stored: list[str] = []
    after = None
    while True:
        page = await faulty.data(
            """query($pid: ID!, $after: String) { product(productId: $pid) {
                 comments(first: 100, after: $after) {
                   nodes { commentId } pageInfo { hasNextPage endCursor } } } }""",
            {"pid": pid, "after": after},
        )
        comments = page["product"]["comments"]
        stored += [n["commentId"] for n in comments["nodes"]]
        if not comments["pageInfo"]["hasNextPage"]:
            break
        after = comments["pageInfo"]["endCursor"]
    assert sorted(stored) == sorted(acknowledged)
    report = await verify(faults_table)
    assert report.describe() == []
