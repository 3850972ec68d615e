"""In-process measurements: every query kind through the real GraphQL schema, and the
baselines over the same table and positions, timed in the same run."""

from __future__ import annotations

import statistics
import time
from collections.abc import Awaitable, Callable
from dataclasses import asdict, dataclass, field
from typing import Any

from benchmarks.reads.baselines import BaselinePage, blog_fan_out, naive_filter
from resolvers.auth import TokenRules
from resolvers.context import make_context
from schema import build_schema
from storage.engine.table import TableRef
from storage.model.comments import Direction, ListingFilter, PageRequest, RatingCounts
from storage.reads.cursor import encode_cursor
from storage.reads.executor import Page
from storage.reads.reader import get_counts, list_comments, read_listing

QUERY = """
query($pid: ID!, $language: String, $ratings: [Int!], $first: Int, $after: String,
      $last: Int, $before: String) {
  product(productId: $pid) {
    comments(language: $language, ratings: $ratings, first: $first, after: $after,
             last: $last, before: $before) {
      totalCount
      edges { cursor node { commentId rating language title body author createdAt } }
      pageInfo { hasNextPage hasPreviousPage endCursor startCursor }
      plan { strategy itemsRead rounds storageRounds readCapacityUnits }
    }
  }
}"""


@dataclass(frozen=True, slots=True)
class Kind:
    name: str
    group: str
    product: str
    language: str | None = None
    ratings: tuple[int, ...] | None = None
    size: int = 20
    page: int = 1  # 1: the first page
    backward: bool = False

    @property
    def listing(self) -> ListingFilter:
        return ListingFilter(self.product, self.language, frozenset(self.ratings or ()))


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


@dataclass
class Measured:
    kind: Kind
    returned: int
    items_read: int  # by the page's queries (ours: from the plan)
    calls: int  # storage calls in the request (ours: stats + queries)
    # Sequential storage rounds, the counters' read included (ours: warm, repeated page).
    rounds: int
    capacity: float
    latencies_ms: list[float] = field(repr=False)
    # Ours: the first request for the product in a process (no snapshot of its counters).
    cold_rounds: int | None = None
    cold_items_read: int | None = None

    @property
    def amplification(self) -> float | None:
        return None if self.returned == 0 else self.items_read / self.returned

    def summary(self) -> dict[str, Any]:
        return {
            "returned": self.returned,
            "items_read": self.items_read,
            "amplification": self.amplification,
            "calls": self.calls,
            "rounds": self.rounds,
            "cold_rounds": self.cold_rounds,
            "cold_items_read": self.cold_items_read,
            "capacity_units": round(self.capacity, 3),
            "p50_ms": round(statistics.median(self.latencies_ms), 3),
            "p99_ms": round(percentile(self.latencies_ms, 0.99), 3),
        }


async def position_for(table: TableRef, kind: Kind) -> str | None:
    """The keyset position the kind starts from: after page - 1 pages (or page, backward)."""
    pages = kind.page if kind.backward else kind.page - 1
    position = None
    for _ in range(pages):
        page = await list_comments(
            table, kind.listing, PageRequest(kind.size, Direction.FORWARD, position)
        )
        if not page.comments:
            raise ValueError(f"{kind.name}: the listing has fewer than {kind.page} pages")
        position = page.comments[-1].sort_key
    return position


class Runner:
    def __init__(self, table: TableRef, repeats: int) -> None:
        self.table = table
        self.repeats = repeats
        self.schema = build_schema()

    async def _timed(self, call: Callable[[], Awaitable[Any]]) -> tuple[Any, list[float]]:
        for _ in range(3):
            result = await call()
        latencies = []
        for _ in range(self.repeats):
            started = time.perf_counter()
            result = await call()
            latencies.append((time.perf_counter() - started) * 1000)
        return result, latencies

    def _variables(self, kind: Kind, position: str | None) -> dict[str, Any]:
        variables: dict[str, Any] = {
            "pid": kind.product,
            "language": kind.language,
            "ratings": list(kind.ratings) if kind.ratings else None,
        }
        cursor = None if position is None else encode_cursor(position)
        if kind.backward:
            variables.update(last=kind.size, before=cursor)
        else:
            variables.update(first=kind.size, after=cursor)
        return variables

    async def ours(self, kind: Kind, position: str | None) -> Measured:
        variables = self._variables(kind, position)
        contexts = []

        async def call(table: TableRef = self.table) -> Any:
            context = make_context(
                table,
                request_id="bench",
                tokens=TokenRules("x" * 32),
                authorization=None,
                storage_timeout=30,
            )
            contexts.append(context)
            result = await self.schema.execute(QUERY, variables, context_value=context)
            if result.errors:
                raise RuntimeError(result.errors)
            return result

        # Cold: as a process that has not read this product's counters yet (its own memory).
        cold = (await call(TableRef(self.table.client, self.table.name))).data
        cold_plan = cold["product"]["comments"]["plan"]
        result, latencies = await self._timed(call)
        connection = result.data["product"]["comments"]
        meter = contexts[-1].meter
        return Measured(
            kind,
            returned=len(connection["edges"]),
            items_read=connection["plan"]["itemsRead"],
            calls=meter.total_calls,
            rounds=connection["plan"]["storageRounds"],
            capacity=meter.read_capacity,
            latencies_ms=latencies,
            cold_rounds=cold_plan["storageRounds"],
            cold_items_read=cold_plan["itemsRead"],
        )

    async def baseline(
        self,
        kind: Kind,
        position: str | None,
        fetch: Callable[..., Awaitable[BaselinePage]],
    ) -> Measured:
        direction = Direction.BACKWARD if kind.backward else Direction.FORWARD
        ratings = list(kind.ratings) if kind.ratings else None

        async def call() -> BaselinePage:
            return await fetch(
                self.table, kind.product, kind.language, ratings, kind.size, position, direction
            )

        page, latencies = await self._timed(call)
        return Measured(
            kind,
            len(page.sort_keys),
            page.items_read,
            page.calls,
            page.rounds,
            page.capacity_units,
            latencies,
        )

    async def ours_storage(self, kind: Kind, position: str | None) -> Measured:
        """Ours at the storage layer, reading the counters as the API does
        (``read_listing``), warm."""
        direction = Direction.BACKWARD if kind.backward else Direction.FORWARD
        request = PageRequest(kind.size, direction, position)
        listing = kind.listing

        async def counts() -> RatingCounts:
            return await get_counts(self.table, listing.product_id, listing.language)

        async def call() -> Page:
            _, page = await read_listing(self.table, listing, request, counts)
            return page

        page, latencies = await self._timed(call)
        return Measured(
            kind,
            len(page.comments),
            page.items_read,
            1 + len(page.executed),
            page.storage_rounds,
            page.capacity_units,
            latencies,
        )

    async def kind(self, kind: Kind) -> dict[str, Any]:
        position = await position_for(self.table, kind)
        ours = await self.ours(kind, position)
        storage_level = await self.ours_storage(kind, position)
        blog = await self.baseline(kind, position, blog_fan_out)
        naive = await self.baseline(kind, position, naive_filter)
        return {
            "kind": asdict(kind),
            "ours": ours.summary(),
            "ours_storage": storage_level.summary(),
            "blog_fan_out": blog.summary(),
            "naive_filter": naive.summary(),
        }


async def walk_amplification(
    table: TableRef, kind: Kind, pages: int
) -> dict[str, list[float] | list[int]]:
    """Per-page read amplification and storage rounds over the first ``pages`` pages, all
    three readers; ours as a process that starts the walk cold (no memory of the product),
    then again over the same positions (each page read before: warm)."""
    ours_amp: list[float] = []
    ours_rounds: list[int] = []
    blog_amp: list[float] = []
    naive_amp: list[float] = []
    naive_rounds: list[int] = []
    process = TableRef(table.client, table.name)
    listing = kind.listing

    async def counts() -> RatingCounts:
        return await get_counts(process, listing.product_id, listing.language)

    position = None
    positions: list[str | None] = []
    for _ in range(pages):
        positions.append(position)
        request = PageRequest(kind.size, position=position)
        _, page = await read_listing(process, listing, request, counts)
        if not page.comments:
            break
        n = len(page.comments)
        ratings = list(kind.ratings) if kind.ratings else None
        blog = await blog_fan_out(table, kind.product, kind.language, ratings, kind.size, position)
        naive = await naive_filter(table, kind.product, kind.language, ratings, kind.size, position)
        ours_keys = [c.sort_key for c in page.comments]
        if blog.sort_keys != ours_keys or naive.sort_keys != ours_keys:
            raise AssertionError(f"{kind.name}: a baseline returned another page")
        ours_amp.append(page.items_read / n)
        ours_rounds.append(page.storage_rounds)
        blog_amp.append(blog.items_read / n)
        naive_amp.append(naive.items_read / n)
        naive_rounds.append(naive.rounds)
        if not page.has_more:
            break
        position = page.comments[-1].sort_key
    warm_amp: list[float] = []
    warm_rounds: list[int] = []
    for position in positions[: len(ours_amp)]:
        request = PageRequest(kind.size, position=position)
        _, page = await read_listing(process, listing, request, counts)
        warm_amp.append(page.items_read / len(page.comments))
        warm_rounds.append(page.storage_rounds)
    return {
        "ours": ours_amp,
        "ours_rounds": ours_rounds,
        "ours_warm": warm_amp,
        "ours_warm_rounds": warm_rounds,
        "blog_fan_out": blog_amp,
        "naive_filter": naive_amp,
        "naive_rounds": naive_rounds,
    }


async def headroom_sweep(
    table: TableRef, walks: list[Kind], pages: int, zs: list[float]
) -> list[dict[str, Any]]:
    """The multi-rating walks at several head-room values: reads against rounds and time."""
    from storage.reads.executor import execute
    from storage.reads.planner import Tuning, plan_listing
    from storage.reads.reader import get_counts

    rows = []
    for z in zs:
        amps: list[float] = []
        rounds: list[int] = []
        calls: list[int] = []
        latencies: list[float] = []
        for kind in walks:
            stats = await get_counts(table, kind.product, kind.language)
            position = None
            for _ in range(pages):
                request = PageRequest(kind.size, position=position)
                started = time.perf_counter()
                page = await execute(table, plan_listing(kind.listing, request, stats, Tuning(z=z)))
                latencies.append((time.perf_counter() - started) * 1000)
                if not page.comments:
                    break
                amps.append(page.items_read / len(page.comments))
                rounds.append(page.rounds)
                calls.append(len(page.executed))
                if not page.has_more:
                    break
                position = page.comments[-1].sort_key
        rows.append(
            {
                "z": z,
                "pages": len(amps),
                "median_amplification": statistics.median(amps),
                "mean_amplification": statistics.fmean(amps),
                "one_query_round": sum(r == 1 for r in rounds) / len(rounds),
                "mean_calls": statistics.fmean(calls),
                "p50_ms": statistics.median(latencies),
            }
        )
    return rows
