"""The read planner: a pure function from (filter, page request, stats) to a printable Plan.

No I/O happens here. The plan says which index to query, which partitions, the sort-key
condition, the first-round limit of every query and which ratings were skipped, so it can be
printed (EXPLAIN), asserted in tests and returned to clients.

Read budget. A page needs ``want`` items: the page size, plus one to learn from storage
whether more exists. A single partition is read with ``Limit = want``. A fan-out over k
ratings would read ``k * want`` items if every query asked for a full page (the blog's
version); instead each query's first-round limit is its expected share of the page plus a
fraction ``z`` of a standard deviation, and at most the rating's count plus one (so a
partition that holds what its counter says is read to its end in one query, and storage
says so). The executor tops up only the queries the merge ran out of.

Counters are hints: they size the limits, skip ratings counted zero and give totalCount,
but a partition may hold more or fewer items than its counter says by the time it is read
(a write in between; on AWS, eventually consistent indexes). The executor never treats a
count as a bound: a partition is finished only when storage says so.

When almost every comment of the scope matches the filter, one query on the broader index
with a FilterExpression scans fewer items than k proportioned queries; the planner compares
both estimates and picks the cheaper. Both read the same sort order, so results are equal.

Orders. OLDEST reads the newest-first plan the other way. MOST_HELPFUL is the newest-first
plan on the helpful twins of its indexes (same partitions, sorted by helpful count then
GSISK), so every filter and the choice between a fan-out and a filtered read carry over.
HIGHEST_RATING and LOWEST_RATING read the per-rating partitions one after another
(``Strategy.IN_TURN``): the counters say where each ends, so the partitions a page needs
are read at once when the page starts at a partition's start, and ratings counted zero
cost nothing.
"""

from __future__ import annotations

import enum
import math
from collections.abc import Sequence
from dataclasses import dataclass, replace

from storage.model import keys, rules
from storage.model.comments import Direction, ListingFilter, Order, PageRequest, RatingCounts
from storage.model.facets import FacetValue, Scope, facet_lang_partition, facet_partition
from storage.model.indexes import SORT_KEY, Index
from storage.model.patterns import index_patterns, read_pattern
from storage.reads.snapshots import Head


class Strategy(enum.Enum):
    EMPTY = "EMPTY"
    ALL = "ALL"
    BY_LANG = "BY_LANG"
    BY_RATING = "BY_RATING"
    BY_LANG_AND_RATING = "BY_LANG_AND_RATING"
    FAN_OUT = "FAN_OUT"
    FILTERED_SCAN_OF_INDEX = "FILTERED_SCAN_OF_INDEX"
    # The rating orders: one partition after another, in the order's rating order.
    IN_TURN = "IN_TURN"
    # Not product listings: one partition of an index of their own.
    BY_AUTHOR = "BY_AUTHOR"
    MODERATION_QUEUE = "MODERATION_QUEUE"


@dataclass(frozen=True, slots=True)
class Tuning:
    """Knobs of the read budget; the defaults are what the benchmarks settled on."""

    # Standard deviations of head-room added to each fan-out query's expected share. Lower
    # reads less and needs a second (range) round more often; see docs/benchmarks/results.md.
    z: float = 0.25
    # A filtered scan must be estimated at least this much cheaper than a fan-out.
    filtered_advantage: float = 1.0
    # The head-room of a page planned from counters read in a round of their own (the
    # process had no snapshot of them): the query round should then be the page's last.
    cold_z: float = 2.0

    def __post_init__(self) -> None:
        if self.z < 0 or self.cold_z < 0 or self.filtered_advantage <= 0:
            raise ValueError("tuning values must be positive")

    def cold(self) -> Tuning:
        """These knobs for a page that has already waited a round for its counters."""
        return replace(self, z=max(self.z, self.cold_z))


DEFAULT_TUNING = Tuning()


@dataclass(frozen=True, slots=True)
class PlannedQuery:
    """One storage query of a plan: a partition of an index and its first-round limit."""

    index: Index
    partition_key: str
    limit: int
    # Comments in the partition per the counters, when the plan had them: a hint for
    # limits and EXPLAIN, never a bound on what the partition holds.
    expected_count: int | None
    rating: int | None = None


@dataclass(frozen=True, slots=True)
class Plan:
    """What the executor will do for one page, and why."""

    strategy: Strategy
    product_id: str | None  # None: not a product's listing (an author's, the queue)
    language: str | None
    direction: Direction
    position: str | None
    page_size: int
    want: int
    queries: tuple[PlannedQuery, ...] = ()
    skipped_ratings: tuple[int, ...] = ()
    filter_ratings: tuple[int, ...] = ()
    # Only verified purchases: read from the verified indexes, or filtered on a broad one.
    verified_only: bool = False
    # Share of the scanned partition that matches the filter (1.0 without a filter).
    match_fraction: float = 1.0
    z: float = DEFAULT_TUNING.z
    order: Order = Order.NEWEST
    # The page is read in the index's order reversed (OLDEST): the executor reverses it.
    reversed: bool = False
    # The fan-out's limits come from the remembered head of its position (head_limits).
    head_sized: bool = False
    # A facet listing (``storage.reads.facet_plans``): the value whose entries are read, in
    # which scope (None: the product's own partitions), the values the queries filter
    # the comments on besides, and whether incentivized reviews are left out.
    facet: FacetValue | None = None
    scope: Scope | None = None
    filter_facets: tuple[FacetValue, ...] = ()
    exclude_incentivized: bool = False
    # The queries carry a FilterExpression though the plan is no filtered scan: a facet
    # fan-out filtered on verified purchase, incentivized or another facet.
    filtered: bool = False

    @property
    def index(self) -> Index | None:
        return self.queries[0].index if self.queries else None

    @property
    def filters(self) -> bool:
        """Whether the queries carry a FilterExpression (a filtered scan of a broad index,
        or a facet's partitions read with a filter)."""
        return self.strategy is Strategy.FILTERED_SCAN_OF_INDEX or self.filtered

    @property
    def filter_text(self) -> str:
        terms = []
        if self.filter_ratings:
            terms.append(f"rating IN {list(self.filter_ratings)}")
        if self.verified_only:
            terms.append("verified")
        terms += [f"facets CONTAINS {f.token}" for f in self.filter_facets]
        if self.exclude_incentivized:
            terms.append("NOT incentivized")
        return " AND ".join(terms)

    @property
    def scan_forward(self) -> bool:
        """DynamoDB's ScanIndexForward: newest first means descending."""
        return self.direction is Direction.BACKWARD

    @property
    def sort_key_condition(self) -> str | None:
        if self.position is None:
            return None
        op = "<" if self.direction is Direction.FORWARD else ">"
        attr = SORT_KEY if self.index is None else self.index.sort_attr
        return f"{attr} {op} {self.position}"

    @property
    def patterns(self) -> tuple[str, ...]:
        """The access patterns this page follows (``storage.model.patterns``): its index's
        listing pattern, then what the filter, the order and the position add."""
        codes = [code for q in self.queries for code in index_patterns(q.index)]
        if self.facet is not None or self.filter_facets or self.exclude_incentivized:
            codes.append("AP19")
        if self.filter_ratings:
            codes.append("AP3")
        if self.verified_only:
            codes.append("AP12")
        if self.strategy is Strategy.IN_TURN:
            codes.append("AP14")
        if self.position is not None:
            codes.append("AP6")
        return tuple(dict.fromkeys(codes))

    def explain(self) -> str:
        """A human-readable EXPLAIN of the plan."""
        facet = ""
        if self.facet is not None and self.scope is not None:
            facet = f" facet={self.facet.token} scope={self.scope.token}"
        lines = [
            f"{self.strategy.value} product={self.product_id or '-'}{facet}"
            f" language={self.language or '*'} order={self.order.value}"
            f" direction={self.direction.value} page={self.page_size} want={self.want}",
        ]
        if self.patterns:
            named = (f"{code} ({read_pattern(code).asked})" for code in self.patterns)
            lines.append(f"  patterns {', '.join(named)}")
        if self.index is not None:
            order = "ascending" if self.scan_forward else "descending"
            lines.append(f"  index {self.index.value}, {self.index.sort_attr} {order}")
            if self.strategy is Strategy.IN_TURN:
                lines.append("  partitions read in turn, in the order listed")
        if self.sort_key_condition is not None:
            lines.append(f"  where {self.sort_key_condition}")
        if self.strategy is Strategy.FILTERED_SCAN_OF_INDEX:
            lines.append(
                f"  filter {self.filter_text} (matches {self.match_fraction:.1%} of the partition)"
            )
        elif self.filters:
            lines.append(f"  filter {self.filter_text} (on every partition read)")
        for q in self.queries:
            of = "count unknown" if q.expected_count is None else f"of ~{q.expected_count}"
            lines.append(
                f"  query {q.index.partition_attr} = {q.partition_key} limit {q.limit} ({of})"
            )
        if self.skipped_ratings:
            lines.append(f"  skipped ratings {list(self.skipped_ratings)}: count is zero")
        if self.head_sized:
            lines.append("  limits from the items this process last read at this position")
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.explain()


def proportioned_limit(want: int, share: float, z: float) -> int:
    """Expected items of one stream in the next ``want`` merged items, plus head-room."""
    mean = want * share
    return max(1, math.ceil(mean + z * math.sqrt(mean * (1.0 - share))))


def filtered_limit(want: int, fraction: float, z: float) -> int:
    """Items to scan for ``want`` matches when a ``fraction`` of items match (neg. binomial)."""
    mean = want / fraction
    return max(1, math.ceil(mean + z * math.sqrt(want * (1.0 - fraction)) / fraction))


def empty_plan(
    listing: ListingFilter,
    page: PageRequest,
    *,
    want: int,
    z: float = DEFAULT_TUNING.z,
) -> Plan:
    """The EMPTY plan of a page; the planners fill in strategy and queries from it."""
    return Plan(
        strategy=Strategy.EMPTY,
        product_id=listing.product_id,
        language=listing.language,
        direction=page.direction,
        position=page.position,
        page_size=page.size,
        want=want,
        z=z,
    )


def plan_author(author_id: str, page: PageRequest) -> Plan:
    """An author's comments in every status, newest first: one partition of ``byAuthor``."""
    want = page.size + 1
    query = PlannedQuery(Index.BY_AUTHOR, author_id, want, None)
    return _partition_plan(Strategy.BY_AUTHOR, query, page)


def plan_queue(page: PageRequest) -> Plan:
    """The moderation queue: PENDING comments by submission time. Its natural reading is
    oldest first, so a forward page ascends (the reverse of product listings)."""
    want = page.size + 1
    query = PlannedQuery(Index.MODERATION_QUEUE, keys.QUEUE_PK, want, None)
    flipped = Direction.BACKWARD if page.direction is Direction.FORWARD else Direction.FORWARD
    return _partition_plan(Strategy.MODERATION_QUEUE, query, replace(page, direction=flipped))


def _partition_plan(strategy: Strategy, query: PlannedQuery, page: PageRequest) -> Plan:
    return Plan(
        strategy=strategy,
        product_id=None,
        language=None,
        direction=page.direction,
        position=page.position,
        page_size=page.size,
        want=query.limit,
        queries=(query,),
    )


def needs_stats(listing: ListingFilter, order: Order = Order.NEWEST) -> bool:
    """Whether a page of the listing in this order is planned from the counters (a rating
    or verified filter, or a rating order); otherwise it is one partition, whatever they say."""
    return listing.ratings is not None or listing.verified_only or order.by_rating


def plan_unfiltered(listing: ListingFilter, page: PageRequest, order: Order = Order.NEWEST) -> Plan:
    """A plan for a listing without a rating or verified filter, made without stats.

    Such a listing is one partition (``all`` or ``byLang``, or their helpful twins) whatever
    the counts say, so its page can be read while the counters are read, in one round
    instead of two.
    """
    if needs_stats(listing, order):
        raise ValueError("a rating or verified filter, or a rating order, needs the stats")
    pid, lang = listing.product_id, listing.language
    want = page.size + 1
    base = empty_plan(listing, oriented(page, order), want=want)
    if lang is None:
        query = PlannedQuery(Index.ALL, keys.all_pk(pid), want, None)
        plan = replace(base, strategy=Strategy.ALL, queries=(query,))
    else:
        query = PlannedQuery(Index.BY_LANG, keys.lang_pk(pid, lang), want, None)
        plan = replace(base, strategy=Strategy.BY_LANG, queries=(query,))
    return in_order(plan, order)


def oriented(page: PageRequest, order: Order) -> PageRequest:
    """The page as the newest-first indexes read it: OLDEST walks them the other way."""
    if order is not Order.OLDEST:
        return page
    flipped = Direction.BACKWARD if page.direction is Direction.FORWARD else Direction.FORWARD
    return replace(page, direction=flipped)


def in_order(plan: Plan, order: Order) -> Plan:
    """A newest-first plan made into one of ``order`` (NEWEST, OLDEST or MOST_HELPFUL)."""
    if order is Order.MOST_HELPFUL:
        twins = tuple(replace(q, index=q.index.helpful_twin) for q in plan.queries)
        return replace(plan, queries=twins, order=order)
    return replace(plan, order=order, reversed=order is Order.OLDEST)


def plan_listing(
    listing: ListingFilter,
    page: PageRequest,
    stats: RatingCounts,
    tuning: Tuning = DEFAULT_TUNING,
    order: Order = Order.NEWEST,
    head: Head | None = None,
) -> Plan:
    """Choose index, partitions and limits for one page; pure, deterministic.

    ``verified_only`` reads the verified indexes, sized and skipped by the verified
    counters exactly as ratings are by the counters of all comments; with no rating
    filter it is a fan-out over the five ratings (those counted zero skipped).

    ``head`` is what followed the page's position when it was last read under these
    counters (``storage.reads.snapshots``): a fan-out is then sized by ``head_limits`` instead of
    head-room.
    """
    if stats.product_id != listing.product_id or stats.language != listing.language:
        raise ValueError("stats must be those of the listing's product and language")
    if order.by_rating:
        return _plan_in_turn(listing, page, stats, order)
    return in_order(_plan_newest(listing, oriented(page, order), stats, tuning, head), order)


def _plan_newest(
    listing: ListingFilter,
    page: PageRequest,
    stats: RatingCounts,
    tuning: Tuning,
    head: Head | None,
) -> Plan:
    if listing.verified_only:
        return _plan_verified(listing, page, stats, tuning, head)
    pid, lang = listing.product_id, listing.language
    requested = listing.ratings  # None: every rating (naming all five was normalised away)
    matching = stats.matching(requested)
    # One more than the page, even for a page of 0: whether more exists comes from storage.
    want = page.size + 1
    base = empty_plan(listing, page, want=want, z=tuning.z)

    skipped: tuple[int, ...] = ()
    live: tuple[int, ...] = ()
    if requested is not None:
        live = tuple(r for r in sorted(requested, reverse=True) if stats.count(r) > 0)
        skipped = tuple(r for r in sorted(requested, reverse=True) if stats.count(r) == 0)

    if matching == 0:
        return replace(base, skipped_ratings=skipped)

    if requested is None:
        if lang is None:
            q = PlannedQuery(Index.ALL, keys.all_pk(pid), want, matching)
            return replace(base, strategy=Strategy.ALL, queries=(q,))
        q = PlannedQuery(Index.BY_LANG, keys.lang_pk(pid, lang), want, matching)
        return replace(base, strategy=Strategy.BY_LANG, queries=(q,))

    if len(live) == 1:
        (rating,) = live
        count = stats.count(rating)
        if lang is None:
            index, pk, strategy = Index.BY_RATING, keys.rating_pk(pid, rating), Strategy.BY_RATING
        else:
            index, pk = Index.BY_LANG_AND_RATING, keys.lang_rating_pk(pid, lang, rating)
            strategy = Strategy.BY_LANG_AND_RATING
        q = PlannedQuery(index, pk, want, count, rating)
        return replace(base, strategy=strategy, queries=(q,), skipped_ratings=skipped)

    # Several ratings left: a proportioned fan-out, or one filtered query if that is cheaper.
    index = Index.BY_RATING if lang is None else Index.BY_LANG_AND_RATING
    # The filtered read filters on every rating asked for, even those counted zero: had one
    # gained comments since the counters were read, the filter still matches them.
    every = tuple(sorted(requested, reverse=True))
    return _several(base, listing, index, live, stats, stats.total, tuning, head, skipped, every)


def _several(
    base: Plan,
    listing: ListingFilter,
    index: Index,
    live: Sequence[int],
    counts: RatingCounts,
    scope: int,
    tuning: Tuning,
    head: Head | None,
    skipped: tuple[int, ...],
    filter_ratings: tuple[int, ...],
) -> Plan:
    """Several partitions of ``index`` to read (the ``live`` ratings, sized by ``counts``):
    a fan-out over them, or one filtered read of the broad index of the ``scope`` comments
    when that is estimated cheaper. A filtered read that names no ratings (verified only)
    leaves none out."""
    pid, lang, want = listing.product_id, listing.language, base.want
    matching = sum(counts.count(r) for r in live)
    exact = None if head is None else head_limits(head, live, want)
    fan_out = [
        PlannedQuery(
            index,
            rating_partition(pid, lang, r),
            _fan_out_limit(r, counts.count(r), matching, want, tuning, exact),
            counts.count(r),
            r,
        )
        for r in live
    ]
    fraction = matching / scope
    scan_limit = min(scope + 1, filtered_limit(want, fraction, tuning.z))
    if scan_limit * tuning.filtered_advantage < sum(q.limit for q in fan_out):
        broad = Index.ALL if lang is None else Index.BY_LANG
        pk = keys.all_pk(pid) if lang is None else keys.lang_pk(pid, lang)
        return replace(
            base,
            strategy=Strategy.FILTERED_SCAN_OF_INDEX,
            queries=(PlannedQuery(broad, pk, scan_limit, scope),),
            skipped_ratings=skipped if filter_ratings else (),
            filter_ratings=filter_ratings,
            match_fraction=fraction,
        )
    return replace(
        base,
        strategy=Strategy.FAN_OUT,
        queries=tuple(fan_out),
        skipped_ratings=skipped,
        head_sized=exact is not None,
    )


def plan_partition(plan: Plan, rating: int) -> str:
    """The partition of one rating a plan reads: its facet's in its scope, or the
    product's own."""
    if plan.facet is not None and plan.scope is not None:
        if plan.language is None:
            return facet_partition(plan.scope, plan.facet, rating)
        return facet_lang_partition(plan.scope, plan.facet, plan.language, rating)
    if plan.product_id is None:
        raise ValueError("only a product's or a facet's listing has rating partitions")
    return rating_partition(plan.product_id, plan.language, rating)


def rating_partition(product_id: str, language: str | None, rating: int) -> str:
    """The partition key of a rating's comments, of a product or of one of its languages."""
    if language is None:
        return keys.rating_pk(product_id, rating)
    return keys.lang_rating_pk(product_id, language, rating)


def _fan_out_limit(
    rating: int,
    count: int,
    matching: int,
    want: int,
    tuning: Tuning,
    exact: dict[int, int] | None,
) -> int:
    """A fan-out query's first-round limit: from the remembered head when there is one,
    else its share of the page plus head-room; never more than its count plus one."""
    if exact is not None:
        return min(count + 1, max(1, exact[rating]))
    return min(count + 1, proportioned_limit(want, count / matching, tuning.z))


def head_limits(head: Head, ratings: Sequence[int], want: int) -> dict[int, int] | None:
    """Limits that read a page whole in one round, from what followed its position.

    Each partition is read for the items the page takes from it plus one: that one lies
    past the page, so the merge knows the partition holds nothing more the page needs. The
    partition of the page's last item (the one that tells whether more exists) needs no
    extra. None when the head is too short to say (it did not reach a page of ``want``).
    A stale head only misjudges: the executor still tops up what falls short.
    """
    if len(head.ratings) >= want:
        taken = head.ratings[:want]
        last = taken[-1]
        return {r: taken.count(r) + (r != last) for r in ratings}
    if head.ended:
        # The listing ended within the head: each partition to its end (storage says so).
        return {r: head.ratings.count(r) + 1 for r in ratings}
    return None


def plan_holds(plan: Plan, fresh: RatingCounts) -> bool:
    """Whether a plan made from a snapshot of the counters holds under the fresh ones.

    Counters only size a plan's queries, which the executor certifies from what storage
    returns, except where the plan reads nothing: a rating it skipped as counted zero. The
    plan holds unless such a rating has comments now. (A filtered read filters on every
    rating asked for, skipped ones included, so it always holds.)
    """
    if plan.strategy is Strategy.FILTERED_SCAN_OF_INDEX:
        return True
    counts = fresh.only_verified() if plan.verified_only else fresh
    return all(counts.count(r) == 0 for r in plan.skipped_ratings)


def extend_plan(
    plan: Plan,
    listing: ListingFilter,
    page: PageRequest,
    fresh: RatingCounts,
    tuning: Tuning = DEFAULT_TUNING,
    order: Order = Order.NEWEST,
) -> Plan:
    """The plan to go on with once the fresh counters are in: ``plan`` itself when it
    holds; else ``plan`` with a query for each rating it skipped that has comments now, so
    the executor reads those partitions next and keeps what it read (a page costs no more
    calls than the plan from fresh counters would). A plan that queried nothing is
    replaced by that plan."""
    if plan_holds(plan, fresh):
        return plan
    if not plan.queries:
        return plan_listing(listing, page, fresh, tuning, order)
    counts = fresh.only_verified() if plan.verified_only else fresh
    gained = [r for r in plan.skipped_ratings if counts.count(r) > 0]
    live = [q.rating for q in plan.queries if q.rating is not None] + gained
    matching = sum(counts.count(r) for r in live)
    index = plan.queries[0].index
    added = []
    for r in gained:
        pk = plan_partition(plan, r)
        count = counts.count(r)
        # A rating order reads its partitions in turn and sizes them as it goes.
        if plan.strategy is Strategy.IN_TURN:
            limit = 0
        else:
            limit = _fan_out_limit(r, count, matching, plan.want, tuning, None)
        added.append(PlannedQuery(index, pk, limit, count, r))
    queries = [*plan.queries, *added]
    strategy = plan.strategy
    if strategy is Strategy.IN_TURN:
        # Their reading order, as _plan_in_turn chose it.
        descending = (order is Order.HIGHEST_RATING) == (page.direction is Direction.FORWARD)
        queries.sort(key=lambda q: q.rating or 0, reverse=descending)
    else:
        strategy = Strategy.FAN_OUT
    return replace(
        plan,
        strategy=strategy,
        queries=tuple(queries),
        skipped_ratings=tuple(r for r in plan.skipped_ratings if r not in gained),
        head_sized=False,
    )


def _plan_verified(
    listing: ListingFilter,
    page: PageRequest,
    stats: RatingCounts,
    tuning: Tuning,
    head: Head | None,
) -> Plan:
    """Verified purchases only: the verified counters play the part of the counts; their
    partitions hold exactly the matching comments, so every read item is a match."""
    pid, lang = listing.product_id, listing.language
    verified = stats.only_verified()
    requested = listing.ratings
    chosen = sorted(requested if requested is not None else rules.RATINGS, reverse=True)
    live = tuple(r for r in chosen if verified.count(r) > 0)
    # A rating named by the filter and counted zero is skipped; with no filter, the empty
    # ones are too (the verified fan-out always names ratings).
    skipped = tuple(r for r in chosen if verified.count(r) == 0)
    matching = sum(verified.count(r) for r in live)
    want = page.size + 1
    base = replace(empty_plan(listing, page, want=want, z=tuning.z), verified_only=True)
    if matching == 0:
        return replace(base, skipped_ratings=skipped)
    if lang is None:
        index, strategy = Index.VERIFIED_BY_RATING, Strategy.BY_RATING
    else:
        index, strategy = Index.VERIFIED_BY_LANG_AND_RATING, Strategy.BY_LANG_AND_RATING

    if len(live) == 1:
        (rating,) = live
        q = PlannedQuery(
            index, rating_partition(pid, lang, rating), want, verified.count(rating), rating
        )
        return replace(base, strategy=strategy, queries=(q,), skipped_ratings=skipped)
    # The alternative: the product's (or language's) listing read with a filter on
    # verified (and the ratings), when nearly everything there matches.
    every = tuple(chosen) if requested is not None else ()
    return _several(base, listing, index, live, verified, stats.total, tuning, head, skipped, every)


def _plan_in_turn(
    listing: ListingFilter, page: PageRequest, stats: RatingCounts, order: Order
) -> Plan:
    """A rating order: the partitions of the chosen ratings, in the order's rating order
    (reversed for a backward page), from the cursor's partition on.

    A partition is read from its start except the cursor's own, so the counters say how
    much each holds: the first-round limits cover the page from as many partitions as it
    needs (each to its count plus one, which lets storage say it ended). The cursor's
    partition holds an unknown rest, so nothing after it is read in the first round."""
    pid, lang = listing.product_id, listing.language
    counts = stats.only_verified() if listing.verified_only else stats
    requested = listing.ratings if listing.ratings is not None else frozenset(rules.RATINGS)
    # Reading order: highest first for a forward page of HIGHEST_RATING or a backward one
    # of LOWEST_RATING.
    descending = (order is Order.HIGHEST_RATING) == (page.direction is Direction.FORWARD)
    ratings = sorted(requested, reverse=descending)
    at: int | None = None
    if page.position is not None:
        at, _ = keys.split_rating_position(page.position)
        # The partitions before the cursor's are done with (a cursor of a rating outside
        # the filter continues at the next rating within it).
        ratings = [r for r in ratings if (r <= at if descending else r >= at)]
    live = [r for r in ratings if counts.count(r) > 0]
    skipped = tuple(r for r in ratings if counts.count(r) == 0)
    want = page.size + 1
    base = replace(
        empty_plan(listing, page, want=want),
        order=order,
        skipped_ratings=skipped,
        verified_only=listing.verified_only,
    )
    if not live:
        return base
    if listing.verified_only:
        index = Index.VERIFIED_BY_RATING if lang is None else Index.VERIFIED_BY_LANG_AND_RATING
    else:
        index = Index.BY_RATING if lang is None else Index.BY_LANG_AND_RATING

    # The cursor's partition holds an unknown rest; the others are read from their start.
    rests = [None if r == at else counts.count(r) for r in live]
    limits = in_turn_limits(rests, want)
    queries = [
        PlannedQuery(
            index,
            rating_partition(pid, lang, r),
            limits[n] if n < len(limits) else 0,
            counts.count(r),
            r,
        )
        for n, r in enumerate(live)
    ]
    return replace(base, strategy=Strategy.IN_TURN, queries=tuple(queries))


def in_turn_limits(rests: list[int | None], need: int) -> list[int]:
    """Limits of one round of a rating order over partitions in turn, given what each
    still holds (None: unknown). A partition of known size is read to its count plus one
    (storage then says it ended) and the next takes the rest of the need; one of unknown
    rest takes the whole need and ends the round. The list ends where the round does."""
    limits = []
    for rest in rests:
        if need <= 0:
            break
        if rest is None:
            limits.append(need)
            break
        limits.append(min(need, rest + 1))
        need -= rest
    return limits
