"""The facet listings' planner: pure, from counters to partitions, limits and filters."""

from __future__ import annotations

from typing import Any

import pytest

from storage.base.errors import InvalidFacet
from storage.model import keys
from storage.model.comments import Direction, ListingFilter, Order, PageRequest, RatingCounts
from storage.model.facet_counts import FacetCounts, FacetListingCounts
from storage.model.facets import FacetKind, FacetValue, Scope, counter_attr, facet_partition
from storage.model.indexes import Index
from storage.reads.facet_plans import facet_plan_holds, plan_facet_listing
from storage.reads.planner import Plan, Strategy

PID = "p1"
SCOPE = Scope.product(PID)
SMALL = FacetValue.attribute("fit", "small")
BATTERY = FacetValue.topic("battery")
INC = FacetValue(FacetKind.INCENTIVIZED)


def _counts(value: FacetValue, per_rating: dict[int, tuple[int, int, int, int]]) -> FacetCounts:
    """A counter item: per rating (all, verified, incentivized, verified and incentivized)."""
    numbers = {}
    for rating, quad in per_rating.items():
        for kind, n in zip(("c", "v", "i", "x"), quad, strict=True):
            numbers[counter_attr(kind, None, rating)] = n
    return FacetCounts(SCOPE, value, numbers)


def _listing_counts(
    values: dict[FacetValue, FacetCounts], total: int = 1000, verified: int = 500
) -> FacetListingCounts:
    share = (total // 5,) * 5
    scope = RatingCounts(PID, None, share, (verified // 5,) * 5)
    return FacetListingCounts(
        scope, values, _counts(INC, dict.fromkeys(range(1, 6), (20, 10, 20, 10)))
    )


def _plan(
    counts: FacetListingCounts,
    order: Order = Order.NEWEST,
    page: PageRequest | None = None,
    **filters: Any,
) -> tuple[ListingFilter, Plan]:
    listing = ListingFilter(PID, **filters)
    return listing, plan_facet_listing(listing, page or PageRequest(10), counts, order=order)


SMALL_COUNTS = _counts(SMALL, {5: (40, 20, 4, 2), 4: (10, 5, 0, 0), 1: (6, 0, 6, 0)})


def test_one_value_is_a_fan_out_over_its_rating_partitions_skipping_empty_ones() -> None:
    counts = _listing_counts({SMALL: SMALL_COUNTS})
    _, plan = _plan(counts, facets=frozenset({SMALL}))
    assert plan.strategy is Strategy.FAN_OUT
    assert plan.facet == SMALL
    assert not plan.filters
    assert [q.partition_key for q in plan.queries] == [
        facet_partition(SCOPE, SMALL, r) for r in (5, 4, 1)
    ]
    assert {q.index for q in plan.queries} == {Index.FACET_BY_RATING}
    assert plan.skipped_ratings == (3, 2)
    for q in plan.queries:
        assert 1 <= q.limit <= (q.expected_count or 0) + 1
    assert "facet=a:fit=small scope=P:p1" in plan.explain()
    assert "AP19" in plan.patterns


def test_a_language_reads_the_language_partitions() -> None:
    numbers = {counter_attr("c", "de", 5): 30, counter_attr("c", "de", 2): 3}
    counts = FacetListingCounts(
        RatingCounts(PID, "de", (0, 3, 0, 0, 300)),
        {SMALL: FacetCounts(SCOPE, SMALL, numbers)},
        FacetCounts(SCOPE, INC, {}),
    )
    _, plan = _plan(counts, facets=frozenset({SMALL}), language="de")
    assert {q.index for q in plan.queries} == {Index.FACET_BY_LANG_AND_RATING}
    assert plan.queries[0].partition_key == "F#P:p1#a:fit=small#de#5"


def test_what_entries_cannot_tell_apart_is_filtered_and_sized_by_its_share() -> None:
    counts = _listing_counts({SMALL: SMALL_COUNTS})
    _, plain = _plan(counts, facets=frozenset({SMALL}))
    _, verified = _plan(counts, facets=frozenset({SMALL}), verified_only=True)
    assert verified.strategy is Strategy.FAN_OUT
    assert verified.filters
    assert "verified" in verified.filter_text
    # Half of the 5-star entries are verified: about twice as many are read for them.
    assert verified.queries[0].limit > plain.queries[0].limit
    # Rating 1 has no verified comment: skipped.
    assert 1 in verified.skipped_ratings
    _, honest = _plan(counts, facets=frozenset({SMALL}), exclude_incentivized=True)
    assert 1 in honest.skipped_ratings  # all six 1-star ones are incentivized
    assert "NOT incentivized" in honest.filter_text


def test_the_value_with_fewest_comments_is_read_and_the_other_filtered() -> None:
    battery = _counts(BATTERY, {5: (400, 0, 0, 0), 4: (100, 0, 0, 0)})
    counts = _listing_counts({SMALL: SMALL_COUNTS, BATTERY: battery})
    listing, plan = _plan(counts, facets=frozenset({SMALL, BATTERY}))
    assert plan.facet == SMALL
    assert plan.filter_facets == (BATTERY,)
    assert "facets CONTAINS t:battery" in plan.filter_text
    assert counts.total(listing) is None  # several values: not from counters


def test_a_value_most_comments_have_is_read_from_the_product_listing_filtered() -> None:
    most = _counts(SMALL, dict.fromkeys(range(1, 6), (190, 90, 10, 5)))
    counts = _listing_counts({SMALL: most})
    _, plan = _plan(counts, facets=frozenset({SMALL}))
    assert plan.strategy is Strategy.FILTERED_SCAN_OF_INDEX
    assert plan.queries[0].partition_key == keys.all_pk(PID)
    assert "facets CONTAINS a:fit=small" in plan.filter_text


def test_without_values_incentivized_reviews_are_filtered_from_the_product_listing() -> None:
    counts = _listing_counts({})
    listing, plan = _plan(counts, exclude_incentivized=True)
    assert plan.facet is None
    assert plan.filters
    assert counts.total(listing) == 1000 - 100


def test_rating_orders_read_partitions_in_turn() -> None:
    counts = _listing_counts({SMALL: SMALL_COUNTS})
    _, high = _plan(counts, Order.HIGHEST_RATING, facets=frozenset({SMALL}))
    assert high.strategy is Strategy.IN_TURN
    assert [q.rating for q in high.queries] == [5, 4, 1]
    _, low = _plan(counts, Order.LOWEST_RATING, facets=frozenset({SMALL}))
    assert [q.rating for q in low.queries] == [1, 4, 5]
    # A page of 10 from 6 one-star comments: that partition whole, then the next.
    assert low.queries[0].limit == 7
    assert low.queries[1].limit > 0
    at = keys.rating_position(4, "2024-01-01T00:00:00.000Z#" + "0" * 32)
    page = PageRequest(10, Direction.FORWARD, at)
    _, later = _plan(counts, Order.HIGHEST_RATING, page, facets=frozenset({SMALL}))
    assert [q.rating for q in later.queries] == [4, 1]


def test_the_most_helpful_order_is_not_offered() -> None:
    counts = _listing_counts({SMALL: SMALL_COUNTS})
    with pytest.raises(InvalidFacet):
        _plan(counts, Order.MOST_HELPFUL, facets=frozenset({SMALL}))


def test_a_plan_does_not_hold_when_a_skipped_rating_gained_comments() -> None:
    counts = _listing_counts({SMALL: SMALL_COUNTS})
    listing, plan = _plan(counts, facets=frozenset({SMALL}))
    assert facet_plan_holds(plan, listing, counts)
    gained = _counts(SMALL, {5: (40, 20, 4, 2), 4: (10, 5, 0, 0), 1: (6, 0, 6, 0), 2: (1, 0, 0, 0)})
    assert not facet_plan_holds(plan, listing, _listing_counts({SMALL: gained}))


def test_nothing_matching_reads_nothing() -> None:
    counts = _listing_counts({SMALL: _counts(SMALL, {})})
    _, plan = _plan(counts, facets=frozenset({SMALL}))
    assert plan.queries == ()
