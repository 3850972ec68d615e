"""Reads of facet listings: the counters a listing is planned and counted from, and its
pages (``storage.reads.facet_plans`` plans them, ``storage.reads.executor`` runs them).

A facet listing's counters are several items (the product's stats item of the listing's
language, each value's counter item, the product's incentivized counter item), and some of
its numbers are differences between two of them (leaving out incentivized reviews). They
are read together, as of one moment (TransactGetItems), so every such number is exact.
"""

from __future__ import annotations

import asyncio
from dataclasses import replace

from storage.base.expressions import Attr, query_request
from storage.base.types import Item
from storage.engine.batch import batch_get_items, get_together
from storage.engine.table import TableRef
from storage.model import rules
from storage.model.comments import ListingFilter, Order, PageRequest
from storage.model.facet_counts import GROUP_LISTING, FacetCounts, FacetListingCounts
from storage.model.facets import FacetKind, FacetValue, Scope, counter_sk
from storage.model.indexes import Index
from storage.model.items import ITEMS_PER_RESPONSE
from storage.model.stats import item_to_counts, stats_key
from storage.reads.executor import Page, execute, filter_of
from storage.reads.facet_plans import facet_plan_holds, plan_facet_listing
from storage.reads.planner import (
    DEFAULT_TUNING,
    Plan,
    PlannedQuery,
    Strategy,
    Tuning,
    empty_plan,
    plan_partition,
)
from storage.reads.snapshots import HeadKey, PlanMemory

INCENTIVIZED = FacetValue(FacetKind.INCENTIVIZED)


def counter_key(scope: Scope, value: FacetValue) -> Item:
    """The key of a value's counter item in its scope."""
    return {"PK": {"S": scope.pk}, "SK": {"S": counter_sk(value)}}


async def group_listing_counts(table: TableRef, group_ids: list[str]) -> dict[str, FacetCounts]:
    """Each group's listing counter item (its stats, every language), by group id; zeros
    for a group no comment counts in yet. One BatchGetItem per 100 groups."""
    scopes = {g: Scope.group(g) for g in dict.fromkeys(group_ids)}
    found = await batch_get_items(table, [counter_key(s, GROUP_LISTING) for s in scopes.values()])
    by_pk = {item["PK"]["S"]: item for item in found}
    return {g: FacetCounts.of_item(s, GROUP_LISTING, by_pk.get(s.pk)) for g, s in scopes.items()}


async def facet_listing_counts(table: TableRef, listing: ListingFilter) -> FacetListingCounts:
    """The counters of a facet listing, as of one moment (only its language's numbers): a
    product's stats item and incentivized counter item, or a group's listing counter item
    (its stats), and each of the listing's values' counter items."""
    scope = listing.scope
    values = sorted(listing.facets, key=lambda v: v.token)
    lang = listing.language
    if listing.of_group:
        own = [counter_key(scope, GROUP_LISTING)]
    else:
        own = [stats_key(listing.product_id, lang), counter_key(scope, INCENTIVIZED)]
    found = await get_together(table, [*own, *(counter_key(scope, v) for v in values)])
    mine, theirs = found[: len(own)], found[len(own) :]

    def counts(value: FacetValue, item: Item | None) -> FacetCounts:
        return FacetCounts.of_item(scope, value, item).of_language(lang)

    by_value = {v: counts(v, item) for v, item in zip(values, theirs, strict=True)}
    if listing.of_group:
        group = counts(GROUP_LISTING, mine[0])
        by_value[GROUP_LISTING] = group
        fresh = FacetListingCounts(
            scope=group.as_rating_counts(listing.product_id, lang),
            values=by_value,
            incentivized=FacetCounts(scope, INCENTIVIZED),  # never read: a group has ``*``
        )
    else:
        fresh = FacetListingCounts(
            scope=item_to_counts(listing.product_id, lang, mine[0]),
            values=by_value,
            incentivized=counts(INCENTIVIZED, mine[1]),
        )
    table.memory(PlanMemory).remember_facet_counts(listing, fresh)
    return fresh


async def read_facet_listing(
    table: TableRef,
    listing: ListingFilter,
    page: PageRequest,
    *,
    tuning: Tuning = DEFAULT_TUNING,
    order: Order = Order.NEWEST,
) -> tuple[FacetListingCounts, Page]:
    """One page of a facet listing, exactly as filtered, and its counters; in one storage
    round when this process has a snapshot of them (the plan is made from it while the
    fresh ones are read, and made again from those when it does not hold)."""
    memory = table.memory(PlanMemory)
    key = HeadKey(listing, order, page.direction, page.position)
    snapshot = memory.facet_counts(listing)
    if snapshot is None:
        fresh = await facet_listing_counts(table, listing)
        head = memory.head(key, fresh.version(listing))
        plan = plan_facet_listing(listing, page, fresh, tuning.cold(), order, head)
        read = replace(await execute(table, plan), counts_round=True)
    else:
        head = memory.head(key, snapshot.version(listing))
        plan = plan_facet_listing(listing, page, snapshot, tuning, order, head)
        fresh_read = asyncio.ensure_future(facet_listing_counts(table, listing))

        async def recheck() -> Plan:
            # Shielded: a failed page must not cancel the read of the counters.
            fresh = await asyncio.shield(fresh_read)
            if facet_plan_holds(plan, listing, fresh):
                return plan
            return plan_facet_listing(listing, page, fresh, tuning, order)

        try:
            read = await execute(table, plan, recheck)
        except BaseException:
            fresh_read.add_done_callback(_retrieved)
            raise
        fresh = await fresh_read
    if read.plan.strategy in (Strategy.FAN_OUT, Strategy.FILTERED_SCAN_OF_INDEX):
        memory.remember_head(key, read.head, read.ended, fresh.version(listing))
    return fresh, read


def _retrieved(done: asyncio.Future[FacetListingCounts]) -> None:
    if not done.cancelled():
        done.exception()


def count_plan(listing: ListingFilter, counts: FacetListingCounts) -> Plan:
    """How a listing with several facet values is counted: every entry of its primary
    value's partitions that may match (ratings asked, counted above zero), read with the
    filter on the rest. Pure: it prints as an EXPLAIN like a page's plan."""
    primary = counts.primary(listing)
    if primary is None:
        raise ValueError("only a listing with facet values is counted from entries")
    others = tuple(sorted(listing.facets - {primary}, key=lambda v: v.token))
    base = replace(
        empty_plan(listing, PageRequest(0), want=0),
        strategy=Strategy.FAN_OUT,
        facet=primary,
        scope=listing.scope,
        filter_facets=others,
        exclude_incentivized=listing.exclude_incentivized,
        verified_only=listing.verified_only,
        filtered=True,
    )
    index = Index.FACET_BY_RATING if listing.language is None else Index.FACET_BY_LANG_AND_RATING
    held, matching = counts.held(listing), counts.matching(listing)
    asked = sorted(listing.ratings or rules.RATINGS, reverse=True)
    queries = tuple(
        PlannedQuery(index, plan_partition(base, r), held[r - 1] + 1, held[r - 1], r)
        for r in asked
        if matching[r - 1] > 0
    )
    return replace(base, queries=queries)


def count_calls(plan: Plan) -> int:
    """The most storage calls counting by ``plan`` takes: a response ends at 1 MB read."""
    return sum(1 + (q.expected_count or 0) // ITEMS_PER_RESPONSE for q in plan.queries)


async def count_facet_listing(table: TableRef, plan: Plan) -> int:
    """How many entries ``count_plan``'s partitions hold that pass its filter: exact as
    the entries are when read (each partition read to its end, the count returned)."""
    found = 0
    for q in plan.queries:
        params = query_request(
            table.name,
            index=q.index.value,
            key=Attr(q.index.partition_attr).eq(q.partition_key),
            filter=filter_of(plan),
            forward=False,
            limit=q.limit,
        )
        params["Select"] = "COUNT"
        while True:
            response = await table.client.query(**params)
            found += int(response.get("Count", 0))
            if "LastEvaluatedKey" not in response:
                break
            params["ExclusiveStartKey"] = response["LastEvaluatedKey"]
    return found
