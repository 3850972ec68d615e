"""Cost limits: the estimate as a table, and refusal before anything is read."""

from __future__ import annotations

from typing import Any

import pytest
from graphql import parse

from schema import build_schema
from schema.cost import estimate
from storage.metering import CallBudgetExceeded, Meter
from storage.table import TableRef
from tests.api_helpers import Api, running_api

SCHEMA = build_schema()._schema


@pytest.mark.parametrize(
    ("query", "variables", "expected"),
    [
        # No storage at all.
        ('{ product(productId: "p") { productId } }', None, 0),
        ("{ __typename }", None, 0),
        # Counters: one read.
        ('{ product(productId: "p") { stats { total } } }', None, 1),
        # A page with no filter: counters + one query; fields of the page cost nothing.
        ('{ product(productId: "p") { comments { nodes { body } } } }', None, 2),
        # Three ratings: counters + three queries.
        ('{ product(productId: "p") { comments(ratings: [1, 2, 5]) { totalCount } } }', None, 4),
        # Repeated ratings count once; all five is no filter.
        ('{ product(productId: "p") { comments(ratings: [4, 4]) { totalCount } } }', None, 2),
        (
            '{ product(productId: "p") { comments(ratings: [1, 2, 3, 4, 5]) { totalCount } } }',
            None,
            2,
        ),
        # Nested under a page of 10: each comment's product page runs 10 times.
        (
            '{ product(productId: "p") { comments(first: 10) '
            "{ nodes { product { comments(first: 3) { totalCount } } } } } }",
            None,
            2 + 10 * 2,
        ),
        # Connections under edges multiply the same way; last counts like first.
        (
            '{ product(productId: "p") { comments(last: 4) '
            "{ edges { node { product { stats { total } } } } } } }",
            None,
            2 + 4 * 1,
        ),
        # Leaderboard: one query, then `first` products.
        (
            "{ topProducts(first: 7) { product { stats { total } lastCommentedAt } } }",
            None,
            1 + 7 * 2,
        ),
        # nodes: one lookup per id, fields below per id, through fragments of either type.
        (
            '{ nodes(ids: ["a", "b", "c"]) { ... on Product { stats { total } } ...C } } '
            "fragment C on Comment { product { stats { total } } }",
            None,
            3 + 3 * (1 + 1),
        ),
        # Variables are coerced before counting; first: 0 runs nothing below.
        (
            'query($r: [Int!], $n: Int) { product(productId: "p") '
            "{ comments(ratings: $r, first: $n) { nodes { product { stats { total } } } } } }",
            {"r": [2, 3], "n": 0},
            3,
        ),
        # Aliases each cost.
        (
            '{ a: product(productId: "p") { comments(ratings: [4, 5], first: 1) { totalCount } } '
            'b: product(productId: "p") { comments(ratings: [1, 2], first: 1) { totalCount } } }',
            None,
            3 + 3,
        ),
        (
            'mutation { deleteComment(input: {id: "x"}) { product { stats { total } } } }',
            None,
            2 + 1,
        ),
    ],
)
def test_estimate(query: str, variables: dict[str, Any] | None, expected: int) -> None:
    assert estimate(SCHEMA, parse(query), None, variables) == expected


def test_variables_that_do_not_coerce_are_left_to_execution() -> None:
    query = 'query($n: Int) { product(productId: "p") { comments(first: $n) { totalCount } } }'
    assert estimate(SCHEMA, parse(query), None, {"n": "many"}) is None


def test_the_named_operation_is_the_one_counted() -> None:
    doc = parse(
        'query Cheap { product(productId: "p") { productId } } '
        'query Dear { product(productId: "p") { stats { total } } }'
    )
    assert estimate(SCHEMA, doc, "Cheap", None) == 0
    assert estimate(SCHEMA, doc, "Dear", None) == 1


HEAVY = """
{ topProducts(first: 100) { product { comments(ratings: [1, 2, 3, 4], first: 100)
  { totalCount } } } }"""


async def test_over_budget_is_refused_before_any_read(api: Api) -> None:
    body = await api.gql(HEAVY)
    assert body["data"] is None
    (error,) = body["errors"]
    assert error["extensions"] == {"code": "QUERY_TOO_COMPLEX", "cost": 501, "budget": 500}
    assert "501" in error["message"]
    assert body["extensions"]["storage"]["calls"] == 0


async def test_accepted_requests_report_their_cost(api: Api, product_id: str) -> None:
    body = await api.gql(
        "query($p: ID!) { product(productId: $p) { comments(ratings: [4, 5]) { totalCount } } }",
        {"p": product_id},
    )
    assert "errors" not in body
    assert body["extensions"]["cost"] == {"requested": 3, "budget": 500}


async def test_the_budget_is_configured(table: TableRef, product_id: str) -> None:
    query = "query($p: ID!) { product(productId: $p) { stats { total } lastCommentedAt } }"
    async with running_api(table.client, table.name, max_query_cost=1) as small:
        body = await small.gql(query, {"p": product_id})
    assert body["errors"][0]["extensions"]["code"] == "QUERY_TOO_COMPLEX"
    assert body["errors"][0]["extensions"]["cost"] == 2


def test_the_meter_refuses_calls_beyond_its_budget() -> None:
    meter = Meter(budget=2)
    meter.admit("query")
    meter.admit("query")
    with pytest.raises(CallBudgetExceeded):
        meter.admit("get_item")
    assert (meter.started, meter.refused) == (2, 1)
    Meter().admit("query")  # no budget: no limit
