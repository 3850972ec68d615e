"""The two baselines, over the same table and the same keyset positions as ours.

- The blog's fan-out: one query per requested rating with Limit = page size, no counters.
- A naive filter: one query on ``all`` (or ``byLang``) with a FilterExpression on rating,
  paging with Limit = page size + 1 until the page (plus one, to know if more exist) is full.

Both take ``verified_only``. The blog has no index of verified purchases, so it reads the
partitions it reads without that filter with ``verified = true`` as a FilterExpression; the
fan-out takes facet values the same way (``contains(facets, :v)`` on the comment items: the
blog has no index of them either).
DynamoDB applies Limit before the filter, so one query of Limit = page size returns fewer
than a page of matches: each partition is queried again from where it stopped until it holds
a page of matches or ends (in the fan-out each partition must be able to fill the page on
its own). The naive filter adds the term to its filter and pages as before.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from storage.base.expressions import Attr, Condition, all_of, query_request
from storage.engine.table import TableRef
from storage.model import keys
from storage.model.comments import Direction
from storage.model.indexes import SORT_KEY, Index
from storage.model.items import FACETS_ATTR, VERIFIED_ATTR, item_to_comment


@dataclass(frozen=True, slots=True)
class BaselinePage:
    sort_keys: list[str]
    has_more: bool
    items_read: int
    calls: int
    rounds: int
    capacity_units: float


@dataclass(frozen=True, slots=True)
class _Filled:
    """What one partition gave: matches in order, and what reading them cost."""

    sort_keys: list[str]
    exhausted: bool
    items_read: int
    calls: int
    capacity_units: float


async def _query(
    table: TableRef,
    index: Index,
    pk: str,
    position: str | None,
    direction: Direction,
    limit: int,
    filter: Condition | None,
) -> dict[str, Any]:
    key = Attr(index.partition_attr).eq(pk)
    if position is not None:
        sort = Attr(SORT_KEY)
        key &= sort.lt(position) if direction is Direction.FORWARD else sort.gt(position)
    params = query_request(
        table.name,
        index=index.value,
        key=key,
        filter=filter,
        forward=direction is Direction.BACKWARD,
        limit=limit,
    )
    params["ReturnConsumedCapacity"] = "TOTAL"
    result: dict[str, Any] = await table.client.query(**params)
    return result


async def _fill(
    table: TableRef,
    partition: tuple[Index, str],
    position: str | None,
    direction: Direction,
    limit: int,
    want: int,
    filter: Condition | None,
) -> _Filled:
    """Query one partition, ``limit`` items a call, until ``want`` matches or its end."""
    matches: list[str] = []
    read = calls = 0
    capacity = 0.0
    cursor = position
    exhausted = False
    while len(matches) < want and not exhausted:
        response = await _query(table, *partition, cursor, direction, limit, filter)
        calls += 1
        read += int(response.get("ScannedCount", 0))
        capacity += float(response.get("ConsumedCapacity", {}).get("CapacityUnits", 0))
        matches += [item_to_comment(i).sort_key for i in response.get("Items", [])]
        last = response.get("LastEvaluatedKey")
        if last is None:
            exhausted = True
        else:
            cursor = last[SORT_KEY]["S"]
    return _Filled(matches, exhausted, read, calls, capacity)


def _filter(
    ratings: list[int] | None, verified_only: bool, facets: Sequence[str] = ()
) -> Condition | None:
    terms = []
    if ratings:
        terms.append(Attr("rating").is_in(ratings))
    if verified_only:
        terms.append(Attr(VERIFIED_ATTR).eq(True))
    terms += [Attr(FACETS_ATTR).contains(token) for token in facets]
    return all_of(terms)


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
    *,
    verified_only: bool = False,
    facets: Sequence[str] = (),
) -> BaselinePage:
    """One query per requested rating (or one without a rating filter), Limit = page size;
    with ``verified_only`` or ``facets`` (tokens every comment must hold), each re-queried
    until it holds a page of matching comments."""
    targets: list[int | None] = list(ratings) if ratings else [None]
    condition = _filter(None, verified_only, facets)
    filled = await asyncio.gather(
        *(
            _fill(table, _partition(pid, language, r), position, direction, size, size, condition)
            for r in targets
        )
    )
    found = sorted((k for f in filled for k in f.sort_keys), reverse=direction is Direction.FORWARD)
    return BaselinePage(
        sort_keys=found[:size],
        has_more=len(found) > size or not all(f.exhausted for f in filled),
        items_read=sum(f.items_read for f in filled),
        calls=sum(f.calls for f in filled),
        rounds=max(f.calls for f in filled),
        capacity_units=sum(f.capacity_units for f in filled),
    )


async def naive_filter(
    table: TableRef,
    pid: str,
    language: str | None,
    ratings: list[int] | None,
    size: int,
    position: str | None,
    direction: Direction = Direction.FORWARD,
    *,
    verified_only: bool = False,
) -> BaselinePage:
    """One broad query with a rating (and verified) filter, re-issued until size + 1 matches
    are found."""
    partition = _partition(pid, language, None)
    condition = _filter(ratings, verified_only)
    f = await _fill(table, partition, position, direction, size + 1, size + 1, condition)
    return BaselinePage(
        f.sort_keys[:size],
        len(f.sort_keys) > size,
        f.items_read,
        f.calls,
        f.calls,
        f.capacity_units,
    )
