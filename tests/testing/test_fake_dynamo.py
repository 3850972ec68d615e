"""The benchmarks' in-memory DynamoDB answers our storage calls exactly like the real one."""

from __future__ import annotations

import random
from dataclasses import replace

import pytest

from storage.base.errors import TransactionCancelled
from storage.base.expressions import Attr, put_request
from storage.engine.table import TableRef
from storage.model.comments import Comment, Direction, ListingFilter, PageRequest, Status
from storage.ops.bulk import load_new_products
from storage.ops.create import create_table
from storage.reads.leaders import leaderboard
from storage.reads.reader import get_counts, moderation_queue, queue_length
from testing.fake_dynamo import FakeDynamo
from tests.helpers import oracle, stamp, walk


@pytest.fixture
async def fake_table() -> tuple[TableRef, list[Comment]]:
    rng = random.Random(5)
    comments = [
        Comment(
            f"{n:032x}",
            f"p{n % 2}",
            rng.choice(["en", "de"]),
            rng.choice([1, 2, 4, 5, 5]),
            None,
            "b",
            "a",
            stamp(rng.randrange(20)),
        )
        for n in range(300)
    ]
    table = TableRef(FakeDynamo(), "fake")
    await create_table(table.client, table.name)
    await load_new_products(table, comments)
    return table, comments


@pytest.mark.parametrize(
    ("language", "ratings"),
    [(None, None), ("de", None), (None, {4}), (None, {1, 2}), ("en", {5, 1, 2})],
)
@pytest.mark.parametrize("direction", list(Direction))
async def test_fake_listings_equal_the_oracle(
    fake_table: tuple[TableRef, list[Comment]],
    language: str | None,
    ratings: set[int] | None,
    direction: Direction,
) -> None:
    table, comments = fake_table
    listing = ListingFilter("p0", language, frozenset(ratings) if ratings else None)
    got, _ = await walk(table, listing, 7, direction)
    assert got == oracle(comments, listing)


async def test_fake_counters_and_leaderboard(fake_table: tuple[TableRef, list[Comment]]) -> None:
    table, comments = fake_table
    counts = await get_counts(table, "p1", None)
    assert counts.total == sum(c.product_id == "p1" for c in comments)
    top = await leaderboard(table, 2)
    assert {e.product_id for e in top} == {"p0", "p1"}


async def test_fake_loads_pending_comments_with_the_queue_count() -> None:
    table = TableRef(FakeDynamo(), "fake")
    await create_table(table.client, table.name)
    pending = [
        replace(c, status=Status.PENDING, submitted_at=c.created_at)
        for c in (Comment(f"{n:032x}", "p", "en", 4, None, "b", "a", stamp(n)) for n in range(3))
    ]
    await load_new_products(table, pending)
    assert await queue_length(table) == 3
    assert [c.comment_id for c in (await moderation_queue(table, PageRequest(10))).comments] == [
        c.comment_id for c in pending
    ]


async def test_a_fake_transaction_is_all_or_nothing() -> None:
    fake = FakeDynamo()
    existing = {"PK": {"S": "x"}, "SK": {"S": "x"}, "v": {"N": "1"}}
    fake.items[("x", "x")] = existing
    fresh = {"PK": {"S": "y"}, "SK": {"S": "y"}}
    with pytest.raises(TransactionCancelled) as cancelled:
        await fake.transact_write_items(
            TransactItems=[
                {"Put": put_request("t", fresh, Attr("PK").not_exists())},
                {"Put": put_request("t", existing, Attr("PK").not_exists())},
            ]
        )
    assert [r["Code"] for r in cancelled.value.reasons] == ["None", "ConditionalCheckFailed"]
    assert ("y", "y") not in fake.items
