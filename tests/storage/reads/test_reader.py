"""Every access pattern of DESIGN.md (AP1-AP11) against DynamoDB Local."""

from __future__ import annotations

import uuid

import pytest

from storage.base.errors import CommentNotFound, InvalidProductId, NotAuthor
from storage.engine.table import TableRef
from storage.model import keys, rules
from storage.model.comments import (
    Comment,
    Direction,
    ListingFilter,
    NewComment,
    PageRequest,
    RatingCounts,
)
from storage.ops.create import create_table
from storage.reads.leaders import leaderboard
from storage.reads.planner import Strategy
from storage.reads.reader import (
    batch_get_comments,
    batch_get_counts,
    get_counts,
    last_commented_at,
    list_comments,
)
from storage.writes import create_comment, delete_comment, get_comment
from tests.helpers import create_many, oracle, own_product_id, own_table, seed_mixed, stamp, walk

LANGS = ["en", "de", "fr"]


@pytest.fixture(scope="module")
def seeded_pid() -> str:
    """The id of the product `product` seeds, this module's own."""
    return own_product_id()


@pytest.fixture(scope="module")
async def product(table: TableRef, seeded_pid: str) -> list[Comment]:
    """Seeded once for the module: the tests that use it only read."""
    return await seed_mixed(table, seeded_pid, 40, authors=["ann"], times=9)


async def test_table_creation_is_idempotent(client: object, table: TableRef) -> None:
    assert await create_table(table.client, table.name) is False


async def test_ap1_all_comments_newest_first(
    table: TableRef, product: list[Comment], seeded_pid: str
) -> None:
    page = await list_comments(table, ListingFilter(seeded_pid), PageRequest(10))
    assert page.plan.strategy is Strategy.ALL
    assert list(page.comments) == oracle(product, ListingFilter(seeded_pid))[:10]
    assert page.has_more
    # Planned without stats (one partition whatever the counts): one query, one extra item.
    assert page.items_read == 11
    assert len(page.executed) == 1


async def test_ap2_one_language(table: TableRef, product: list, seeded_pid: str) -> None:  # type: ignore[type-arg]
    listing = ListingFilter(seeded_pid, "de")
    page = await list_comments(table, listing, PageRequest(50))
    assert page.plan.strategy is Strategy.BY_LANG
    assert list(page.comments) == oracle(product, listing)
    assert not page.has_more


@pytest.mark.parametrize(
    ("language", "ratings", "strategy"),
    [
        (None, {2}, Strategy.BY_RATING),
        ("en", {5}, Strategy.BY_LANG_AND_RATING),
        (None, {1, 2}, Strategy.FAN_OUT),
        ("fr", {1, 2}, Strategy.FAN_OUT),
        ("de", {1, 4, 5}, None),  # fan-out or filtered scan: the result must be the same
        (None, {3, 4}, Strategy.BY_RATING),  # 3 has no comments: skipped
        (None, {3}, Strategy.EMPTY),
    ],
)
async def test_ap3_rating_sets(
    table: TableRef,
    product: list[Comment],
    seeded_pid: str,
    language: str | None,
    ratings: set[int],
    strategy: Strategy | None,
) -> None:
    listing = ListingFilter(seeded_pid, language, frozenset(ratings))
    page = await list_comments(table, listing, PageRequest(7))
    if strategy is not None:
        assert page.plan.strategy is strategy
    assert list(page.comments) == oracle(product, listing)[:7]
    if strategy is Strategy.EMPTY:
        assert page.executed == ()


async def test_ap4_one_comment(table: TableRef, product: list[Comment]) -> None:
    wanted = product[3]
    assert await get_comment(table, wanted.comment_id) == wanted
    assert await get_comment(table, "nope") is None
    found = await batch_get_comments(
        table, [product[1].comment_id, "missing", product[0].comment_id]
    )
    assert found == [product[1], None, product[0]]


async def test_ap5_delete(table: TableRef, product_id: str) -> None:
    made = (await create_comment(table, NewComment(product_id, "en", 5, "hi", "ann"))).comment
    with pytest.raises(NotAuthor):
        await delete_comment(table, made.comment_id, author_id="bob")
    assert await delete_comment(table, made.comment_id, author_id="ann") == made
    assert await get_comment(table, made.comment_id) is None
    before = await get_counts(table, product_id, None)
    with pytest.raises(CommentNotFound):
        await delete_comment(table, made.comment_id)
    assert await get_counts(table, product_id, None) == before
    assert before.total == 0


@pytest.mark.parametrize("size", [1, 4, 7, 40])
async def test_ap6_pagination_both_ways(
    table: TableRef,
    product: list[Comment],
    seeded_pid: str,
    size: int,
) -> None:
    for listing in [
        ListingFilter(seeded_pid),
        ListingFilter(seeded_pid, ratings=frozenset({1, 2, 4})),
        ListingFilter(seeded_pid, "en", frozenset({5, 1})),
    ]:
        expected = oracle(product, listing)
        for direction in Direction:
            got, lengths = await walk(table, listing, size, direction)
            assert got == expected
            # Every page is full except the last one in the direction of travel.
            full = lengths if direction is Direction.FORWARD else lengths[::-1]
            assert all(n == size for n in full[:-1])


async def test_ap6_constant_cost_at_depth(table: TableRef, product: list, seeded_pid: str) -> None:  # type: ignore[type-arg]
    listing = ListingFilter(seeded_pid, ratings=frozenset({5, 4}))
    expected = oracle(product, listing)
    first = await list_comments(table, listing, PageRequest(5))
    deep = await list_comments(
        table, listing, PageRequest(5, Direction.FORWARD, expected[19].sort_key)
    )
    assert list(deep.comments) == expected[20:25]
    # A deep page reads about the same as the first (plus one item to learn has_more).
    assert deep.items_read <= first.items_read + 2 * len(deep.plan.queries)


async def test_ap7_ap9_counts_all_languages(
    table: TableRef, product: list[Comment], seeded_pid: str
) -> None:
    counts = await get_counts(table, seeded_pid, None)
    expected = [sum(1 for c in product if c.rating == r) for r in rules.RATINGS]
    assert list(counts.by_rating) == expected
    assert counts.total == len(product)
    assert await last_commented_at(table, [seeded_pid]) == [max(c.created_at for c in product)]


async def test_ap8_ap10_counts_one_language(
    table: TableRef, product: list[Comment], seeded_pid: str
) -> None:
    for lang in LANGS:
        counts = await get_counts(table, seeded_pid, lang)
        mine = [c for c in product if c.language == lang]
        assert list(counts.by_rating) == [
            sum(1 for c in mine if c.rating == r) for r in rules.RATINGS
        ]
        assert counts.total == len(mine)


async def test_counts_in_batches_keep_key_order(
    table: TableRef, product: list[Comment], seeded_pid: str
) -> None:
    unknown = f"none-{uuid.uuid4().hex[:6]}"
    wanted: list[tuple[str, str | None]] = [(unknown, None)]
    wanted += [(seeded_pid, lang) for lang in LANGS] * 40 + [(seeded_pid, None)]
    got = await batch_get_counts(table, wanted)
    assert [(c.product_id, c.language) for c in got] == wanted
    assert got[0] == RatingCounts(unknown, None)
    assert got[-1].total == len(product)
    with pytest.raises(InvalidProductId):
        await batch_get_counts(table, [("a/b", None)])


async def test_ap11_leaderboard(table: TableRef) -> None:
    # The leaderboard spans a whole table: a table of its own holds only these products.
    own = await own_table(table, "leaders")
    base = f"lead-{uuid.uuid4().hex[:6]}"
    # 12 and 9 order differently as numbers and as text.
    fives = {f"{base}-a": 9, f"{base}-b": 3, f"{base}-c": 12}
    specs = [
        NewComment(pid, "en", 5, "great", "ann", created_at=stamp(n % 30))
        for pid, n_five in fives.items()
        for n in range(n_five)
    ]
    await create_many(own, specs, limit=32)
    top = await leaderboard(own, 3)
    assert [(e.product_id, e.five_star_count) for e in top] == sorted(
        fives.items(), key=lambda kv: -kv[1]
    )


async def test_leaderboard_entry_removed_at_zero(table: TableRef, product_id: str) -> None:
    made = (await create_comment(table, NewComment(product_id, "en", 5, "x", "ann"))).comment
    raw = await table.client.get_item(
        TableName=table.name, Key={"PK": {"S": f"PRODUCT#{product_id}"}, "SK": {"S": "S"}}
    )
    assert raw["Item"]["GSIPK"] == {"S": "LEADERS"}
    assert raw["Item"]["GSISK"] == {"S": keys.leader_sort_key(1)}
    await delete_comment(table, made.comment_id)
    raw = await table.client.get_item(
        TableName=table.name, Key={"PK": {"S": f"PRODUCT#{product_id}"}, "SK": {"S": "S"}}
    )
    assert "GSIPK" not in raw["Item"]
    assert "GSISK" not in raw["Item"]


async def test_idempotent_create(table: TableRef, product_id: str) -> None:
    new = NewComment(product_id, "en", 4, "once", "ann", idempotency_key="req-1")
    first = await create_comment(table, new)
    again = await create_comment(table, new)
    assert first.created
    assert not again.created
    assert again.comment == first.comment
    other_author = await create_comment(
        table, NewComment(product_id, "en", 4, "once", "bob", idempotency_key="req-1")
    )
    assert other_author.created
    assert (await get_counts(table, product_id, None)).total == 2


async def test_last_commented_at_follows_creates_and_deletes(
    table: TableRef, product_id: str
) -> None:
    assert await last_commented_at(table, [product_id]) == [None]
    new = await create_comment(
        table, NewComment(product_id, "en", 3, "new", "ann", created_at=stamp(50))
    )
    await create_comment(table, NewComment(product_id, "en", 3, "old", "ann", created_at=stamp(10)))
    assert await last_commented_at(table, [product_id, product_id]) == [stamp(50), stamp(50)]
    # Deleting the newest comment moves it back; deleting the last one makes it null.
    await delete_comment(table, new.comment.comment_id)
    assert await last_commented_at(table, [product_id]) == [stamp(10)]
