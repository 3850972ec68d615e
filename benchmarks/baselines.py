"""The two baselines, over the same table and the same keyset positions as ours.

- The blog's fan-out: one query per requested rating with Limit = page size, no counters.
- A naive filter: one query on ``all`` (or ``byLang``) with a FilterExpression on rating,
  paging with Limit = page size + 1 until the page (plus one, to know if more exist) is full.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

from storage import keys
from storage.expressions import Attr, query_request
from storage.indexes import SORT_KEY, Index
from storage.items import item_to_comment
from storage.model import Direction
from storage.table import TableRef


@dataclass(frozen=True, slots=True)
class BaselinePage:
    sort_keys: list[str]
    has_more: bool
    items_read: int
    calls: int
    rounds: int
    capacity_units: float


async def _query(
    table: TableRef,
    index: Index,
    pk: str,
    position: str | None,
    direction: Direction,
    limit: int,
    ratings: list[int] | None = None,
) -> dict[str, Any]:
    key = Attr(index.partition_attr).eq(pk)
    if position is not None:
        sort = Attr(SORT_KEY)
        key &= sort.lt(position) if direction is Direction.FORWARD else sort.gt(position)
    params = query_request(
        table.name,
        index=index.value,
        key=key,
        filter=Attr("rating").is_in(ratings) if ratings else None,
        forward=direction is Direction.BACKWARD,
        limit=limit,
    )
    params["ReturnConsumedCapacity"] = "TOTAL"
    result: dict[str, Any] = await table.client.query(**params)
    return result


def _partition(pid: str, language: str | None, rating: int | None) -> tuple[Index, str]:
    if rating is None:
        if language is None:
            return Index.ALL, keys.all_pk(pid)
        return Index.BY_LANG, keys.lang_pk(pid, language)
    if language is None:
        return Index.BY_RATING, keys.rating_pk(pid, rating)
    return Index.BY_LANG_AND_RATING, keys.lang_rating_pk(pid, language, rating)


async def blog_fan_out(
    table: TableRef,
    pid: str,
    language: str | None,
    ratings: list[int] | None,
    size: int,
    position: str | None,
    direction: Direction = Direction.FORWARD,
) -> BaselinePage:
    """One query per requested rating (or one without a rating filter), Limit = page size."""
    targets: list[int | None] = list(ratings) if ratings else [None]
    responses = await asyncio.gather(
        *(_query(table, *_partition(pid, language, r), position, direction, size) for r in targets)
    )
    found = sorted(
        (item_to_comment(i).sort_key for r in responses for i in r.get("Items", [])),
        reverse=direction is Direction.FORWARD,
    )
    more = len(found) > size or any("LastEvaluatedKey" in r for r in responses)
    return BaselinePage(
        sort_keys=found[:size],
        has_more=more,
        items_read=sum(int(r.get("ScannedCount", 0)) for r in responses),
        calls=len(responses),
        rounds=1,
        capacity_units=sum(
            float(r.get("ConsumedCapacity", {}).get("CapacityUnits", 0)) for r in responses
        ),
    )


async def naive_filter(
    table: TableRef,
    pid: str,
    language: str | None,
    ratings: list[int] | None,
    size: int,
    position: str | None,
    direction: Direction = Direction.FORWARD,
) -> BaselinePage:
    """One broad query with a rating filter, re-issued until size + 1 matches are found."""
    index, pk = _partition(pid, language, None)
    matches: list[str] = []
    read = calls = 0
    capacity = 0.0
    cursor = position
    exhausted = False
    while len(matches) <= size and not exhausted:
        response = await _query(table, index, pk, cursor, direction, size + 1, ratings or None)
        calls += 1
        read += int(response.get("ScannedCount", 0))
        capacity += float(response.get("ConsumedCapacity", {}).get("CapacityUnits", 0))
        matches += [item_to_comment(i).sort_key for i in response.get("Items", [])]
        last = response.get("LastEvaluatedKey")
        if last is None:
            exhausted = True
        else:
            cursor = last[SORT_KEY]["S"]
    return BaselinePage(matches[:size], len(matches) > size, read, calls, calls, capacity)
