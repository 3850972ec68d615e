"""Shared test helpers: writing comments quickly, walking listings, an oracle, fault injection,
reading a metrics scrape."""

from __future__ import annotations

import asyncio
import threading
import uuid
from collections.abc import AsyncIterator, Callable, Coroutine, Iterable, Iterator
from typing import Any, TypeVar

import pytest
from botocore.exceptions import ClientError

from server.dev.local_engine import LocalEngine
from storage.base.types import DynamoClient, Response
from storage.engine.client import ClientSettings, open_client
from storage.engine.retry import Backoff
from storage.engine.table import TableRef
from storage.engine.wrapping import ClientWrapper
from storage.model.comments import (
    Comment,
    Direction,
    ListingFilter,
    NewComment,
    Order,
    PageRequest,
    RatingCounts,
    Status,
)
from storage.ops.create import create_table
from storage.reads.cursor import Ordering, decode_cursor, encode_cursor
from storage.reads.executor import Page
from storage.reads.facet_reader import read_facet_listing
from storage.reads.reader import get_counts, read_listing
from storage.writes import create_comment

FAST = Backoff(attempts=8, base=0.002, cap=0.05)
T = TypeVar("T")


# Every sample of a Prometheus scrape, by name and labels.
async def own_table(table: TableRef, prefix: str) -> TableRef:
    """A new, empty table beside the session's, for tests that must not share its data."""
    own = TableRef(table.client, f"{prefix}_{uuid.uuid4().hex[:8]}")
    await create_table(own.client, own.name, stream=False)
    return own


def stamp(n: int) -> str:
    """The n-th of a small set of timestamps, so that ties are common."""
    return f"2024-03-{1 + n // 24:02d}T{n % 24:02d}:00:00.000Z"


async def create_many(
    table: TableRef, items: Iterable[NewComment], limit: int = 16
) -> list[Comment]:
    gate = asyncio.Semaphore(limit)

    async def one(new: NewComment) -> Comment:
        async with gate:
            return (await create_comment(table, new, backoff=FAST)).comment

    return list(await asyncio.gather(*(one(n) for n in items)))


def own_product_id() -> str:
    """A product id no other test uses (the engine's table is shared)."""
    return f"p-{uuid.uuid4().hex[:12]}"


async def seed_mixed(
    table: TableRef, product_id: str, count: int, *, authors: Iterable[str], times: int
) -> list[Comment]:
    """``count`` comments in three languages and a fixed mix of ratings (5 and 4 the most
    common), by ``authors`` in turn, at ``times`` distinct timestamps (so ties occur)."""
    names = list(authors)
    return await create_many(
        table,
        [
            NewComment(
                product_id,
                ["en", "de", "fr"][n % 3],
                [5, 4, 5, 1, 2, 5, 4][n % 7],
                f"body {n}",
                names[n % len(names)],
                title=f"t{n}",
                created_at=stamp(n % times),
            )
            for n in range(count)
        ],
    )


def oracle(
    comments: Iterable[Comment], listing: ListingFilter, order: Order = Order.NEWEST
) -> list[Comment]:
    """Brute force: keep the published comments the filter matches, then sort them in the
    order, ties newest first (then by comment id, descending)."""
    chosen = [
        c
        for c in comments
        if c.status is Status.PUBLISHED
        and (c.group_id if listing.of_group else c.product_id) == listing.product_id
        and (listing.language is None or c.language == listing.language)
        and (listing.ratings is None or c.rating in listing.ratings)
        and (c.verified or not listing.verified_only)
        and listing.facets <= c.facets
        and not (listing.exclude_incentivized and c.incentivized)
    ]
    newest = sorted(chosen, key=lambda c: c.sort_key, reverse=True)
    # Stable sorts: each keeps the newest-first order among equals.
    if order is Order.OLDEST:
        return newest[::-1]
    if order is Order.HIGHEST_RATING:
        return sorted(newest, key=lambda c: -c.rating)
    if order is Order.LOWEST_RATING:
        return sorted(newest, key=lambda c: c.rating)
    if order is Order.MOST_HELPFUL:
        return sorted(newest, key=lambda c: -c.helpful)
    return newest


async def walk(
    table: TableRef,
    listing: ListingFilter,
    size: int,
    direction: Direction,
    on_page: Callable[[Page], None] | None = None,
    order: Order = Order.NEWEST,
) -> tuple[list[Comment], list[int]]:
    """Every page in one direction, through encoded cursors; returns comments in listing order
    and the page lengths. Asserts has_more agrees with whether another page follows.

    Pages are read as the API reads them (``read_listing``): planned from the table's
    snapshot of the counters where it has one, which earlier steps of a test may have left
    stale on purpose."""
    out: list[list[Comment]] = []
    position: str | None = None
    ordering = Ordering.of(order)

    async def counts() -> RatingCounts:
        return await get_counts(table, listing.product_id, listing.language)

    while True:
        request = PageRequest(size, direction, position)
        if listing.faceted:
            _, page = await read_facet_listing(table, listing, request, order=order)
        else:
            _, page = await read_listing(table, listing, request, counts, order=order)
        if on_page is not None:
            on_page(page)
        out.append(list(page.comments))
        if not page.has_more:
            break
        assert page.comments, "has_more with an empty page"
        edge = page.positions[-1] if direction is Direction.FORWARD else page.positions[0]
        position = decode_cursor(encode_cursor(edge, ordering), ordering)
        assert len(out) < 10_000
    if direction is Direction.BACKWARD:
        out.reverse()
    return [c for p in out for c in p], [len(p) for p in out]


Fault = Callable[[str, dict[str, Any]], Exception | None]


class FaultyClient(ClientWrapper):
    """A DynamoClient that lets a rule replace some calls with an error, and counts calls."""

    def __init__(self, inner: DynamoClient, rule: Fault) -> None:
        super().__init__(inner)
        self.rule = rule
        self.calls: list[str] = []

    async def _call(self, operation: str, kwargs: dict[str, Any]) -> Response:
        self.calls.append(operation)
        error = self.rule(operation, kwargs)
        if error is not None:
            raise error
        return await super()._call(operation, kwargs)


def client_error(code: str, operation: str, **extra: Any) -> Exception:
    error: Exception = ClientError(
        {"Error": {"Code": code, "Message": "injected"}, **extra}, operation
    )
    return error


def cancelled(*codes: str) -> Exception:
    return client_error(
        "TransactionCanceledException",
        "TransactWriteItems",
        CancellationReasons=[{"Code": c} for c in codes],
    )


async def recount(table: TableRef, product_id: str) -> dict[str | None, list[int]]:
    """Counts per rating recomputed from the comments (all index), by language and overall:
    ten numbers each, the five ratings of all comments, then those of verified purchases."""
    from storage.model.comments import ListingFilter as _Listing

    found, _ = await walk(table, _Listing(product_id), 100, Direction.FORWARD)
    counts: dict[str | None, list[int]] = {None: [0] * 10}
    for c in found:
        for scope in (c.language, None):
            tally = counts.setdefault(scope, [0] * 10)
            tally[c.rating - 1] += 1
            if c.verified:
                tally[5 + c.rating - 1] += 1
    return counts


async def assert_counters_exact(table: TableRef, product_id: str) -> None:
    """Counters of every scope (verified ones too) and the leaderboard entry equal a recount
    from the comments."""
    from storage.engine.leaderboard_layout import read_layout
    from storage.model import keys
    from storage.reads.reader import get_counts

    truth = await recount(table, product_id)
    for language, expected in truth.items():
        stored = await get_counts(table, product_id, language)
        assert [*stored.by_rating, *stored.verified] == expected, (language, stored, expected)
    key = {"PK": {"S": keys.product_pk(product_id)}, "SK": {"S": keys.STATS_ALL}}
    raw = (await table.client.get_item(TableName=table.name, Key=key, ConsistentRead=True)).get(
        "Item", {}
    )
    five = truth[None][4]
    if five:
        # In the product's shard of the table's layout (either layout during a migration).
        layout = await read_layout(table)
        assert raw.get("GSIPK", {}).get("S") in layout.allowed(product_id)
        assert raw.get("GSISK") == {"S": keys.leader_sort_key(five)}
    else:
        assert "GSIPK" not in raw
        assert "GSISK" not in raw


class LoopHarness:
    """For hypothesis state machines, whose rules are not coroutines: one event loop in a
    thread of its own (away from the suite's loop), a client and a table, for all the
    examples of a test; the engine is the session's. ``tables`` are two refs of that table
    with their own per-process locks: two "processes" (the same client)."""

    def __init__(self, endpoint: str, prefix: str) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.endpoint = endpoint
        self.prefix = prefix
        self.tables: tuple[TableRef, TableRef] | None = None
        self._client_cm: Any = None

    def run(self, coro: Coroutine[Any, Any, T]) -> T:
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout=120)

    def start(self) -> None:
        self.thread.start()

        async def opening() -> None:
            self._client_cm = open_client(ClientSettings(endpoint_url=self.endpoint))
            client = await self._client_cm.__aenter__()
            name = f"{self.prefix}_{uuid.uuid4().hex[:8]}"
            await create_table(client, name, stream=False)
            self.tables = (TableRef(client, name), TableRef(client, name))

        self.run(opening())

    def new_tables(self, prefix: str) -> tuple[TableRef, TableRef]:
        """A new, empty table (for an example that reads table-wide indexes), as two
        "processes"."""
        assert self.tables is not None, "start() first"
        client = self.tables[0].client
        name = f"{prefix}_{uuid.uuid4().hex[:8]}"
        self.run(create_table(client, name, stream=False))
        return TableRef(client, name), TableRef(client, name)

    def drop(self, table: TableRef) -> None:
        self.run(table.client.delete_table(TableName=table.name))

    def close(self) -> None:
        if self._client_cm is not None:
            self.run(self._client_cm.__aexit__(None, None, None))
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(timeout=10)
        self.loop.close()


def own_engine_fixtures() -> tuple[Any, Any]:
    """Module-scoped ``engine`` and ``client`` fixtures: a DynamoDB Local of the module's own,
    for modules that must not share the session's (``tests/storage/ops/test_migrate.py``
    says why). Assign them at module level: ``engine, client = own_engine_fixtures()``."""

    @pytest.fixture(scope="module", name="engine")
    def engine_fixture() -> Iterator[LocalEngine]:
        with LocalEngine() as running:
            yield running

    @pytest.fixture(scope="module", name="client")
    async def client_fixture(engine: LocalEngine) -> AsyncIterator[DynamoClient]:
        async with open_client(ClientSettings(endpoint_url=engine.endpoint_url)) as opened:
            yield opened

    return engine_fixture, client_fixture
