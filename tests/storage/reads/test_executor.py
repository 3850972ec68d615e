"""Counters plan reads and give totals; they never bound what a read returns."""

from __future__ import annotations

import pytest
from graphql import parse

from schema import build_schema
from schema.cost import estimate
from storage.engine.metering import Meter, MeteredClient
from storage.engine.table import TableRef
from storage.model.comments import Direction, ListingFilter, NewComment, Order, PageRequest
from storage.reads.executor import execute
from storage.reads.planner import plan_listing
from storage.reads.reader import get_counts, list_comments
from storage.writes import create_comment
from tests.helpers import create_many, oracle, stamp

SCHEMA = build_schema()._schema


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


@pytest.mark.parametrize("order", [Order.HIGHEST_RATING, Order.LOWEST_RATING])
async def test_a_rating_order_reads_past_a_stale_counter_within_its_estimate(
    table: TableRef, product_id: str, order: Order
) -> None:
    # One rating: the plan reads its partition to the count plus one, and a comment
    # written after the counters were read makes that one read short of the page.
    made = await create_many(
        table,
        [NewComment(product_id, "en", 5, f"c{n}", "ann", created_at=stamp(n)) for n in range(3)],
    )
    listing = ListingFilter(product_id, None, frozenset({5}))
    stale = await get_counts(table, product_id, None)
    newer = await create_comment(
        table, NewComment(product_id, "en", 5, "late", "bob", created_at=stamp(100))
    )
    meter = Meter()
    metered = TableRef(MeteredClient(table.client, meter), table.name)
    page = await execute(metered, plan_listing(listing, PageRequest(10), stale, order=order))
    assert list(page.comments) == oracle([*made, newer.comment], listing, order)
    # What the API would allow this page: its estimate, less the counters' read.
    query = (
        '{ product(productId: "p") '
        f"{{ comments(orderBy: {order.value}, ratings: [5], first: 10) {{ totalCount }} }} }}"
    )
    allowed = estimate(SCHEMA, parse(query), None, None).points - 1
    assert meter.total_calls <= allowed


async def test_a_deep_rating_order_page_reads_the_partitions_it_needs_in_one_round(
    table: TableRef, product_id: str
) -> None:
    # Small partitions: a page that starts inside rating 1 spans ratings 2 and 3, whose
    # counters say how much each holds once the cursor's partition has ended.
    specs = [(1, 5), (2, 6), (3, 5), (4, 10), (5, 24)]
    made = await create_many(
        table,
        [
            NewComment(product_id, "en", rating, f"r{rating}-{n}", "ann", created_at=stamp(n))
            for rating, count in specs
            for n in range(count)
        ],
    )
    listing = ListingFilter(product_id)
    expected = oracle(made, listing, Order.LOWEST_RATING)
    first = await list_comments(table, listing, PageRequest(1), order=Order.LOWEST_RATING)
    deep = await list_comments(
        table,
        listing,
        PageRequest(10, Direction.FORWARD, first.positions[-1]),
        order=Order.LOWEST_RATING,
    )
    assert list(deep.comments) == expected[1:11]
    # The cursor's partition (its rest unknown), then ratings 2 and 3 together.
    assert deep.rounds == 2
    assert deep.items_read <= 11 + 2
