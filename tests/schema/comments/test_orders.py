"""Sort orders through the API: orderBy on a product's comments, cursors of each order,
and what a cursor of another order gets. (The oracle property test walks every order x
filter in storage; these check the API's wiring.)"""

from __future__ import annotations

from typing import Any

import pytest

from resolvers.auth import mint
from storage.engine.table import TableRef
from storage.model.comments import ListingFilter, NewComment, Order, Vote
from storage.writes import create_comment
from storage.writes.votes import vote_helpful
from tests.api_helpers import SECRET, Api
from tests.helpers import FAST, oracle, stamp

PAGE = """query($p: ID!, $o: CommentOrder!, $r: [Int!], $l: String, $a: String) {
  product(productId: $p) {
    comments(orderBy: $o, ratings: $r, language: $l, first: 3, after: $a) {
      totalCount
      nodes { commentId rating helpfulCount }
      pageInfo { hasNextPage endCursor }
      plan { strategy }
    }
  }
}"""


@pytest.fixture(scope="module")
async def seeded(table: TableRef) -> tuple[str, list[Any]]:
    product_id = "p-orders"
    made = []
    for n in range(14):
        new = NewComment(
            product_id,
            ["en", "de"][n % 2],
            [5, 1, 4, 4, 2][n % 5],
            f"b{n}",
            f"u{n}",
            created_at=stamp(n % 6),
        )
        comment = (await create_comment(table, new, backoff=FAST)).comment
        for voter in range(n % 3):
            comment = (
                await vote_helpful(
                    table, comment.comment_id, voter=f"fan{voter}", vote=Vote.HELPFUL
                )
            ).comment
        made.append(comment)
    return product_id, made


async def walk(api: Api, variables: dict[str, Any]) -> tuple[list[str], set[str]]:
    ids: list[str] = []
    strategies = set()
    after = None
    for _ in range(20):
        data = await api.data(PAGE, {**variables, "a": after})
        connection = data["product"]["comments"]
        ids += [n["commentId"] for n in connection["nodes"]]
        strategies.add(connection["plan"]["strategy"])
        if not connection["pageInfo"]["hasNextPage"]:
            return ids, strategies
        after = connection["pageInfo"]["endCursor"]
    raise AssertionError("the pages never ended")


@pytest.mark.parametrize("order", list(Order))
@pytest.mark.parametrize(("ratings", "language"), [(None, None), ([1, 4], None), (None, "de")])
async def test_every_order_pages_through_its_cursors(
    api: Api,
    seeded: tuple[str, list[Any]],
    order: Order,
    ratings: list[int] | None,
    language: str | None,
) -> None:
    product_id, made = seeded
    listing = ListingFilter(product_id, language, None if ratings is None else frozenset(ratings))
    expected = [c.comment_id for c in oracle(made, listing, order)]
    got, strategies = await walk(
        api, {"p": product_id, "o": order.value, "r": ratings, "l": language}
    )
    assert got == expected
    if order.by_rating:
        assert strategies == {"IN_TURN"}


async def test_a_cursor_of_another_order_is_refused(
    api: Api, seeded: tuple[str, list[Any]]
) -> None:
    product_id, _ = seeded
    first = await api.data(PAGE, {"p": product_id, "o": "MOST_HELPFUL"})
    cursor = first["product"]["comments"]["pageInfo"]["endCursor"]
    for other in ("NEWEST", "OLDEST", "HIGHEST_RATING"):
        body = await api.gql(PAGE, {"p": product_id, "o": other, "a": cursor})
        (error,) = body["errors"]
        assert error["extensions"]["code"] == "BAD_USER_INPUT"
        assert "another listing or order" in error["message"]
        assert body["data"]["product"]["comments"] is None


async def test_the_viewer_sees_their_vote_in_a_helpful_listing(
    api: Api, seeded: tuple[str, list[Any]]
) -> None:
    product_id, _ = seeded
    query = """query($p: ID!) { product(productId: $p) {
      comments(orderBy: MOST_HELPFUL, first: 2) { nodes { helpfulCount viewerVote } } } }"""
    data = await api.data(query, {"p": product_id}, mint(SECRET, "fan0"))
    nodes = data["product"]["comments"]["nodes"]
    assert [n["helpfulCount"] for n in nodes] == [2, 2]
    assert [n["viewerVote"] for n in nodes] == ["HELPFUL", "HELPFUL"]


@pytest.mark.parametrize("order", list(Order))
async def test_every_order_runs_within_its_estimated_cost(
    api: Api, seeded: tuple[str, list[Any]], order: Order
) -> None:
    product_id, _ = seeded
    for after in (None, "deep"):
        variables: dict[str, Any] = {"p": product_id, "o": order.value, "r": [1, 4, 5]}
        if after == "deep":
            first = await api.data(PAGE, variables)
            variables["a"] = first["product"]["comments"]["pageInfo"]["endCursor"]
        body = await api.gql(PAGE, variables)
        assert "errors" not in body, body["errors"]
        storage, cost = body["extensions"]["storage"], body["extensions"]["cost"]
        assert 0 < storage["calls"] <= cost["requested"]
        assert storage["refusedCalls"] == 0
