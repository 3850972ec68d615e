"""Plans of facet listings: a product's comments with facet values (answers, a topic,
photos) or without incentivized reviews, on top of language, ratings and verified. Pure.

A listing with facet values reads the entries of one of them, its *primary* value: the one
with the fewest matching comments by its counter item (ties by token), so the fewest items
are read. Its entries lie in one partition per rating (``facetByRating``, or
``facetByLangAndRating`` with a language), sorted by ``GSISK`` like every listing, so the
plan is the rating fan-out ``storage.reads.planner`` makes for a rating filter, over other
partitions: ratings whose count is zero are skipped, each query is sized by its share of
the page, and the executor merges and tops up as for any fan-out.

What the primary's partitions cannot tell apart is filtered: verified purchases (entries
have no verified partitions), incentivized reviews, and every other facet value
(``contains(facets, v)``). Each query's limit is then the items to scan for its share, by
the share of its partition that matches. The counters give that share exactly for
verified and incentivized (``storage.model.facet_counts``); for another facet value they
give its own count, and the plan assumes the values independent, which only sizes the
first round: the executor reads on until the page is full, whatever the estimate.

The alternative is one read of the product's own listing (``all`` or ``byLang``) filtered
on everything: cheaper when the filters leave most of the product's comments. The planner
prices both and takes the cheaper, as it does for rating filters. Without facet values
(leaving out incentivized reviews only) the fan-out is over the product's own rating
partitions (the verified ones for verified only).

Orders: NEWEST and OLDEST read the partitions in ``GSISK`` order either way; HIGHEST_RATING
and LOWEST_RATING read them in turn (``Strategy.IN_TURN``). MOST_HELPFUL is not offered:
entries have no helpful order (docs/facets.md says what it would cost).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from storage.base.errors import InvalidFacet
from storage.model import keys, rules
from storage.model.comments import Direction, ListingFilter, Order, PageRequest
from storage.model.facet_counts import Counts, FacetListingCounts
from storage.model.facets import FacetValue
from storage.model.indexes import Index
from storage.reads.planner import (
    DEFAULT_TUNING,
    Plan,
    PlannedQuery,
    Strategy,
    Tuning,
    empty_plan,
    filtered_limit,
    head_limits,
    in_order,
    in_turn_limits,
    oriented,
    plan_partition,
    proportioned_limit,
)
from storage.reads.snapshots import Head


def plan_facet_listing(
    listing: ListingFilter,
    page: PageRequest,
    counts: FacetListingCounts,
    tuning: Tuning = DEFAULT_TUNING,
    order: Order = Order.NEWEST,
    head: Head | None = None,
) -> Plan:
    """Choose partitions and limits for one page of a facet listing; pure, deterministic."""
    if not listing.faceted:
        raise ValueError("not a facet listing: storage.reads.planner plans it")
    if counts.scope.product_id != listing.product_id or counts.scope.language != listing.language:
        raise ValueError("counts must be those of the listing's product and language")
    if listing.facets - counts.values.keys():
        raise ValueError("counts must include every facet value of the listing")
    if order is Order.MOST_HELPFUL:
        raise InvalidFacet("facet listings are not offered in the most helpful order")
    primary = counts.primary(listing)
    scope = listing.scope if primary is not None else None
    others = tuple(sorted(listing.facets - {primary} if primary else (), key=lambda v: v.token))
    # What the primary's (or the product's) partitions cannot tell apart is filtered.
    filtered = (
        bool(others)
        or listing.exclude_incentivized
        or (listing.verified_only and primary is not None)
    )
    base = replace(
        empty_plan(listing, oriented(page, order), want=page.size + 1, z=tuning.z),
        facet=primary,
        scope=scope,
        filter_facets=others,
        exclude_incentivized=listing.exclude_incentivized,
        verified_only=listing.verified_only,
        filtered=filtered,
    )
    index = _index(listing, primary)
    asked = sorted(listing.ratings or rules.RATINGS, reverse=True)
    matching = counts.matching(listing)
    held = counts.held(listing)
    live = tuple(r for r in asked if matching[r - 1] > 0)
    skipped = tuple(r for r in asked if matching[r - 1] == 0)
    share = counts.selectivity(listing, primary)
    if order.by_rating:
        return _in_turn(base, listing, order, index, live, skipped, held, matching, share)
    base = replace(base, skipped_ratings=skipped)
    if not live:
        return in_order(base, order)
    expected = {r: matching[r - 1] * share for r in live}
    total = sum(expected.values())
    exact = None if head is None or filtered else head_limits(head, live, base.want)
    queries = []
    for r in live:
        h = held[r - 1]
        if exact is not None:
            limit = min(h + 1, max(1, exact[r]))
        else:
            part = proportioned_limit(base.want, expected[r] / total, tuning.z) if total else 1
            limit = min(h + 1, _scan(part, expected[r] / h if h else 1.0, filtered, tuning.z))
        queries.append(
            PlannedQuery(index, plan_partition(replace(base, queries=()), r), limit, h, r)
        )
    fan_out = replace(
        base,
        strategy=_single(listing) if len(queries) == 1 else Strategy.FAN_OUT,
        queries=tuple(queries),
        head_sized=exact is not None,
    )
    broad = _filtered_scan(base, listing, counts, total, tuning)
    if broad is not None and broad.queries[0].limit * tuning.filtered_advantage < sum(
        q.limit for q in queries
    ):
        return in_order(broad, order)
    return in_order(fan_out, order)


def _scan(matches: int, fraction: float, filtered: bool, z: float) -> int:
    """Items to read from a partition for ``matches`` of its items, a ``fraction`` of which
    match the filter."""
    if not filtered or fraction >= 1.0:
        return matches
    return filtered_limit(matches, max(fraction, 1e-6), z)


def _index(listing: ListingFilter, primary: FacetValue | None) -> Index:
    if primary is not None:
        return Index.FACET_BY_RATING if listing.language is None else Index.FACET_BY_LANG_AND_RATING
    if listing.verified_only:
        if listing.language is None:
            return Index.VERIFIED_BY_RATING
        return Index.VERIFIED_BY_LANG_AND_RATING
    return Index.BY_RATING if listing.language is None else Index.BY_LANG_AND_RATING


def _single(listing: ListingFilter) -> Strategy:
    return Strategy.BY_RATING if listing.language is None else Strategy.BY_LANG_AND_RATING


def _filtered_scan(
    base: Plan,
    listing: ListingFilter,
    counts: FacetListingCounts,
    expected: float,
    tuning: Tuning,
) -> Plan | None:
    """One read of the product's own listing filtered on everything (ratings, verified,
    every value, incentivized); None when the product has nothing to read."""
    everything = counts.scope.total
    if everything == 0 or expected <= 0 or listing.of_group:
        return None  # a group has no listing of its own but its entries
    fraction = min(1.0, expected / everything)
    pid, lang = listing.product_id, listing.language
    index = Index.ALL if lang is None else Index.BY_LANG
    pk = keys.all_pk(pid) if lang is None else keys.lang_pk(pid, lang)
    limit = min(everything + 1, filtered_limit(base.want, fraction, tuning.z))
    asked = tuple(sorted(listing.ratings, reverse=True)) if listing.ratings else ()
    return replace(
        base,
        strategy=Strategy.FILTERED_SCAN_OF_INDEX,
        queries=(PlannedQuery(index, pk, limit, everything),),
        facet=None,
        scope=None,
        filter_facets=tuple(sorted(listing.facets, key=lambda v: v.token)),
        filter_ratings=asked,
        # Ratings counted zero are filtered on too: they may have gained comments since.
        skipped_ratings=base.skipped_ratings if asked else (),
        match_fraction=fraction,
        filtered=True,
    )


def _in_turn(
    base: Plan,
    listing: ListingFilter,
    order: Order,
    index: Index,
    live: Sequence[int],
    skipped: Sequence[int],
    held: Counts,
    matching: Counts,
    share: float,
) -> Plan:
    """A rating order over the partitions in turn, from the cursor's partition on (see
    ``planner._plan_in_turn``): a partition read whole is read to its count plus one; one
    entered at the cursor, or read for part of the page, by the items its share of the
    page takes to scan."""
    page = PageRequest(base.page_size, base.direction, base.position)
    descending = (order is Order.HIGHEST_RATING) == (page.direction is Direction.FORWARD)
    ratings = sorted(live, reverse=descending)
    dropped = sorted(skipped, reverse=descending)
    at: int | None = None
    if page.position is not None:
        at, _ = keys.split_rating_position(page.position)
        ratings = [r for r in ratings if (r <= at if descending else r >= at)]
        dropped = [r for r in dropped if (r <= at if descending else r >= at)]
    plan = replace(base, order=order, skipped_ratings=tuple(dropped), reversed=False)
    if not ratings:
        return plan
    rests = [None if r == at else round(matching[r - 1] * share) for r in ratings]
    limits = in_turn_limits(rests, base.want)
    queries = []
    for n, r in enumerate(ratings):
        h = held[r - 1]
        limit = limits[n] if n < len(limits) else 0
        rest = rests[n]
        if limit and rest is not None and limit > rest:
            limit = h + 1  # the whole partition: storage then says it ended
        elif limit:
            fraction = matching[r - 1] * share / h if h else 1.0
            limit = min(h + 1, _scan(limit, fraction, base.filtered, base.z))
        queries.append(PlannedQuery(index, plan_partition(plan, r), limit, h, r))
    return replace(plan, strategy=Strategy.IN_TURN, queries=tuple(queries))


def facet_plan_holds(plan: Plan, listing: ListingFilter, fresh: FacetListingCounts) -> bool:
    """Whether a plan made from a snapshot of the counters holds under the fresh ones: it
    reads the same primary's entries and every rating it skipped is still counted zero (a
    filtered scan filters on every rating asked, so it always holds)."""
    if plan.strategy is Strategy.FILTERED_SCAN_OF_INDEX:
        return True
    if plan.queries and fresh.primary(listing) != plan.facet:
        return False
    matching = fresh.matching(listing)
    return all(matching[r - 1] == 0 for r in plan.skipped_ratings)
