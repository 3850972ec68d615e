"""The benchmarks' in-memory DynamoDB answers our storage calls exactly like the real one."""

from __future__ import annotations

import random

import pytest

from benchmarks.fake_dynamo import FakeDynamo
from storage.bulk import load_new_products
from storage.model import Comment, Direction, ListingFilter
from storage.reads import get_counts, leaderboard
from storage.table import TableRef, create_table
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
