"""Per-request memory and CPU stay bounded for hostile shapes, against a live server.

500 requests of the shapes the issue "Exact under attack" measured: unique documents padded
with a 300 KB comment (which the parser cache kept), the fragment bomb (exponential in the
depth rule and the estimator), a 300,000-entry list variable (coerced twice) and the
null-into-non-null cost bypass (about 10,000 queries). The server's resident memory may
grow by at most RSS_GROWTH_MAX over them, and /healthz must still answer. (The loop stays
responsive by construction: every one of them is refused before any real work; timings are
measured apart, never asserted.)
"""

from __future__ import annotations

import base64
import itertools
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from server.dev.local_engine import LocalEngine
from storage.engine.table import TableRef
from storage.model.comments import NewComment
from testing.live_server import LiveServer, live_server, rss_bytes
from tests.api_helpers import SECRET
from tests.helpers import create_many, own_table, stamp

PRODUCT = "sku-resources"
REQUESTS = 500
# What 500 refusals may leave behind in a process of about 100 MB: allocator slack and
# caches that are bounded anyway (the parser cache stops at 32 MiB of documents, and these
# documents are too large for it). Before the fixes the padded documents alone kept about
# 0.6 MB each in the parser and validation caches: 125 of them, some 75 MB.
RSS_GROWTH_MAX = 50 * 1024 * 1024


def _padded(n: int) -> dict[str, Any]:
    return {"query": f"{{ __typename }} # {n:08d} {'x' * 300_000}\n"}


def _bomb(_: int) -> dict[str, Any]:
    parts = ["fragment F0 on Query { __typename }"]
    parts += [f"fragment F{n} on Query {{ ...F{n - 1} ...F{n - 1} }}" for n in range(1, 40)]
    return {"query": "{ ...F39 } " + " ".join(parts)}


def _big_list(_: int) -> dict[str, Any]:
    return {
        "query": "query($p: ID!, $r: [Int!]) { product(productId: $p) "
        "{ comments(ratings: $r) { totalCount } } }",
        "variables": {"p": PRODUCT, "r": [1, 2, 3, 4, 5] * 60_000},
    }


def _bypass(_: int) -> dict[str, Any]:
    product = base64.b64encode(f"Product:{PRODUCT}".encode()).decode()
    return {
        "query": """query($c: ID = "x", $ids: [ID!]!) {
          bad: comment(commentId: $c) { title }
          nodes(ids: $ids) { ... on Product { comments(first: 100) { nodes { product {
            comments(first: 100) { nodes { title body } } } } } } } }""",
        "variables": {"c": None, "ids": [product] * 100},
    }


SHAPES = [_padded, _bomb, _big_list, _bypass]


@pytest.fixture(scope="module")
async def resources_table(table: TableRef) -> TableRef:
    own = await own_table(table, "resources")
    await create_many(
        own,
        [
            NewComment(PRODUCT, "en", 1 + n % 5, f"body {n}", f"u{n}", created_at=stamp(n))
            for n in range(30)
        ],
    )
    return own


@pytest.fixture(scope="module")
def server(engine: LocalEngine, resources_table: TableRef) -> Iterator[LiveServer]:
    with live_server(
        engine.endpoint_url, resources_table.name, SECRET, PRODUCTION="true"
    ) as running:
        yield running


def _send(http: httpx.Client, server: LiveServer, n: int) -> None:
    shape = SHAPES[n % len(SHAPES)]
    response = http.post(server.graphql_url, json=shape(n))
    assert response.status_code in (200, 400), response.text[:300]
    body = response.json()
    if shape is _padded:
        assert body["data"] == {"__typename": "Query"}
    else:
        # Refused before anything is read.
        assert body.get("data") is None, (shape.__name__, str(body)[:300])
        assert body["errors"][0]["extensions"]["code"] == "QUERY_TOO_COMPLEX", body["errors"]
    assert body.get("extensions", {}).get("storage", {}).get("calls", 0) == 0


@pytest.mark.slow
def test_hostile_requests_leave_memory_and_health_alone(server: LiveServer) -> None:
    with httpx.Client(timeout=60) as http:
        counter = itertools.count()
        for _ in range(4 * len(SHAPES)):  # warm up: first-use allocations are not growth
            _send(http, server, next(counter))
        before = rss_bytes(server.pid)
        for _ in range(REQUESTS):
            _send(http, server, next(counter))
        after = rss_bytes(server.pid)
        health = http.get(f"{server.base_url}/healthz")
    assert health.status_code == 200
    assert health.json()["status"] == "ok"
    assert health.json()["storage"] == "up"
    assert after - before < RSS_GROWTH_MAX, (before, after)
