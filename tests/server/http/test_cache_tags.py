"""Cache tags on public answers: Surrogate-Key and Cache-Tag name exactly the products,
groups, comments and shop-wide things (the leaderboard, membership) an answer read, within
bounds (``all`` instead beyond them); errors, refusals and private answers carry none."""

from __future__ import annotations

import json
import uuid

import httpx
import pytest
from strawberry import relay

from resolvers.read_set import ALL
from server.http.cache_tags import MAX_TAG_BYTES, MAX_TAGS, bounded, tag_headers
from storage.base.errors import InvalidInput
from storage.engine.table import TableRef
from storage.model import rules
from storage.model.comments import NewComment
from storage.ops.group_move import move_product
from tests.api_helpers import Api, token
from tests.helpers import FAST, create_many


async def get(
    api: Api, query: str, variables: dict[str, object] | None = None, **headers: str
) -> httpx.Response:
    params = {"query": query, "variables": json.dumps(variables or {})}
    return await api.http.get("/graphql", params=params, headers=headers)


def tags_of(response: httpx.Response) -> list[str]:
    """The tags, after checking both headers carry the same ones."""
    assert response.status_code == 200, response.text
    assert response.headers["cache-control"].startswith("public"), response.headers
    surrogate = response.headers["surrogate-key"].split(" ")
    assert response.headers["cache-tag"].split(",") == surrogate
    return surrogate


def test_the_bounds() -> None:
    assert bounded(["p:a", "p:a", "g:b"]) == ["p:a", "g:b"]
    many = [f"p:{n}" for n in range(MAX_TAGS)]
    assert bounded(many) == many
    assert bounded([*many, "p:x"]) == [ALL]
    long = [f"p:{n:0128d}" for n in range(MAX_TAG_BYTES // 130)]
    assert bounded(long, max_tags=10_000) == [ALL]
    fits = long[: MAX_TAG_BYTES // 131]
    assert bounded(fits, max_tags=10_000) == fits
    assert bounded(["p:a", ALL]) == [ALL]
    assert tag_headers([]) == {}
    assert tag_headers(["p:a", "leaders"]) == {
        "surrogate-key": "p:a leaders",
        "cache-tag": "p:a,leaders",
    }


@pytest.mark.parametrize("product_id", ["A", "a.b_c:d-9", "9" * rules.PRODUCT_ID_MAX])
def test_ids_need_no_escaping_in_either_header(product_id: str) -> None:
    valid = rules.validate_product_id(product_id)
    tag = "p:" + valid
    assert all(33 <= ord(ch) <= 126 for ch in tag)  # visible ASCII: no space, no control
    assert "," not in tag
    assert '"' not in tag
    assert len(tag) <= 256  # CloudFront's limit on one tag, the strictest


@pytest.mark.parametrize("bad", ["a b", "a,b", "a\tb", "é"])
def test_ids_that_would_need_escaping_are_refused(bad: str) -> None:
    with pytest.raises(InvalidInput):
        rules.validate_product_id(bad)


async def test_a_product_page_is_tagged_with_its_product_and_comments(
    api: Api, table: TableRef, product_id: str
) -> None:
    made = await create_many(
        table, [NewComment(product_id, "en", 4, f"body {n}", f"u{n}") for n in range(3)]
    )
    query = """query($pid: ID!) { product(productId: $pid) { stats { total }
      comments(first: 10) { edges { node { commentId } } } } }"""
    tags = tags_of(await get(api, query, {"pid": product_id}))
    assert set(tags) == {f"p:{product_id}"} | {f"c:{c.comment_id}" for c in made}
    assert tags[0] == f"p:{product_id}"


async def test_counters_alone_are_tagged_with_the_product(api: Api, product_id: str) -> None:
    query = "query($pid: ID!) { product(productId: $pid) { stats { total } } }"
    assert tags_of(await get(api, query, {"pid": product_id})) == [f"p:{product_id}"]


async def test_a_comment_by_id_or_node_is_tagged_with_it_and_its_product(
    api: Api, table: TableRef, product_id: str
) -> None:
    (made,) = await create_many(table, [NewComment(product_id, "en", 5, "one", "ann")])
    expected = {f"c:{made.comment_id}", f"p:{product_id}"}
    by_id = "query($c: ID!) { comment(commentId: $c) { body } }"
    assert set(tags_of(await get(api, by_id, {"c": made.comment_id}))) == expected
    node = "query($id: ID!) { node(id: $id) { id } }"
    global_id = relay.to_base64("Comment", made.comment_id)
    assert set(tags_of(await get(api, node, {"id": global_id}))) == expected
    # An id with no comment yet is tagged with it: its creation changes the answer.
    missing = uuid.uuid4().hex
    assert tags_of(await get(api, by_id, {"c": missing})) == [f"c:{missing}"]


async def test_a_group_is_tagged_with_its_membership_and_products(
    api: Api, table: TableRef, product_id: str
) -> None:
    group = f"g-{uuid.uuid4().hex[:12]}"
    await create_many(table, [NewComment(product_id, "en", 4, "in a group", "ann")])
    await move_product(table, product_id, group, backoff=FAST)
    query = """query($g: ID!) { productGroup(groupId: $g) { groupId
      products(first: 10) { nodes { productId } } } }"""
    tags = tags_of(await get(api, query, {"g": group}))
    assert set(tags) == {f"g:{group}", "membership", f"p:{product_id}"}
    own = "query($pid: ID!) { product(productId: $pid) { group { groupId } } }"
    tags = tags_of(await get(api, own, {"pid": product_id}))
    assert set(tags) == {f"p:{product_id}", "membership", f"g:{group}"}
    # A group that does not exist yet is tagged with its id: its first product changes it.
    absent = f"g-{uuid.uuid4().hex[:12]}"
    query = "query($g: ID!) { productGroup(groupId: $g) { groupId } }"
    assert tags_of(await get(api, query, {"g": absent})) == [f"g:{absent}"]


async def test_the_leaderboard_is_tagged_with_itself_and_its_products(
    api: Api, table: TableRef, product_id: str
) -> None:
    await create_many(table, [NewComment(product_id, "en", 5, "top", f"u{n}") for n in range(2)])
    query = "{ topProducts(first: 5) { product { productId } } }"
    response = await get(api, query)
    shown = [r["product"]["productId"] for r in response.json()["data"]["topProducts"]]
    assert shown
    assert set(tags_of(response)) == {"leaders"} | {f"p:{p}" for p in shown}


async def test_more_products_than_the_bound_carry_the_coarse_tag(api: Api) -> None:
    ids = [relay.to_base64("Product", f"bound-{n}") for n in range(MAX_TAGS + 1)]
    query = "query($ids: [ID!]!) { nodes(ids: $ids) { id } }"
    assert tags_of(await get(api, query, {"ids": ids})) == [ALL]
    assert len(tags_of(await get(api, query, {"ids": ids[:MAX_TAGS]}))) == MAX_TAGS


async def test_errors_and_private_answers_carry_no_tags(api: Api, product_id: str) -> None:
    query = "query($pid: ID!) { product(productId: $pid) { stats { total } } }"
    for response in (
        await get(api, query, {"pid": "not an id"}),  # a field error
        await get(api, "{ nope }"),  # a request error
        await get(api, query, {"pid": product_id}, authorization=f"Bearer {token()}"),
        await api.http.post("/graphql", json={"query": query, "variables": {"pid": product_id}}),
    ):
        assert "surrogate-key" not in response.headers
        assert "cache-tag" not in response.headers
