"""Counters plan reads and give totals; they never bound what a read returns."""

from __future__ import annotations

import pytest

from storage.executor import execute
from storage.model import Direction, ListingFilter, NewComment, PageRequest
from storage.planner import plan_listing
from storage.reads import get_counts, list_comments
from storage.table import TableRef
from storage.writes import create_comment
from tests.helpers import create_many, oracle, stamp


@pytest.mark.parametrize("ratings", [frozenset({1}), frozenset({1, 2})])
async def test_a_comment_written_after_the_counters_were_read_costs_no_other_comment(
    table: TableRef, product_id: str, ratings: frozenset[int]
) -> None:
    made = await create_many(
        table,
        [
            NewComment(product_id, "en", 1 + n % 2, f"c{n}", "ann", created_at=stamp(n))
            for n in range(6)
        ],
    )
    listing = ListingFilter(product_id, None, ratings)
    stale = await get_counts(table, product_id, None)
    # Written between the counters' read and the query: rating 1's partition now holds one
    # more comment than its counter says.
    newer = await create_comment(
        table, NewComment(product_id, "en", 1, "late", "bob", created_at=stamp(100))
    )
    everything = oracle([*made, newer.comment], listing)
    size = len(everything) - 1
    page = await execute(table, plan_listing(listing, PageRequest(size), stale))
    # The page is the newest `size` comments, and storage (not the stale counter) says that
    # one more exists; following the cursor finds it.
    assert list(page.comments) == everything[:size]
    assert page.has_more
    rest = await list_comments(
        table, listing, PageRequest(size, Direction.FORWARD, page.comments[-1].sort_key)
    )
    assert list(rest.comments) == everything[size:]
    assert not rest.has_more


async def test_an_empty_page_still_says_whether_comments_exist(
    table: TableRef, product_id: str
) -> None:
    await create_many(table, [NewComment(product_id, "en", 3, "x", "ann")])
    for listing in (ListingFilter(product_id), ListingFilter(product_id, None, frozenset({3, 4}))):
        page = await list_comments(table, listing, PageRequest(0))
        assert page.comments == ()
        assert page.has_more
    nothing = await list_comments(table, ListingFilter(f"{product_id}-none"), PageRequest(0))
    assert not nothing.has_more
