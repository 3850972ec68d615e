"""A rolling upgrade with a layout change, as a platform team runs it: old and new code serve
one table and keep writing while ``migrate-table`` runs, and no comment goes missing.

The found bug: a table of the previous layout (eight indexes, no helpful twins), served by
old and new code at once while the new ``migrate-table`` ran; comments the old code wrote
after the backfill passed them lacked ``HSK``, so the most helpful order listed 8 of a
``totalCount`` of 10. Here the processes are simulated in this event loop, each with its
own layout gate (``storage.engine.layout_check``), heartbeat and check loop, as a serving
process has: the old one (layout 2) writes the old shape (each comment it makes loses its
``HSK``, as the old code never wrote one), the new one (this release's layout) the new shape, both
without pause, through the migration. A short lease (2 s, in the table's layout item)
keeps the waits short.

This module has a DynamoDB Local of its own: ``migrate-table`` turns TTL on, and the
session's engine stops building indexes from its seventh table with TTL on
(``tests/storage/ops/test_migrate.py`` says why).
"""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from dataclasses import dataclass, field

import pytest

from storage.base.errors import StorageError, StorageUnavailable
from storage.base.types import DynamoClient
from storage.engine.layout_check import FencedWrites, LayoutGate, ProcessId, check_layout
from storage.engine.table import TableRef
from storage.model import keys
from storage.model.comments import Direction, ListingFilter, NewComment, Order, PageRequest
from storage.model.indexes import table_definition
from storage.model.layout_version import CODE_LAYOUT, TableLayout
from storage.ops.create import create_table
from storage.ops.migrate import migrate
from storage.ops.verify import scan_pages, verify
from storage.reads.reader import get_counts, list_comments
from storage.writes import create_comment
from tests.helpers import FAST, own_engine_fixtures, own_product_id, walk

# The module's own engine and client (module-scoped fixtures: this module gets its own).
from tests.storage.ops.test_migrate import BUILD_WAIT, POLL, previous_definition

pytestmark = pytest.mark.engine

engine, client = own_engine_fixtures()

LEASE = 2.0
MARGIN = 0.2  # the clock margin: one engine, one clock here


@dataclass
class Process:
    """A serving process of layout ``code`` on ``table``: a check loop and a writer."""

    name: str
    code: int
    table: str
    client: DynamoClient
    products: list[str]
    written: list[str] = field(default_factory=list)
    refused: int = 0
    gate: LayoutGate = field(init=False)
    wrote: asyncio.Condition = field(default_factory=asyncio.Condition)

    def __post_init__(self) -> None:
        self.gate = LayoutGate(code=self.code, enforced=True)

    async def has_written(self, n: int) -> None:
        async with self.wrote:
            await self.wrote.wait_for(lambda: len(self.written) >= n)

    @property
    def serving(self) -> TableRef:
        return TableRef(FencedWrites(self.client, self.gate), self.table)

    async def check(self) -> None:
        me = ProcessId(f"{self.name}:1", self.name)
        with contextlib.suppress(StorageError):
            await check_layout(TableRef(self.client, self.table), self.gate, me)

    async def run(self, stop: asyncio.Event) -> None:
        await self.check()
        checking = asyncio.create_task(self._keep_checking(stop))
        n = 0
        while not stop.is_set():
            pid = self.products[n % len(self.products)]
            new = NewComment(pid, "en", 1 + n % 5, f"{self.name} {n}", f"{self.name}-{n}")
            n += 1
            try:
                made = await create_comment(self.serving, new, backoff=FAST)
                if self.code < 3:  # the old code wrote no helpful key
                    key = {
                        "PK": {"S": keys.comment_pk(made.comment.comment_id)},
                        "SK": {"S": keys.comment_pk(made.comment.comment_id)},
                    }
                    await self.serving.client.update_item(
                        TableName=self.table, Key=key, UpdateExpression="REMOVE HSK"
                    )
                self.written.append(made.comment.comment_id)
                async with self.wrote:
                    self.wrote.notify_all()
            except StorageUnavailable:
                self.refused += 1
                await asyncio.sleep(0.02)
        await checking

    async def _keep_checking(self, stop: asyncio.Event) -> None:
        while not stop.is_set():
            await asyncio.sleep(self.gate.lease_seconds / 4)
            await self.check()


async def _expanded_table(client: DynamoClient) -> tuple[TableRef, list[str]]:
    """A table of layout 2 (eight indexes, comments without HSK), expanded to this code's layout by
    ``migrate-table --expand-only`` as the first step of the upgrade, with a short lease."""
    name = f"rolling_{uuid.uuid4().hex[:8]}"
    await client.create_table(**previous_definition(name))
    table = TableRef(client, name)
    # The previous layout recorded itself: its processes wrote heartbeats (layout 2).
    item = TableLayout(2, 2, 2, LEASE, revision=1).to_item()
    await client.put_item(TableName=name, Item=item)
    products = [own_product_id() for _ in range(3)]
    old = Process("old", 2, name, client, products)
    for n in range(6):  # comments from before the upgrade, in the old shape
        stop = asyncio.Event()
        stop.set()
        await old.check()
        new = NewComment(products[n % 3], "de", 1 + n % 5, f"before {n}", f"b{n}")
        made = await create_comment(old.serving, new, backoff=FAST)
        pk = keys.comment_pk(made.comment.comment_id)
        await client.update_item(
            TableName=name, Key={"PK": {"S": pk}, "SK": {"S": pk}}, UpdateExpression="REMOVE HSK"
        )
    done = await migrate(table, expand_only=True, wait_seconds=BUILD_WAIT, poll_seconds=POLL)
    assert done.after is not None
    assert (done.after.indexes, done.after.writers, done.after.data) == (CODE_LAYOUT, 2, 2)
    return table, products


async def _assert_nothing_missing(table: TableRef, products: list[str]) -> None:
    for pid in products:
        total = (await get_counts(table, pid, None)).total
        # Every page, not one: how many the processes write depends on the machine's speed.
        listed, _ = await walk(
            table, ListingFilter(pid), 100, Direction.FORWARD, order=Order.MOST_HELPFUL
        )
        ids = {c.comment_id for c in listed}
        assert len(ids) == len(listed) == total, (pid, len(ids), len(listed), total)
    report = await verify(table)
    assert report.exact, report.describe()


async def test_old_and_new_code_write_through_a_fenced_migration_and_no_comment_is_lost(
    client: DynamoClient,
) -> None:
    table, products = await _expanded_table(client)
    stop = asyncio.Event()
    old = Process("old", 2, table.name, client, products)
    new = Process("new", CODE_LAYOUT, table.name, client, products)
    running = [asyncio.create_task(p.run(stop)) for p in (old, new)]
    try:
        await old.has_written(5)
        await new.has_written(5)
        # Without --fence, a live process of the old layout stops the migration, which
        # names it and changes no comment.
        lines: list[str] = []
        refused = await migrate(
            table, progress=lines.append, wait_seconds=BUILD_WAIT, clock_margin=MARGIN
        )
        assert refused.stopped is not None
        assert "old (layout 2)" in refused.stopped
        assert refused.backfill is None
        assert refused.after is not None
        assert refused.after.writers == 2
        # With it: the fence goes up, the old process sees it and stops writing; the
        # migration waits for that, backfills, checks every key and records the contract,
        # while the new process writes on.
        done = await migrate(
            table,
            progress=lines.append,
            wait_seconds=BUILD_WAIT,
            poll_seconds=POLL,
            fence=True,
            clock_margin=MARGIN,
        )
        assert done.complete, done.stopped
        assert done.fenced
        await new.has_written(len(new.written) + 5)  # the new code still writes
    finally:
        stop.set()
        await asyncio.gather(*running)
    assert old.refused > 0
    assert old.gate.fenced
    assert new.refused == 0
    assert done.after is not None
    assert (done.after.indexes, done.after.writers, done.after.data) == (CODE_LAYOUT,) * 3
    await _assert_nothing_missing(table, products)


async def test_a_migration_waits_for_an_old_process_that_stopped_until_its_lease_ran_out(
    client: DynamoClient,
) -> None:
    table, products = await _expanded_table(client)
    stop = asyncio.Event()
    old = Process("old", 2, table.name, client, products)
    writing = asyncio.create_task(old.run(stop))
    await old.has_written(3)
    stop.set()  # replaced by the new release: its heartbeat stays until its lease runs out
    await writing
    new = Process("new", CODE_LAYOUT, table.name, client, products)
    stop_new = asyncio.Event()
    running = asyncio.create_task(new.run(stop_new))
    try:
        done = await migrate(table, wait_seconds=BUILD_WAIT, poll_seconds=POLL, clock_margin=MARGIN)
        # Either it saw the old heartbeat still inside its lease and stopped, or the lease
        # had run out by then and it went on: never a backfill while the old one may write.
        if done.stopped is not None:
            assert "old (layout 2)" in done.stopped
            await asyncio.sleep(LEASE + MARGIN)
            done = await migrate(
                table, wait_seconds=BUILD_WAIT, poll_seconds=POLL, clock_margin=MARGIN
            )
        assert done.complete, done.stopped
        assert not done.waited_for  # no fence to wait for: the old process was gone
    finally:
        stop_new.set()
        await running
    await _assert_nothing_missing(table, products)


async def test_a_table_from_before_layout_versions_is_expanded_but_not_filled_unasked(
    client: DynamoClient,
) -> None:
    name = f"legacy_{uuid.uuid4().hex[:8]}"
    await client.create_table(**previous_definition(name))
    table = TableRef(client, name)
    pid = own_product_id()
    await create_comment(table, NewComment(pid, "en", 5, "old", "a"), backoff=FAST)
    pk_items = await client.scan(TableName=name)
    for item in pk_items["Items"]:
        if item["SK"]["S"] == item["PK"]["S"] and "HSK" in item:
            await client.update_item(
                TableName=name,
                Key={"PK": item["PK"], "SK": item["SK"]},
                UpdateExpression="REMOVE HSK",
            )
    done = await migrate(table, wait_seconds=BUILD_WAIT, poll_seconds=POLL)
    assert done.stopped is not None
    assert "--legacy-processes-gone" in done.stopped
    assert done.after is not None
    assert (done.after.indexes, done.after.writers, done.after.data) == (CODE_LAYOUT, 0, 0)
    # Asked again with the old processes said to be gone, it finishes.
    done = await migrate(
        table, wait_seconds=BUILD_WAIT, poll_seconds=POLL, legacy_processes_gone=True
    )
    assert done.complete
    await _assert_nothing_missing(table, [pid])


async def test_a_restored_copy_gets_its_stream_and_ttl_and_serves_what_the_original_did(
    client: DynamoClient,
) -> None:
    # A point-in-time restore makes a new table with the indexes and the items, and without
    # the stream or TTL: here a copy made the same way.
    source = TableRef(client, f"original_{uuid.uuid4().hex[:8]}")
    await create_table(client, source.name)
    products = [own_product_id() for _ in range(2)]
    for n in range(8):
        new = NewComment(products[n % 2], ["en", "de"][n % 3 % 2], 1 + n % 5, f"c{n}", f"a{n}")
        await create_comment(source, new, backoff=FAST)
    copy = TableRef(client, f"restored_{uuid.uuid4().hex[:8]}")
    await client.create_table(**table_definition(copy.name, stream=False))
    async for page in scan_pages(source):
        for item in page.get("Items", []):
            await client.put_item(TableName=copy.name, Item=item)
    described = (await client.describe_table(TableName=copy.name))["Table"]
    assert not described.get("StreamSpecification", {}).get("StreamEnabled")

    done = await migrate(copy, wait_seconds=BUILD_WAIT, poll_seconds=POLL)
    assert done.complete
    assert done.stream_enabled
    assert done.ttl_enabled
    assert "turned TTL on" in done.describe()
    described = (await client.describe_table(TableName=copy.name))["Table"]
    assert described["StreamSpecification"]["StreamEnabled"]
    ttl = await client.describe_time_to_live(TableName=copy.name)
    assert ttl["TimeToLiveDescription"]["TimeToLiveStatus"] in ("ENABLED", "ENABLING")
    for pid in products:
        for order in (Order.NEWEST, Order.MOST_HELPFUL):
            want = await list_comments(
                source, ListingFilter(pid), PageRequest(size=20), order=order
            )
            have = await list_comments(copy, ListingFilter(pid), PageRequest(size=20), order=order)
            assert have.comments == want.comments
    await _assert_nothing_missing(copy, products)
    # Run again: nothing left to do.
    assert (await migrate(copy, wait_seconds=BUILD_WAIT, poll_seconds=POLL)).describe() == [
        "the table is at this code's layout already; nothing to do"
    ]
