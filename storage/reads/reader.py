"""Reads: counters (single and batched), comments by id, listings, an author's comments,
the moderation queue; the leaderboard is read by ``storage.reads.leaders``."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import replace

from storage.base.errors import InvalidPageRequest
from storage.base.expressions import Attr, get_request, query_request
from storage.base.types import Response
from storage.engine import metering
from storage.engine.batch import batch_get_items
from storage.engine.retry import DEFAULT_BACKOFF, Backoff, gather_reads
from storage.engine.table import TableRef
from storage.model import keys, rules
from storage.model.comments import Comment, ListingFilter, Order, PageRequest, RatingCounts
from storage.model.indexes import SORT_KEY, Index
from storage.model.items import (
    QUEUE_COUNT_ATTR,
    SLOT_COUNT_ATTR,
    comment_key,
    item_to_comment,
    number,
    queue_count_key,
)
from storage.model.stats import (
    StatsScope,
    item_to_counts,
    scope_of,
    stats_key,
)
from storage.reads.executor import Page, execute
from storage.reads.planner import (
    DEFAULT_TUNING,
    Plan,
    Strategy,
    Tuning,
    extend_plan,
    needs_stats,
    plan_author,
    plan_listing,
    plan_queue,
    plan_unfiltered,
)
from storage.reads.snapshots import HeadKey, PlanMemory


async def get_counts(table: TableRef, product_id: str, language: str | None) -> RatingCounts:
    """Exact counters of one product, all languages (None) or one; zeros when none exist."""
    (counts,) = await batch_get_counts(table, [(product_id, language)])
    return counts


async def batch_get_counts(
    table: TableRef,
    wanted: Sequence[StatsScope],
    *,
    backoff: Backoff = DEFAULT_BACKOFF,
) -> list[RatingCounts]:
    """Counters for many (product, language) pairs, in the order asked, via BatchGetItem."""
    normal = [
        (rules.validate_product_id(p), None if lang is None else rules.validate_language(lang))
        for p, lang in wanted
    ]
    found = await batch_get_items(
        table, [stats_key(p, lang) for p, lang in dict.fromkeys(normal)], backoff
    )
    by_key = {scope_of(i): i for i in found}
    counts = [item_to_counts(p, lang, by_key.get((p, lang))) for p, lang in normal]
    # Every read of the counters refreshes the process's snapshot of them.
    table.memory(PlanMemory).remember_counts(counts)
    return counts


async def batch_get_comments(
    table: TableRef,
    comment_ids: Sequence[str],
    *,
    backoff: Backoff = DEFAULT_BACKOFF,
    read_units: dict[str, float] | None = None,
) -> list[Comment | None]:
    """Comments by id in the order asked, None for ids that do not exist; ``read_units``
    receives the capacity each comment found took to read (``storage.engine.metering``)."""
    for cid in comment_ids:
        rules.validate_comment_id(cid)
    unique = list(dict.fromkeys(comment_ids))
    found = await batch_get_items(
        table,
        [comment_key(c) for c in unique],
        backoff,
    )
    by_id = {}
    for item in found:
        comment = item_to_comment(item)
        by_id[comment.comment_id] = comment
        if read_units is not None:
            read_units[comment.comment_id] = metering.read_units(item)
    return [by_id.get(c) for c in comment_ids]


async def list_comments(
    table: TableRef,
    listing: ListingFilter,
    page: PageRequest,
    *,
    stats: RatingCounts | None = None,
    tuning: Tuning = DEFAULT_TUNING,
    order: Order = Order.NEWEST,
) -> Page:
    """One page of a product's comments in ``order``, exactly as filtered.

    ``stats`` are the counters of the listing's scope. A rating filter or a rating order
    needs them to plan (they are read here first when not given; the API passes the ones
    its loader has, so counts and plan agree). Other listings are planned without them.
    """
    if stats is None and not needs_stats(listing, order):
        return await execute(table, plan_unfiltered(listing, page, order))
    if stats is None:
        stats = await get_counts(table, listing.product_id, listing.language)
    return await execute(table, plan_listing(listing, page, stats, tuning, order))


async def read_listing(
    table: TableRef,
    listing: ListingFilter,
    page: PageRequest,
    counts: Callable[[], Awaitable[RatingCounts]],
    *,
    tuning: Tuning = DEFAULT_TUNING,
    order: Order = Order.NEWEST,
) -> tuple[RatingCounts, Page]:
    """One page of a product's comments in ``order``, exactly as filtered, and the counters
    of its scope (``counts`` reads them: the API's loader, which batches them); in one storage
    round whenever this process has a snapshot of the counters.

    A page planned from the counters is planned from the snapshot while ``counts`` runs
    alongside its queries; when the fresh counters show that the plan skipped a rating
    that has comments now, it runs again from them (a correction round). Without a
    snapshot the counters are read first, as ``list_comments`` does. The page's head is
    remembered for the next read of the same position (``storage.reads.snapshots``).
    """
    if not needs_stats(listing, order):
        fresh, read = await asyncio.gather(
            counts(), execute(table, plan_unfiltered(listing, page, order))
        )
        return fresh, read
    memory = table.memory(PlanMemory)
    key = HeadKey(listing, order, page.direction, page.position)
    snapshot = memory.counts(listing.product_id, listing.language)
    if snapshot is None:
        fresh = await counts()
        plan = plan_listing(listing, page, fresh, tuning.cold(), order, memory.head(key, fresh))
        read = replace(await execute(table, plan), counts_round=True)
    else:
        plan = plan_listing(listing, page, snapshot, tuning, order, memory.head(key, snapshot))
        fresh_read = asyncio.ensure_future(counts())

        async def recheck() -> Plan:
            # Shielded: a failed page must not cancel the loader's read other fields share.
            fresh = await asyncio.shield(fresh_read)
            return extend_plan(plan, listing, page, fresh, tuning, order)

        try:
            read = await execute(table, plan, recheck)
        except BaseException:
            fresh_read.add_done_callback(_retrieved)
            raise
        fresh = await fresh_read
    if read.plan.strategy in _HEADED:
        memory.remember_head(key, read.head, read.ended, fresh)
    return fresh, read


# The plans whose limits a remembered head can size: several partitions (or one filtered).
_HEADED = (Strategy.FAN_OUT, Strategy.FILTERED_SCAN_OF_INDEX)


def _retrieved(done: asyncio.Future[RatingCounts]) -> None:
    """Mark the outcome of a read nobody waits for any more as seen."""
    if not done.cancelled():
        done.exception()


async def author_comments(table: TableRef, author_id: str, page: PageRequest) -> Page:
    """One page of an author's comments in every status, newest first (index byAuthor)."""
    if not author_id:
        raise InvalidPageRequest("an author id is needed")
    return await execute(table, plan_author(author_id, page))


async def moderation_queue(table: TableRef, page: PageRequest) -> Page:
    """One page of PENDING comments, oldest submission first (index moderationQueue)."""
    read = await execute(table, plan_queue(page))
    # The executor returns pages newest first; the queue is shown the other way round.
    return replace(read, comments=read.comments[::-1], positions=read.positions[::-1])


async def queue_length(table: TableRef) -> int:
    """How many comments are PENDING (the queue's maintained count)."""
    response = await table.client.get_item(
        **get_request(table.name, queue_count_key(), projection=[QUEUE_COUNT_ATTR])
    )
    return number(response.get("Item") or {}, QUEUE_COUNT_ATTR)


async def author_total(table: TableRef, author_id: str) -> int:
    """How many comments an author has, from their per-product counts (the items the
    per-product limit keeps, one per product they commented on): one query of their
    partition, exact for every comment that holds a slot (all but those written before
    slots existed)."""
    total = 0
    params = query_request(
        table.name,
        index=None,
        key=Attr("PK").eq(keys.author_pk(author_id))
        & Attr("SK").between(keys.PRODUCT_PREFIX, keys.PRODUCT_PREFIX + "~"),
        forward=True,
        limit=1000,
        projection=[SLOT_COUNT_ATTR],
    )
    while True:
        response = await table.client.query(**params)
        total += sum(number(i, SLOT_COUNT_ATTR) for i in response.get("Items", []))
        if "LastEvaluatedKey" not in response:
            return total
        params["ExclusiveStartKey"] = response["LastEvaluatedKey"]


async def last_commented_at(table: TableRef, product_ids: Sequence[str]) -> list[str | None]:
    """When each product's newest comment was written, None without comments; in order.

    Read from the newest entry of the product's listing (one item per product), not kept
    on the counters: it is then exact after deletes too, with nothing to maintain.
    """
    for pid in product_ids:
        rules.validate_product_id(pid)
    unique = list(dict.fromkeys(product_ids))
    responses = await gather_reads([_newest(table, pid) for pid in unique])
    newest = {}
    for pid, response in zip(unique, responses, strict=True):
        items = response.get("Items") or []
        newest[pid] = keys.sort_key_time(items[0][SORT_KEY]["S"]) if items else None
    return [newest[pid] for pid in product_ids]


async def _newest(table: TableRef, product_id: str) -> Response:
    return await table.client.query(
        **query_request(
            table.name,
            index=Index.ALL.value,
            key=Attr(Index.ALL.partition_attr).eq(keys.all_pk(product_id)),
            projection=[SORT_KEY],
            forward=False,
            limit=1,
        )
    )
