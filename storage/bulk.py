"""Bulk loading of new products' comments with exact counters (BatchWriteItem).

For seeding: the products must have no comments yet (checked first), so their stats items
can be written whole from what is loaded, leaderboard entry included.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from typing import Any

from storage import stats
from storage.errors import InvalidInput, StorageUnavailable
from storage.items import comment_to_item
from storage.model import Comment
from storage.reads import batch_get_counts
from storage.retry import DEFAULT_BACKOFF, Backoff
from storage.table import TableRef
from storage.types import Item

BATCH_WRITE_MAX = 25


async def load_new_products(
    table: TableRef,
    comments: Sequence[Comment],
    *,
    progress: Callable[[int], None] | None = None,
    backoff: Backoff = DEFAULT_BACKOFF,
    concurrency: int = 8,
) -> int:
    """Write comments of products that have none yet, then their exact counters.

    Raises InvalidInput if any of the products already has comments (its counters would
    no longer be exact). Returns the number of comments written.
    """
    products = sorted({c.product_id for c in comments})
    existing = await batch_get_counts(table, [(p, None) for p in products])
    taken = [c.product_id for c in existing if c.total > 0]
    if taken:
        raise InvalidInput(f"products already have comments: {', '.join(taken[:5])}")
    written = 0
    gate = asyncio.Semaphore(concurrency)

    async def write_chunk(chunk: Sequence[Comment]) -> None:
        nonlocal written
        async with gate:
            requests = [{"PutRequest": {"Item": comment_to_item(c)}} for c in chunk]
            await _write(table, requests, backoff)
        written += len(chunk)
        if progress is not None:
            progress(written)

    await asyncio.gather(
        *(
            write_chunk(comments[start : start + BATCH_WRITE_MAX])
            for start in range(0, len(comments), BATCH_WRITE_MAX)
        )
    )
    counters = _stats_items(comments)
    for start in range(0, len(counters), BATCH_WRITE_MAX):
        items = counters[start : start + BATCH_WRITE_MAX]
        await _write(table, [{"PutRequest": {"Item": item}} for item in items], backoff)
    return written


def _stats_items(comments: Sequence[Comment]) -> list[Item]:
    tallies: dict[stats.StatsScope, list[int]] = {}
    for c in comments:
        if c.published:
            stats.count_in(tallies, c.product_id, c.language, c.rating, verified=c.verified)
    return [
        stats.whole_item(pid, lang, tallies[(pid, lang)])
        for pid, lang in sorted(tallies, key=lambda k: (k[0], k[1] or ""))
    ]


async def _write(table: TableRef, requests: list[dict[str, Any]], backoff: Backoff) -> None:
    pending: dict[str, Any] = {table.name: requests}
    for attempt in range(1, backoff.attempts + 1):
        response = await table.client.batch_write_item(RequestItems=pending)
        pending = response.get("UnprocessedItems") or {}
        if not pending:
            return
        await backoff.sleep(attempt)
    raise StorageUnavailable("storage kept some writes unprocessed")
