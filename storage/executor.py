"""Runs a Plan: concurrent queries per round, a k-way merge, top-ups only where needed.

Round one issues every planned query at once (``asyncio.TaskGroup``: one failure cancels
the others and fails the read, never a partial page). If the merge runs out of a partition
before the page is full, round two asks each partition that might still hold items for
just enough to cover the shortfall on its own, which always completes an unfiltered merge
(barring DynamoDB's 1 MB response cut-off). A filtered scan is topped up by the expected
number of items to scan for the shortfall.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from storage import merge as merging
from storage.errors import StorageUnavailable
from storage.items import item_to_comment
from storage.model import Comment, Direction
from storage.planner import Plan, PlannedQuery, Strategy, filtered_limit
from storage.retry import gather_reads
from storage.table import SORT_KEY, TableRef
from storage.types import Response

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


@dataclass(frozen=True, slots=True)
class Page:
    """A page of comments in listing order (newest first), whatever the direction."""

    comments: tuple[Comment, ...]
    # More comments exist beyond the page in the direction of travel.
    has_more: bool
    plan: Plan
    executed: tuple[ExecutedQuery, ...]

    @property
    def items_read(self) -> int:
        return sum(q.items_read for q in self.executed)

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
    read: int = 0
    exhausted: bool = False


async def execute(table: TableRef, plan: Plan) -> Page:
    """Read one page as planned; the page is full unless fewer items match."""
    parts = [_Partition(q, position=plan.position) for q in plan.queries]
    executed: list[ExecutedQuery] = []
    descending = plan.direction is Direction.FORWARD
    requests = [(p, p.spec.limit) for p in parts]
    result = merging.MergeResult((), True, ())
    for round_no in range(1, MAX_ROUNDS + 1):
        if not requests:
            break
        responses = await gather_reads(
            [_query(table, plan, p, limit) for p, limit in requests], what="comment query"
        )
        for (p, limit), response in zip(requests, responses, strict=True):
            executed.append(_absorb(p, limit, response, round_no))
        result = merging.merge(
            [merging.Stream(p.keys, p.exhausted) for p in parts], plan.want, descending=descending
        )
        if result.complete:
            break
        requests = _top_ups(plan, parts, plan.want - len(result.picks), result.consumed)
    else:
        raise StorageUnavailable("storage kept returning empty pages")
    picked = [parts[i].comments[j] for i, j in result.picks]
    if plan.has_more_from_stats is not None:
        has_more = plan.has_more_from_stats
    else:
        has_more = len(picked) > plan.page_size
    picked = picked[: plan.page_size]
    if plan.direction is Direction.BACKWARD:
        picked.reverse()
    return Page(tuple(picked), has_more, plan, tuple(executed))


def _top_ups(
    plan: Plan, parts: list[_Partition], shortfall: int, consumed: tuple[int, ...]
) -> list[tuple[_Partition, int]]:
    requests = []
    for p, used in zip(parts, consumed, strict=True):
        if p.exhausted:
            continue
        if plan.strategy is Strategy.FILTERED_SCAN_OF_INDEX:
            need = filtered_limit(shortfall, plan.match_fraction, plan.z)
        else:
            # Enough that this partition alone could fill the shortfall.
            need = shortfall - (len(p.keys) - used)
        need = min(need, p.spec.known_count - p.read)
        if need > 0:
            requests.append((p, need))
    return requests


async def _query(table: TableRef, plan: Plan, p: _Partition, limit: int) -> Response:
    names = {"#pk": p.spec.index.partition_attr}
    values: dict[str, Any] = {":pk": {"S": p.spec.partition_key}}
    condition = "#pk = :pk"
    if p.position is not None:
        names["#sk"] = SORT_KEY
        values[":pos"] = {"S": p.position}
        condition += " AND #sk < :pos" if plan.direction is Direction.FORWARD else " AND #sk > :pos"
    params: dict[str, Any] = {
        "TableName": table.name,
        "IndexName": p.spec.index.value,
        "KeyConditionExpression": condition,
        "ScanIndexForward": plan.scan_forward,
        "Limit": limit,
        "ReturnConsumedCapacity": "TOTAL",
    }
    if plan.filter_ratings:
        names["#rating"] = "rating"
        placeholders = []
        for n, rating in enumerate(plan.filter_ratings):
            values[f":r{n}"] = {"N": str(rating)}
            placeholders.append(f":r{n}")
        params["FilterExpression"] = f"#rating IN ({', '.join(placeholders)})"
    params["ExpressionAttributeNames"] = names
    params["ExpressionAttributeValues"] = values
    return await table.client.query(**params)


def _absorb(p: _Partition, limit: int, response: Response, round_no: int) -> ExecutedQuery:
    items = response.get("Items", [])
    for item in items:
        p.keys.append(item[SORT_KEY]["S"])
        p.comments.append(item_to_comment(item))
    scanned = int(response.get("ScannedCount", len(items)))
    p.read += scanned
    last_key = response.get("LastEvaluatedKey")
    if last_key is None or p.read >= p.spec.known_count:
        p.exhausted = True
    else:
        # Continue after the last item evaluated, which a filter may not have returned.
        p.position = last_key[SORT_KEY]["S"]
    capacity = response.get("ConsumedCapacity") or {}
    return ExecutedQuery(
        index=p.spec.index.value,
        partition_key=p.spec.partition_key,
        limit=limit,
        items_read=scanned,
        items_returned=len(items),
        capacity_units=float(capacity.get("CapacityUnits", 0.0)),
        round=round_no,
    )
