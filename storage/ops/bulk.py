"""Bulk loading of new products' comments with exact counters.

For seeding: the products must have no comments yet (checked first: their counters, and
the per-product counts of the authors being loaded), so their stats items, leaderboard
entry included, and the authors' per-product counts can be written whole from what is
loaded. Comments go out with BatchWriteItem, each holding its author's slot, except the
PENDING ones: the moderation queue's count is shared with every other product, so it is
moved by ADD in the same transaction as the comments it counts, each put on the condition
that it does not exist yet. A load repeated, or racing another, can then never count a
PENDING comment twice.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from storage.base.errors import InvalidInput, StorageUnavailable
from storage.base.expressions import Attr, put_request
from storage.base.types import Item
from storage.engine.batch import BATCH_WRITE_MAX, batch_get_items, batch_write
from storage.engine.leaderboard_layout import read_layout
from storage.engine.retry import DEFAULT_BACKOFF, Backoff
from storage.engine.table import TableRef
from storage.model import keys, stats
from storage.model.comments import Comment, Status, Vote
from storage.model.items import SLOT_COUNT_ATTR, VOTE_ATTR, comment_to_item, number
from storage.model.leaderboard import LeaderLayout
from storage.reads.reader import batch_get_counts
from storage.writes import counters
from storage.writes.transaction import CallBudget, Part, transact

# PENDING comments per transaction, beside the queue count's update: well under the 100
# actions and 4 MB a transaction may hold, with comments of up to about 43 KB.
PENDING_PER_TRANSACTION = 25

# (author id, product id): an author's comments on a product, counted by one slot item.
Slot = tuple[str, str]


async def load_new_products(
    table: TableRef,
    comments: Sequence[Comment],
    *,
    progress: Callable[[int], None] | None = None,
    backoff: Backoff = DEFAULT_BACKOFF,
    concurrency: int = 8,
) -> int:
    """Write comments of products that have none yet, then their exact counters; the
    moderation queue's count moves with the PENDING comments themselves.

    Raises InvalidInput if any of the products already has comments (its counters would
    no longer be exact). Returns the number of comments written.
    """
    products = sorted({c.product_id for c in comments})
    existing = await batch_get_counts(table, [(p, None) for p in products])
    taken = {c.product_id for c in existing if c.total > 0}
    # Unpublished comments are counted nowhere, but every comment holds its author's slot.
    slots = Counter((c.author_id, c.product_id) for c in comments)
    found = await batch_get_items(table, [_slot_key(s) for s in slots], backoff)
    taken |= {
        keys.product_id_from_pk(item["SK"]["S"]) for item in found if number(item, SLOT_COUNT_ATTR)
    }
    if taken:
        raise InvalidInput(f"products already have comments: {', '.join(sorted(taken)[:5])}")
    written = 0
    gate = asyncio.Semaphore(concurrency)

    async def write(chunk: Sequence[Comment], writing: Awaitable[None]) -> None:
        nonlocal written
        async with gate:
            await writing
        written += len(chunk)
        if progress is not None:
            progress(written)

    def chunks(of: Sequence[Comment], size: int) -> list[Sequence[Comment]]:
        return [of[start : start + size] for start in range(0, len(of), size)]

    pending = [c for c in comments if c.status is Status.PENDING]
    others = [c for c in comments if c.status is not Status.PENDING]
    # The PENDING ones first: a load repeated over comments it wrote stops here.
    await asyncio.gather(
        *(
            write(chunk, _write_pending(table, chunk, backoff))
            for chunk in chunks(pending, PENDING_PER_TRANSACTION)
        )
    )
    await asyncio.gather(
        *(
            write(chunk, batch_write(table, _puts(chunk), backoff))
            for chunk in chunks(others, BATCH_WRITE_MAX)
        )
    )
    # The entries go where the table's layout says now; seeding while the leaderboard's
    # shards are being migrated is not supported (these puts carry no condition).
    layout = await read_layout(table)
    whole = _stats_items(comments, layout) + [_slot_item(s, n) for s, n in sorted(slots.items())]
    whole += [vote for c in comments for vote in vote_items(c)]
    for start in range(0, len(whole), BATCH_WRITE_MAX):
        items = whole[start : start + BATCH_WRITE_MAX]
        await batch_write(table, [{"PutRequest": {"Item": item}} for item in items], backoff)
    return written


def _puts(chunk: Sequence[Comment]) -> list[dict[str, Any]]:
    return [{"PutRequest": {"Item": comment_to_item(c, holds_slot=True)}} for c in chunk]


async def _write_pending(table: TableRef, chunk: Sequence[Comment], backoff: Backoff) -> None:
    """PENDING comments, each on the condition that it does not exist, and the queue's
    count moved by their number, in one transaction."""
    parts = [
        Part(
            f"comment:{n}",
            {
                "Put": put_request(
                    table.name, comment_to_item(c, holds_slot=True), Attr("PK").not_exists()
                )
            },
        )
        for n, c in enumerate(chunk)
    ]
    parts += counters.queue_move(table, len(chunk))
    budget = CallBudget(backoff.attempts)
    for attempt in range(1, backoff.attempts + 1):
        cancel = await transact(table, parts, budget)
        if cancel is None:
            return
        if cancel.any_condition_failed:
            raise InvalidInput("comments being loaded exist already")
        await backoff.sleep(attempt)  # conflict or throttling: nothing was written
    raise StorageUnavailable("storage kept cancelling the PENDING comments' writes")


def vote_items(c: Comment) -> list[Item]:
    """The vote items behind a loaded comment's helpful counts (voters ``bulk-voter-<n>``,
    no one's real id), so that the counts equal its votes as the write path keeps them."""
    verdicts = [Vote.HELPFUL] * c.helpful + [Vote.NOT_HELPFUL] * c.not_helpful
    pk = {"S": keys.comment_pk(c.comment_id)}
    return [
        {
            "PK": pk,
            "SK": {"S": keys.vote_sk(f"bulk-voter-{n}")},
            VOTE_ATTR: {"S": verdict.value},
            "votedAt": {"S": c.created_at},
        }
        for n, verdict in enumerate(verdicts)
    ]


def _slot_key(slot: Slot) -> Item:
    author, product_id = slot
    return {
        "PK": {"S": keys.author_pk(author)},
        "SK": {"S": keys.author_product_sk(product_id)},
    }


def _slot_item(slot: Slot, count: int) -> Item:
    """An author's count of comments on a new product, whole (see storage.writes.limits)."""
    return {**_slot_key(slot), SLOT_COUNT_ATTR: {"N": str(count)}}


def _stats_items(comments: Sequence[Comment], layout: LeaderLayout) -> list[Item]:
    tallies: dict[stats.StatsScope, list[int]] = {}
    for c in comments:
        if c.published:
            stats.count_in(tallies, c.product_id, c.language, c.rating, verified=c.verified)
    return [
        stats.whole_item(pid, lang, tallies[(pid, lang)], layout)
        for pid, lang in sorted(tallies, key=lambda k: (k[0], k[1] or ""))
    ]
