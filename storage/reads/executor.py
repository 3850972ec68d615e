"""Runs a Plan: concurrent queries per round, a k-way merge, top-ups only where needed.

Round one issues every planned query at once (``asyncio.TaskGroup``: one failure cancels
the others and fails the read, never a partial page). If the merge runs out of a partition
before the page is full, with a shortfall of ``d`` items, round two tops up:

- When the partitions' read-but-unmerged items number at least ``d``, the ``d``-th of them
  is a cut key ``c``: the page cannot extend past it. Each unfinished partition not yet read
  as far as ``c`` gets one range read, ``BETWEEN`` its position and ``c`` (at most ``d``
  items). Afterwards every partition is either finished, read through ``c``, or holds ``d``
  unmerged items, so the merge completes, having read only items that could be on the page.
- Otherwise each unfinished partition is asked for enough to fill the shortfall on its own,
  which also always completes the merge.

Either way an unfiltered read takes at most two rounds (barring DynamoDB's 1 MB response
cut-off). A filtered scan is topped up by the expected number of items to scan.

Counters never bound a read: a partition is exhausted only when storage returned no
``LastEvaluatedKey`` for a read that was not a range read, and whether more exists comes
from what storage returned (the page reads one item more than it returns).

A rating order (``Strategy.IN_TURN``) is no merge but a concatenation: its partitions in
turn. Round one reads those the plan gave a limit; a later round reads the first partition
not yet read to its end by the page's shortfall when its rest is unknown (partly read, or
entered at a cursor), or else as many unread partitions as the shortfall needs at once,
each to its counter plus one; until the page is full or every partition has ended. A page
entered at a cursor thus takes two query rounds at most while the counters hold.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field, replace

from storage.base.errors import StorageUnavailable
from storage.base.expressions import Attr, Condition, all_of, query_request
from storage.base.types import Response
from storage.engine.retry import gather_reads
from storage.engine.table import TableRef
from storage.model import keys
from storage.model.comments import Comment, Direction
from storage.model.items import FACETS_ATTR, INCENTIVIZED_ATTR, VERIFIED_ATTR, item_to_comment
from storage.reads import merge as merging
from storage.reads.planner import Plan, PlannedQuery, Strategy, filtered_limit, in_turn_limits

# A top-up round always progresses (reads at least one item or ends a partition); this only
# guards against an engine that would return empty pages with a continuation key forever.
MAX_ROUNDS = 64


@dataclass(frozen=True, slots=True)
class ExecutedQuery:
    """One storage call made for a page."""

    index: str
    partition_key: str
    limit: int
    items_read: int
    items_returned: int
    capacity_units: float
    round: int
    # A round-two range read (BETWEEN the partition's position and a cut key).
    ranged: bool = False


@dataclass(frozen=True, slots=True)
class Page:
    """A page of comments in listing order (newest first), whatever the direction."""

    comments: tuple[Comment, ...]
    # More comments exist beyond the page in the direction of travel.
    has_more: bool
    plan: Plan
    executed: tuple[ExecutedQuery, ...]
    # Each comment's position in the order read (its key in the index's sort key): what a
    # cursor names.
    positions: tuple[str, ...] = ()
    # The ratings of every item the merge took, in the order read (the page and the item
    # past it): what the planner may size the same position's next read by.
    head: tuple[int, ...] = ()
    # The listing ended within the head (storage said so for every partition).
    ended: bool = False
    # The counters were read in a round of their own before the queries.
    counts_round: bool = False
    # The plan made from a snapshot of the counters did not hold against the fresh ones,
    # and was extended by the partitions it had skipped (planner.extend_plan).
    corrected: bool = False

    @property
    def items_read(self) -> int:
        return sum(q.items_read for q in self.executed)

    @property
    def storage_rounds(self) -> int:
        """Sequential storage rounds of the page, the counters' read included."""
        return self.rounds + self.counts_round

    @property
    def capacity_units(self) -> float:
        return sum(q.capacity_units for q in self.executed)

    @property
    def rounds(self) -> int:
        return max((q.round for q in self.executed), default=0)


@dataclass(slots=True)
class _Partition:
    spec: PlannedQuery
    keys: list[str] = field(default_factory=list)
    comments: list[Comment] = field(default_factory=list)
    position: str | None = None
    # Read completely up to this key (merge order); see merge.Stream.bound.
    bound: str | None = None
    exhausted: bool = False
    # Items storage read of it, and the Limit of its last read (a filtered read's top-ups
    # are sized from the share of what it read that matched).
    scanned: int = 0
    last_limit: int = 0


@dataclass(frozen=True, slots=True)
class _Request:
    part: _Partition
    limit: int
    # Read only down (or up) to this key, inclusive: a range read of round two.
    until: str | None = None


# Called once round one is read, with the plan made from a snapshot of the counters: the
# plan to go on with (itself, or extended by planner.extend_plan once the fresh counters
# are in).
Recheck = Callable[[], Awaitable[Plan]]


async def execute(table: TableRef, plan: Plan, recheck: Recheck | None = None) -> Page:
    """Read one page as planned; the page is full unless fewer items match."""
    planned, waited = plan, False
    if recheck is not None and not plan.queries:
        # Nothing to read by the snapshot: the fresh counters may say otherwise, and the
        # page waits for them.
        plan, recheck, waited = await recheck(), None, True
    if plan.strategy is Strategy.IN_TURN:
        return _marked(await _execute_in_turn(table, plan, recheck), planned, waited)
    parts = [_Partition(q, position=plan.position) for q in plan.queries]
    executed: list[ExecutedQuery] = []
    descending = plan.direction is Direction.FORWARD
    requests = [_Request(p, p.spec.limit) for p in parts]
    result = merging.MergeResult((), True, ())
    for round_no in range(1, MAX_ROUNDS + 1):
        if not requests:
            break
        responses = await gather_reads([_query(table, plan, r) for r in requests])
        for request, response in zip(requests, responses, strict=True):
            executed.append(_absorb(request, response, round_no))
        if recheck is not None:
            extended, recheck = await recheck(), None
            if extended is not plan:
                # The partitions of skipped ratings that have comments now: read next,
                # before any top-up, which then sees every partition.
                parts, added = _extend(parts, extended)
                plan = extended
                requests = [_Request(p, p.spec.limit) for p in added]
                continue
        result = merging.merge(
            [merging.Stream(p.keys, p.exhausted, p.bound) for p in parts],
            plan.want,
            descending=descending,
        )
        if result.complete:
            break
        requests = _top_ups(plan, parts, plan.want - len(result.picks), result.consumed)
        if not requests:
            # Unreachable by construction (an incomplete merge always has a partition to
            # read); refusing beats returning a short page as if it were complete.
            raise StorageUnavailable("the page could not be completed")
    else:
        raise StorageUnavailable("storage kept returning empty pages")
    picked = [parts[i].comments[j] for i, j in result.picks]
    positions = [parts[i].keys[j] for i, j in result.picks]
    head = tuple(c.rating for c in picked)
    has_more = len(picked) > plan.page_size
    picked, positions = picked[: plan.page_size], positions[: plan.page_size]
    page = _page(plan, picked, positions, has_more, executed)
    return _marked(replace(page, head=head, ended=len(head) < plan.want), planned, waited)


def _marked(page: Page, planned: Plan, waited: bool) -> Page:
    """The page, said to be corrected when its plan is not the one it started with, and
    to have waited for the counters when it did."""
    return replace(page, corrected=page.plan is not planned, counts_round=waited)


def _extend(parts: list[_Partition], plan: Plan) -> tuple[list[_Partition], list[_Partition]]:
    """The partitions of ``plan`` in its order, those already read kept as they are; and
    the ones added."""
    have = {p.spec.partition_key: p for p in parts}
    at, start = (None, None)
    if plan.strategy is Strategy.IN_TURN and plan.position is not None:
        at, start = keys.split_rating_position(plan.position)
    out, added = [], []
    for q in plan.queries:
        part = have.get(q.partition_key)
        if part is None:
            position = plan.position if plan.strategy is not Strategy.IN_TURN else None
            part = _Partition(q, position=start if q.rating == at else position)
            added.append(part)
        out.append(part)
    return out, added


def _page(
    plan: Plan,
    picked: list[Comment],
    positions: list[str],
    has_more: bool,
    executed: list[ExecutedQuery],
) -> Page:
    """The page in the order's own order: a backward page was read the other way, and so
    is every page of an order that reverses its index's (OLDEST)."""
    if (plan.direction is Direction.BACKWARD) != plan.reversed:
        picked.reverse()
        positions.reverse()
    return Page(tuple(picked), has_more, plan, tuple(executed), tuple(positions))


async def _execute_in_turn(table: TableRef, plan: Plan, recheck: Recheck | None) -> Page:
    """A rating order's page: its partitions one after another (see the module's doc)."""
    parts, _ = _extend([], plan)
    executed: list[ExecutedQuery] = []
    requests = [_Request(p, p.spec.limit) for p in parts if p.spec.limit > 0]
    taken: list[tuple[_Partition, int]] = []
    for round_no in range(1, MAX_ROUNDS + 1):
        if requests:
            responses = await gather_reads([_query(table, plan, r) for r in requests])
            for request, response in zip(requests, responses, strict=True):
                executed.append(_absorb(request, response, round_no))
        if recheck is not None:
            extended, recheck = await recheck(), None
            if extended is not plan:
                # Skipped ratings with comments now take their places in the turn order.
                parts, _ = _extend(parts, extended)
                plan = extended
        taken, unfinished = _concatenate(parts, plan.want)
        if unfinished is None:
            break
        requests = _in_turn_requests(parts[parts.index(unfinished) :], plan.want - len(taken))
    else:
        raise StorageUnavailable("storage kept returning empty pages")
    picked = [p.comments[j] for p, j in taken]
    positions = [keys.rating_position(_rating(p), p.keys[j]) for p, j in taken]
    has_more = len(picked) > plan.page_size
    picked, positions = picked[: plan.page_size], positions[: plan.page_size]
    return _page(plan, picked, positions, has_more, executed)


def _in_turn_requests(parts: list[_Partition], need: int) -> list[_Request]:
    """The next round of a rating order, from the first partition not read to its end.

    A partition partly read (or entered at a cursor) holds an unknown rest: it alone is
    read, by the whole shortfall. Partitions not read yet are read from their start, so
    their counters say how far each reaches: as many as the shortfall needs are read at
    once, each to its count plus one (storage then says it ended)."""
    unended = [p for p in parts if not p.exhausted]
    rests = [None if p.keys or p.position is not None else p.spec.expected_count for p in unended]
    return [_Request(p, n) for p, n in zip(unended, in_turn_limits(rests, need), strict=False)]


def _concatenate(
    parts: list[_Partition], want: int
) -> tuple[list[tuple[_Partition, int]], _Partition | None]:
    """The first ``want`` items of the partitions in turn, and the partition that must be
    read further to go on (None: the page is complete, or every partition has ended)."""
    taken: list[tuple[_Partition, int]] = []
    for p in parts:
        for j in range(len(p.keys)):
            if len(taken) == want:
                return taken, None
            taken.append((p, j))
        if len(taken) == want:
            return taken, None
        if not p.exhausted:
            return taken, p
    return taken, None


def _rating(p: _Partition) -> int:
    if p.spec.rating is None:
        raise ValueError("a rating order's partition names its rating")
    return p.spec.rating


def _top_ups(
    plan: Plan, parts: list[_Partition], shortfall: int, consumed: tuple[int, ...]
) -> list[_Request]:
    live = [(p, used) for p, used in zip(parts, consumed, strict=True) if not p.exhausted]
    if plan.strategy is Strategy.FILTERED_SCAN_OF_INDEX:
        need = filtered_limit(shortfall, plan.match_fraction, plan.z)
        return [_Request(p, need) for p, _ in live]
    descending = plan.direction is Direction.FORWARD
    unmerged = sorted(
        (k for p, used in zip(parts, consumed, strict=True) for k in p.keys[used:]),
        reverse=descending,
    )
    requests = []
    if len(unmerged) >= shortfall:
        cut = unmerged[shortfall - 1]
        for p, _ in live:
            last = p.keys[-1] if p.keys else p.position
            covered = last is not None and (last <= cut if descending else last >= cut)
            if not covered and not _known_through(p, cut, descending):
                requests.append(_Request(p, _range_limit(plan, p, shortfall), cut))
        return requests
    for p, used in live:
        # Enough that this partition alone could fill the shortfall.
        need = shortfall - (len(p.keys) - used)
        if need > 0:
            requests.append(_Request(p, _grown(plan, p, need)))
    return requests


def _grown(plan: Plan, p: _Partition, need: int) -> int:
    """The Limit of a top-up that must find ``need`` more matches in a partition. A
    filtered read scans for them by the share of the partition's items that matched so
    far, and at least twice its last read (so a partition whose matches are rarer than
    planned is read to its end in a number of rounds that grows with the log of its size,
    not with it); never past the partition's count when known."""
    if not plan.filters:
        return need
    share = max(len(p.keys), 1) / max(p.scanned, 1)
    limit = max(filtered_limit(need, min(share, 1.0), plan.z), 2 * p.last_limit)
    if p.spec.expected_count is not None:
        limit = min(limit, p.spec.expected_count + 1)
    return max(limit, need)


def _range_limit(plan: Plan, p: _Partition, shortfall: int) -> int:
    """The Limit of a range read up to a cut key. Unfiltered, the range holds at most
    ``shortfall`` items the page needs; filtered, that many matches may lie behind any
    number of items that do not match, and a Limit of ``shortfall`` items would end the
    read early, round after round: the cut key bounds it instead (to the partition's count
    when known, whose read ends at the cut anyway)."""
    if not plan.filters or p.spec.expected_count is None:
        return shortfall
    return max(shortfall, p.spec.expected_count + 1)


def _known_through(p: _Partition, key: str, descending: bool) -> bool:
    if p.bound is None:
        return False
    return key >= p.bound if descending else key <= p.bound


async def _query(table: TableRef, plan: Plan, request: _Request) -> Response:
    p, limit = request.part, request.limit
    key = Attr(p.spec.index.partition_attr).eq(p.spec.partition_key)
    sort = Attr(p.spec.index.sort_attr)
    forward = plan.direction is Direction.FORWARD
    if request.until is not None and p.position is not None:
        # BETWEEN is inclusive: move the end at our position just past it, so the item
        # there is not read twice (no GSISK lies between the two).
        if forward:
            low, high = request.until, keys.key_just_below(p.position)
        else:
            low, high = keys.key_just_above(p.position), request.until
        key &= sort.between(low, high)
    elif p.position is not None:
        key &= sort.lt(p.position) if forward else sort.gt(p.position)
    params = query_request(
        table.name,
        index=p.spec.index.value,
        key=key,
        filter=filter_of(plan),
        forward=plan.scan_forward,
        limit=limit,
    )
    params["ReturnConsumedCapacity"] = "TOTAL"
    return await table.client.query(**params)


def filter_of(plan: Plan) -> Condition | None:
    """The FilterExpression of a filtered plan (a filtered scan of a broad index, or a
    facet's partitions filtered on what they cannot tell apart); None for other plans."""
    if not plan.filters:
        return None
    terms = []
    if plan.filter_ratings:
        terms.append(Attr("rating").is_in(plan.filter_ratings))
    if plan.verified_only:
        terms.append(Attr(VERIFIED_ATTR).eq(True))
    terms += [Attr(FACETS_ATTR).contains(f.token) for f in plan.filter_facets]
    if plan.exclude_incentivized:
        # Stored only when true.
        terms.append(Attr(INCENTIVIZED_ATTR).not_exists())
    return all_of(terms)


def _absorb(request: _Request, response: Response, round_no: int) -> ExecutedQuery:
    p, limit = request.part, request.limit
    items = response.get("Items", [])
    sort_attr = p.spec.index.sort_attr
    for item in items:
        p.keys.append(item[sort_attr]["S"])
        p.comments.append(item_to_comment(item))
    scanned = int(response.get("ScannedCount", len(items)))
    p.scanned += scanned
    p.last_limit = limit
    last_key = response.get("LastEvaluatedKey")
    if last_key is not None:
        # Continue after the last item evaluated, which a filter may not have returned:
        # every item up to it has been seen, which the merge may count on.
        p.position = last_key[sort_attr]["S"]
        p.bound = p.position
    elif request.until is not None:
        # The range is read to its end: nothing of this partition lies before ``until``.
        p.position = p.bound = request.until
    else:
        p.exhausted = True
    capacity = response.get("ConsumedCapacity") or {}
    return ExecutedQuery(
        index=p.spec.index.value,
        partition_key=p.spec.partition_key,
        limit=limit,
        items_read=scanned,
        items_returned=len(items),
        capacity_units=float(capacity.get("CapacityUnits", 0.0)),
        round=round_no,
        ranged=request.until is not None,
    )
