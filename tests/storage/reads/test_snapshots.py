"""The process's memory of counters and page heads: pages in one storage round, never a
comment lost to a stale memory, and the memory bounded in bytes."""

from __future__ import annotations

import hashlib

from hypothesis import given, settings
from hypothesis import strategies as st

from storage.engine.table import TableRef
from storage.model.comments import (
    Comment,
    Direction,
    ListingFilter,
    NewComment,
    Order,
    PageRequest,
    RatingCounts,
    Status,
)
from storage.ops.bulk import load_new_products
from storage.ops.create import create_table
from storage.reads.executor import Page
from storage.reads.planner import Strategy, head_limits, plan_holds, plan_listing
from storage.reads.reader import get_counts, read_listing
from storage.reads.snapshots import MAX_HEAD, Head, HeadKey, PlanMemory, version_of
from storage.writes import create_comment, delete_comment
from testing.fake_dynamo import FakeDynamo
from tests.helpers import FAST, oracle, stamp, walk

PID = "snap-1"


def _comment(
    n: int, rating: int, language: str = "en", pid: str = PID, verified: bool = False
) -> Comment:
    return Comment(
        comment_id=hashlib.sha256(f"snap {pid} {n}".encode()).hexdigest()[:32],
        product_id=pid,
        language=language,
        rating=rating,
        title=None,
        body=f"b{n}",
        author_id=f"a{n % 5}",
        created_at=stamp(n),
        status=Status.PUBLISHED,
        verified=verified,
    )


def _five(values: list[int]) -> tuple[int, int, int, int, int]:
    a, b, c, d, e = values
    return a, b, c, d, e


async def _memory_table(comments: list[Comment]) -> TableRef:
    table = TableRef(FakeDynamo(), "snapshots")
    await create_table(table.client, table.name)
    await load_new_products(table, comments)
    # Read as a process that has not seen the product yet (loading read its counters).
    return TableRef(table.client, table.name)


async def _read(
    table: TableRef, listing: ListingFilter, request: PageRequest, order: Order = Order.NEWEST
) -> tuple[RatingCounts, Page]:
    async def counts() -> RatingCounts:
        return await get_counts(table, listing.product_id, listing.language)

    return await read_listing(table, listing, request, counts, order=order)


# -- the memory itself -------------------------------------------------------------------


def test_memory_stays_within_its_bytes_whatever_is_put() -> None:
    memory = PlanMemory(max_bytes=64 * 1024)
    for n in range(5000):
        pid = f"p-{n}-" + "x" * (n % 100)
        counts = RatingCounts(pid, None, (n, 1, 0, 0, 2))
        memory.remember_counts([counts])
        listing = ListingFilter(pid, "en", frozenset({1, 2}))
        key = HeadKey(listing, Order.NEWEST, Direction.FORWARD, "k" * (n % 300))
        memory.remember_head(key, [1, 2] * 300, False, counts)
        assert memory.bytes <= memory.max_bytes
    # The newest entries are kept, the oldest gone.
    assert memory.counts("p-4999-" + "x" * (4999 % 100), None) is not None
    assert memory.counts("p-0-", None) is None


def test_a_head_is_given_only_under_the_counters_it_was_read_with() -> None:
    memory = PlanMemory()
    listing = ListingFilter(PID, None, frozenset({1, 2}))
    key = HeadKey(listing, Order.NEWEST, Direction.FORWARD, None)
    counts = RatingCounts(PID, None, (3, 4, 0, 0, 0))
    memory.remember_head(key, [1, 2, 2], True, counts)
    assert memory.head(key, counts) == Head(bytes([1, 2, 2]), True, version_of(counts))
    moved = RatingCounts(PID, None, (3, 5, 0, 0, 0))
    assert memory.head(key, moved) is None
    # A head longer than any page is cut, and then cannot say the listing ended there.
    memory.remember_head(key, [1] * (MAX_HEAD + 5), True, counts)
    kept = memory.head(key, counts)
    assert kept is not None
    assert len(kept.ratings) == MAX_HEAD
    assert not kept.ended


# -- planning from a head ----------------------------------------------------------------


def test_head_limits_read_what_the_page_takes_plus_one_past_it() -> None:
    # want = 5: the page takes 1,2,1,1 and its last item (rating 2) from partition 2.
    head = Head(bytes([1, 2, 1, 1, 2, 1, 1]), False, ((0,) * 5, (0,) * 5))
    assert head_limits(head, [2, 1], 5) == {1: 4, 2: 2}
    assert head_limits(head, [3, 2, 1], 5) == {1: 4, 2: 2, 3: 1}
    # Too short to say, unless the listing ended within it.
    assert head_limits(head, [2, 1], 8) is None
    ended = Head(bytes([1, 2, 1]), True, ((0,) * 5, (0,) * 5))
    assert head_limits(ended, [2, 1], 8) == {1: 3, 2: 2}


def test_a_plan_skipping_a_rating_that_gained_comments_does_not_hold() -> None:
    listing = ListingFilter(PID, None, frozenset({1, 2, 3}))
    snapshot = RatingCounts(PID, None, (0, 10, 10, 40, 40))
    plan = plan_listing(listing, PageRequest(5), snapshot)
    assert plan.strategy is Strategy.FAN_OUT
    assert plan.skipped_ratings == (1,)
    assert plan_holds(plan, RatingCounts(PID, None, (0, 12, 3, 40, 40)))
    assert not plan_holds(plan, RatingCounts(PID, None, (1, 10, 10, 40, 40)))
    # A filtered read filters on every rating asked for, the skipped one included.
    scan = plan_listing(listing, PageRequest(5), RatingCounts(PID, None, (0, 10, 10, 1, 0)))
    assert scan.strategy is Strategy.FILTERED_SCAN_OF_INDEX
    assert scan.filter_ratings == (3, 2, 1)
    assert plan_holds(scan, RatingCounts(PID, None, (5, 10, 10, 1, 0)))
    verified = plan_listing(
        ListingFilter(PID, None, frozenset({1, 2}), True),
        PageRequest(5),
        RatingCounts(PID, None, (4, 4, 0, 0, 0), (0, 3, 0, 0, 0)),
    )
    assert verified.skipped_ratings == (1,)
    # Only a verified comment of the skipped rating breaks a verified plan.
    assert plan_holds(verified, RatingCounts(PID, None, (9, 4, 0, 0, 0), (0, 3, 0, 0, 0)))
    assert not plan_holds(verified, RatingCounts(PID, None, (9, 4, 0, 0, 0), (1, 3, 0, 0, 0)))


# -- reading with the memory -------------------------------------------------------------


async def test_a_page_read_again_takes_one_round_and_reads_no_head_room() -> None:
    comments = [_comment(n, [1, 2, 2, 3, 5][n % 5]) for n in range(200)]
    table = await _memory_table(comments)
    listing = ListingFilter(PID, None, frozenset({1, 2, 3}))
    request = PageRequest(20)
    _, cold = await _read(table, listing, request)
    assert cold.counts_round
    assert cold.storage_rounds >= 2
    counts, warm = await _read(table, listing, request)
    assert warm.plan.strategy is Strategy.FAN_OUT
    assert warm.plan.head_sized
    assert not warm.counts_round
    assert warm.storage_rounds == 1
    # The page (20), the item past it, and one item past the page from each other partition.
    assert warm.items_read == 21 + 2
    assert list(warm.comments) == oracle(comments, listing)[:20]
    assert counts.matching(listing.ratings) == 160


async def test_a_stale_snapshot_that_skipped_a_rating_is_corrected() -> None:
    comments = [_comment(n, 1 + n % 3) for n in range(30)]
    table = await _memory_table(comments)
    listing = ListingFilter(PID, None, frozenset({1, 3}))
    # As if the process last saw the product before its 1-star comments.
    table.memory(PlanMemory).remember_counts([RatingCounts(PID, None, (0, 10, 10, 0, 0))])
    counts, page = await _read(table, listing, PageRequest(8))
    assert page.corrected
    assert list(page.comments) == oracle(comments, listing)[:8]
    # What was read before the correction is kept: the page costs no more calls than the
    # cost estimate allows a fan-out over two ratings (two rounds of two queries).
    assert len(page.executed) <= 2 * 2
    assert counts.by_rating == (10, 10, 10, 0, 0)
    # The counters it read replaced the snapshot: the next read holds at once.
    _, again = await _read(table, listing, PageRequest(8))
    assert not again.corrected
    assert again.storage_rounds == 1


@st.composite
def _stale_memories(draw: st.DrawFn) -> tuple[list[Comment], list[int], list[bytes]]:
    n = draw(st.integers(0, 60))
    weights = draw(st.lists(st.sampled_from([0, 1, 3, 8]), min_size=5, max_size=5))
    weights[draw(st.integers(0, 4))] += 1
    pool = [r for r, w in zip(range(1, 6), weights, strict=True) for _ in range(w)]
    comments = [
        _comment(
            i,
            draw(st.sampled_from(pool)),
            draw(st.sampled_from(["en", "de"])),
            verified=draw(st.booleans()),
        )
        for i in range(n)
    ]
    # Counters as the process last saw them: anything, zeros included.
    stale = draw(st.lists(st.sampled_from([0, 0, 1, 4, 30]), min_size=5, max_size=5))
    # Heads remembered at the start of the listings, under those counters: anything.
    heads = draw(
        st.lists(
            st.lists(st.integers(1, 5), max_size=30).map(bytes),
            min_size=1,
            max_size=4,
        )
    )
    return comments, stale, heads


@settings(max_examples=150, deadline=None)
@given(_stale_memories(), st.data())
async def test_every_listing_is_exact_from_any_stale_memory(
    drawn: tuple[list[Comment], list[int], list[bytes]], data: st.DataObject
) -> None:
    comments, stale, heads = drawn
    table = await _memory_table(comments)
    for _ in range(3):
        language = data.draw(st.sampled_from([None, "en", "de"]))
        ratings = data.draw(st.frozensets(st.integers(1, 5), min_size=2, max_size=4))
        verified = data.draw(st.booleans())
        order = data.draw(st.sampled_from(Order))
        size = data.draw(st.integers(1, 7))
        listing = ListingFilter(PID, language, ratings, verified)
        snapshot = RatingCounts(PID, language, _five(stale), _five([min(c, 1) for c in stale]))
        table.memory(PlanMemory).remember_counts([snapshot])
        for direction in Direction:
            key = HeadKey(listing, order, direction, None)
            head = list(data.draw(st.sampled_from(heads)))
            table.memory(PlanMemory).remember_head(key, head, data.draw(st.booleans()), snapshot)
        expected = oracle(comments, listing, order)
        for direction in Direction:
            got, lengths = await walk(table, listing, size, direction, order=order)
            assert got == expected, (listing, order, direction)
            travel = lengths if direction is Direction.FORWARD else lengths[::-1]
            assert all(n == size for n in travel[:-1]), lengths
        # Leave the memory stale again for the next listing.
        table.memory(PlanMemory).remember_counts([snapshot])


# -- two processes on one engine ---------------------------------------------------------


async def test_writes_through_another_process_are_seen_at_once(
    table: TableRef, product_id: str
) -> None:
    here = TableRef(table.client, table.name)
    there = TableRef(table.client, table.name)  # another process: its own memory
    made = []
    for n in range(30):
        rating = [2, 3, 5, 5, 5][n % 5]
        new = NewComment(product_id, "en", rating, f"c{n}", f"u{n}", created_at=stamp(n))
        made.append((await create_comment(there, new, backoff=FAST)).comment)
    listing = ListingFilter(product_id, None, frozenset({1, 2, 3}))
    for _ in range(2):
        await _read(here, listing, PageRequest(5))
    # No 1-star comment when ``here`` planned last; two arrive through ``there``, and one of
    # the others goes.
    for n in (40, 41):
        new = NewComment(product_id, "en", 1, f"c{n}", f"u{n}", created_at=stamp(n))
        made.append((await create_comment(there, new, backoff=FAST)).comment)
    await delete_comment(there, made[11].comment_id, backoff=FAST)
    alive = made[:11] + made[12:]
    counts, page = await _read(here, listing, PageRequest(5))
    assert list(page.comments) == oracle(alive, listing)[:5]
    assert page.plan.strategy is Strategy.FAN_OUT
    assert page.corrected
    assert counts.by_rating[:3] == (2, 6, 5)
    got, _ = await walk(here, listing, 5, Direction.FORWARD)
    assert got == oracle(alive, listing)


async def test_a_snapshot_with_nothing_to_read_waits_for_the_counters() -> None:
    comments = [_comment(n, 1 + n % 2) for n in range(6)]
    table = await _memory_table(comments)
    listing = ListingFilter(PID, None, frozenset({1, 2}))
    table.memory(PlanMemory).remember_counts([RatingCounts(PID, None, (0, 0, 0, 0, 0))])
    counts, page = await _read(table, listing, PageRequest(4))
    assert list(page.comments) == oracle(comments, listing)[:4]
    assert page.corrected
    assert page.counts_round
    assert page.storage_rounds == 2
    # A product with nothing to list costs the counters' read alone.
    empty = ListingFilter("snap-empty", None, frozenset({1, 2}))
    table.memory(PlanMemory).remember_counts([RatingCounts("snap-empty", None)])
    _, nothing = await _read(table, empty, PageRequest(4))
    assert nothing.comments == ()
    assert nothing.storage_rounds == 1
    assert counts.matching(listing.ratings) == 6
