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
"""

from __future__ import annotations

import enum
import math
from dataclasses import dataclass, replace

from storage import keys
from storage.indexes import SORT_KEY, Index
from storage.model import Direction, ListingFilter, PageRequest, RatingCounts


class Strategy(enum.Enum):
    EMPTY = "EMPTY"
    ALL = "ALL"
    BY_LANG = "BY_LANG"
    BY_RATING = "BY_RATING"
    BY_LANG_AND_RATING = "BY_LANG_AND_RATING"
    FAN_OUT = "FAN_OUT"
    FILTERED_SCAN_OF_INDEX = "FILTERED_SCAN_OF_INDEX"
    # Not product listings: one partition of an index of their own.
    BY_AUTHOR = "BY_AUTHOR"
    MODERATION_QUEUE = "MODERATION_QUEUE"


@dataclass(frozen=True, slots=True)
class Tuning:
    """Knobs of the read budget; the defaults are what the benchmarks settled on."""

    # Standard deviations of head-room added to each fan-out query's expected share. Lower
    # reads less and needs a second (range) round more often; see benchmarks/RESULTS.md.
    z: float = 0.25
    # A filtered scan must be estimated at least this much cheaper than a fan-out.
    filtered_advantage: float = 1.0

    def __post_init__(self) -> None:
        if self.z < 0 or self.filtered_advantage <= 0:
            raise ValueError("tuning values must be positive")


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

    @property
    def index(self) -> Index | None:
        return self.queries[0].index if self.queries else None

    @property
    def filters(self) -> bool:
        """Whether the queries carry a FilterExpression (a filtered scan of a broad index)."""
        return self.strategy is Strategy.FILTERED_SCAN_OF_INDEX

    @property
    def filter_text(self) -> str:
        terms = []
        if self.filter_ratings:
            terms.append(f"rating IN {list(self.filter_ratings)}")
        if self.verified_only:
            terms.append("verified")
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
        return f"{SORT_KEY} {op} {self.position}"

    def explain(self) -> str:
        """A human-readable EXPLAIN of the plan."""
        lines = [
            f"{self.strategy.value} product={self.product_id or '-'}"
            f" language={self.language or '*'} direction={self.direction.value}"
            f" page={self.page_size} want={self.want}",
        ]
        if self.index is not None:
            order = "ascending" if self.scan_forward else "descending"
            lines.append(f"  index {self.index.value}, {SORT_KEY} {order}")
        if self.sort_key_condition is not None:
            lines.append(f"  where {self.sort_key_condition}")
        if self.filters:
            lines.append(
                f"  filter {self.filter_text} (matches {self.match_fraction:.1%} of the partition)"
            )
        for q in self.queries:
            of = "count unknown" if q.expected_count is None else f"of ~{q.expected_count}"
            lines.append(
                f"  query {q.index.partition_attr} = {q.partition_key} limit {q.limit} ({of})"
            )
        if self.skipped_ratings:
            lines.append(f"  skipped ratings {list(self.skipped_ratings)}: count is zero")
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


def _empty_plan(
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


def plan_unfiltered(listing: ListingFilter, page: PageRequest) -> Plan:
    """A plan for a listing without a rating or verified filter, made without stats.

    Such a listing is one partition (``all`` or ``byLang``) whatever the counts say, so
    its page can be read while the counters are read, in one round instead of two.
    """
    if listing.ratings is not None or listing.verified_only:
        raise ValueError("a rating or verified filter needs the stats to plan")
    pid, lang = listing.product_id, listing.language
    want = page.size + 1
    base = _empty_plan(listing, page, want=want)
    if lang is None:
        query = PlannedQuery(Index.ALL, keys.all_pk(pid), want, None)
        return replace(base, strategy=Strategy.ALL, queries=(query,))
    query = PlannedQuery(Index.BY_LANG, keys.lang_pk(pid, lang), want, None)
    return replace(base, strategy=Strategy.BY_LANG, queries=(query,))


def plan_listing(
    listing: ListingFilter,
    page: PageRequest,
    stats: RatingCounts,
    tuning: Tuning = DEFAULT_TUNING,
) -> Plan:
    """Choose index, partitions and limits for one page; pure, deterministic.

    ``verified_only`` reads the verified indexes, sized and skipped by the verified
    counters exactly as ratings are by the counters of all comments; with no rating
    filter it is a fan-out over the five ratings (those counted zero skipped).
    """
    if stats.product_id != listing.product_id or stats.language != listing.language:
        raise ValueError("stats must be those of the listing's product and language")
    if listing.verified_only:
        return _plan_verified(listing, page, stats, tuning)
    pid, lang = listing.product_id, listing.language
    requested = listing.ratings  # None: every rating (naming all five was normalised away)
    matching = stats.matching(requested)
    # One more than the page, even for a page of 0: whether more exists comes from storage.
    want = page.size + 1
    base = _empty_plan(listing, page, want=want, z=tuning.z)

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
    fan_out = []
    for rating in live:
        count = stats.count(rating)
        pk = keys.rating_pk(pid, rating) if lang is None else keys.lang_rating_pk(pid, lang, rating)
        limit = min(count + 1, proportioned_limit(want, count / matching, tuning.z))
        fan_out.append(PlannedQuery(index, pk, limit, count, rating))
    fan_out_cost = sum(q.limit for q in fan_out)

    scope = stats.total
    fraction = matching / scope
    scan_limit = min(scope + 1, filtered_limit(want, fraction, tuning.z))
    if scan_limit * tuning.filtered_advantage < fan_out_cost:
        broad = Index.ALL if lang is None else Index.BY_LANG
        pk = keys.all_pk(pid) if lang is None else keys.lang_pk(pid, lang)
        q = PlannedQuery(broad, pk, scan_limit, scope)
        return replace(
            base,
            strategy=Strategy.FILTERED_SCAN_OF_INDEX,
            queries=(q,),
            skipped_ratings=skipped,
            filter_ratings=live,
            match_fraction=fraction,
        )
    return replace(base, strategy=Strategy.FAN_OUT, queries=tuple(fan_out), skipped_ratings=skipped)


def _plan_verified(
    listing: ListingFilter, page: PageRequest, stats: RatingCounts, tuning: Tuning
) -> Plan:
    """Verified purchases only: the verified counters play the part of the counts; their
    partitions hold exactly the matching comments, so every read item is a match."""
    pid, lang = listing.product_id, listing.language
    verified = stats.only_verified()
    requested = listing.ratings
    chosen = sorted(requested if requested is not None else keys.RATINGS, reverse=True)
    live = tuple(r for r in chosen if verified.count(r) > 0)
    # A rating named by the filter and counted zero is skipped; with no filter, the empty
    # ones are too (the verified fan-out always names ratings).
    skipped = tuple(r for r in chosen if verified.count(r) == 0)
    matching = sum(verified.count(r) for r in live)
    want = page.size + 1
    base = replace(_empty_plan(listing, page, want=want, z=tuning.z), verified_only=True)
    if matching == 0:
        return replace(base, skipped_ratings=skipped)
    if lang is None:
        index, strategy = Index.VERIFIED_BY_RATING, Strategy.BY_RATING
    else:
        index, strategy = Index.VERIFIED_BY_LANG_AND_RATING, Strategy.BY_LANG_AND_RATING

    def pk(rating: int) -> str:
        if lang is None:
            return keys.rating_pk(pid, rating)
        return keys.lang_rating_pk(pid, lang, rating)

    if len(live) == 1:
        (rating,) = live
        q = PlannedQuery(index, pk(rating), want, verified.count(rating), rating)
        return replace(base, strategy=strategy, queries=(q,), skipped_ratings=skipped)
    fan_out = []
    for rating in live:
        count = verified.count(rating)
        limit = min(count + 1, proportioned_limit(want, count / matching, tuning.z))
        fan_out.append(PlannedQuery(index, pk(rating), limit, count, rating))
    fan_out_cost = sum(q.limit for q in fan_out)
    # The alternative: the product's (or language's) listing read with a filter on
    # verified (and the ratings), when nearly everything there matches.
    scope = stats.total
    fraction = matching / scope
    scan_limit = min(scope + 1, filtered_limit(want, fraction, tuning.z))
    if scan_limit * tuning.filtered_advantage < fan_out_cost:
        broad = Index.ALL if lang is None else Index.BY_LANG
        broad_pk = keys.all_pk(pid) if lang is None else keys.lang_pk(pid, lang)
        q = PlannedQuery(broad, broad_pk, scan_limit, scope)
        return replace(
            base,
            strategy=Strategy.FILTERED_SCAN_OF_INDEX,
            queries=(q,),
            skipped_ratings=skipped if requested is not None else (),
            filter_ratings=live if requested is not None else (),
            match_fraction=fraction,
        )
    return replace(base, strategy=Strategy.FAN_OUT, queries=tuple(fan_out), skipped_ratings=skipped)
