"""Races and edge cases of the layout protocol (``storage.engine.layout_check``,
``storage.ops.migrate``) that the rolling-upgrade test does not reach.

Each test orders the events it needs with events and held calls, never with sleeps.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

import pytest

from storage.base.errors import StorageError, StorageUnavailable
from storage.base.types import DynamoClient, Response
from storage.engine.client import ClientSettings
from storage.engine.layout_check import (
    WRITES,
    FencedWrites,
    LayoutGate,
    ProcessId,
    check_layout,
)
from storage.engine.table import TableRef
from storage.engine.wrapping import ClientWrapper
from storage.model import keys
from storage.model.comments import ListingFilter, NewComment, Order, PageRequest
from storage.model.indexes import HELPFUL_SORT_KEY
from storage.model.items import comment_to_item
from storage.model.layout_version import CODE_LAYOUT, LAYOUT_VERSION_KEY, TableLayout
from storage.ops.migrate import CLOCK_MARGIN, migrate, read_heartbeats
from storage.ops.verify import repair, verify
from storage.reads.reader import get_counts, list_comments
from storage.writes import create_comment
from tests.helpers import FAST, own_product_id, own_table

pytestmark = pytest.mark.engine

POLL = 0.05
WAIT = 60.0
LEASE = 60.0  # the production lease: the old process's gate stays open well past the test


class HeldPut(ClientWrapper):
    """Passes every call on; the first write (a process's heartbeat) waits, once it has
    been reached, until ``release`` is set: a heartbeat that botocore is still retrying,
    or that storage answers slowly."""

    def __init__(self, inner: DynamoClient) -> None:
        super().__init__(inner)
        self.reached = asyncio.Event()
        self.release = asyncio.Event()
        self.held = False

    async def _call(self, operation: str, kwargs: dict[str, Any]) -> Response:
        if operation in WRITES and not self.held:
            self.held = True
            self.reached.set()
            await self.release.wait()
        return await super()._call(operation, kwargs)


async def _old_shape_comment(serving: TableRef, product_id: str, n: int) -> bool:
    """A comment as a process of layout 2 writes it (no HSK); False if the gate refused."""
    try:
        made = await create_comment(
            serving, NewComment(product_id, "en", 5, f"old {n}", f"old-{n}"), backoff=FAST
        )
        pk = {"S": keys.comment_pk(made.comment.comment_id)}
        await serving.client.update_item(
            TableName=serving.name, Key={"PK": pk, "SK": pk}, UpdateExpression="REMOVE HSK"
        )
    except StorageUnavailable:
        return False
    return True


async def test_a_heartbeat_landing_after_migrate_read_the_heartbeats_lets_an_old_process_write(
    table: TableRef,
) -> None:
    # A table expanded to this code's layout while processes of layout 2 served it (step
    # 1 done).
    own = await own_table(table, "race_hb")
    item = TableLayout(CODE_LAYOUT, 2, 2, LEASE, revision=7).to_item()
    await own.client.put_item(TableName=own.name, Item=item)
    pid = own_product_id()

    # A process of layout 2 starts (or comes back after its lease ran out): it reads the
    # layout item (writers 2: it may write) and sends its heartbeat, which is slow to land.
    gate = LayoutGate(code=2, enforced=True)
    held = HeldPut(own.client)
    me = ProcessId("old:1", "old")
    checking = asyncio.create_task(check_layout(TableRef(held, own.name), gate, me))
    await held.reached.wait()
    assert not gate.may_write()  # no heartbeat yet: its gate is still closed

    # migrate-table, the documented step 3: no live older heartbeat, so it raises the
    # fence, waits for nobody, backfills, checks every key and records the contract.
    done = await migrate(own, wait_seconds=WAIT, poll_seconds=POLL)
    assert done.complete, done.stopped
    assert done.after is not None
    assert done.after.data == CODE_LAYOUT

    # The heartbeat lands now (fence seen: 2), and the gate opens for a full lease.
    held.release.set()
    with contextlib.suppress(StorageError):  # a check that fails leaves the gate shut
        await checking
    serving = TableRef(FencedWrites(own.client, gate), own.name)
    written = await _old_shape_comment(serving, pid, 1)

    total = (await get_counts(own, pid, None)).total
    listed = await list_comments(
        own, ListingFilter(pid), PageRequest(size=100), order=Order.MOST_HELPFUL
    )
    assert (written, len(listed.comments)) == (False, total), (
        f"after migrate-table recorded data=3, the layout-2 process could write={written} "
        f"(gate.may_write()={gate.may_write()}); most helpful lists {len(listed.comments)} "
        f"of totalCount {total}"
    )


async def test_migrate_waits_for_a_write_sent_just_before_the_lease_ran_out(
    table: TableRef,
) -> None:
    # A write passes the gate once, when it is sent; botocore then tries it up to
    # max_attempts times, with backoff between them. A vote's transaction runs in its lane,
    # which no request deadline cancels. The process publishes that window in its
    # heartbeat, and migrate-table counts it past the heartbeat's `until`, besides the
    # clock margin: the margin alone (15 s) is less than one call may take (over 21 s).
    own = await own_table(table, "race_window")
    await own.client.put_item(
        TableName=own.name, Item=TableLayout(CODE_LAYOUT, 2, 2, LEASE).to_item()
    )
    window = ClientSettings().longest_call_seconds
    assert window > CLOCK_MARGIN
    gate = LayoutGate(code=2, enforced=True, write_window=window)
    await check_layout(own, gate, ProcessId("old:1", "old"))
    (heartbeat,) = await read_heartbeats(own)
    assert heartbeat.window == window
    just_after = heartbeat.until + CLOCK_MARGIN + 1
    assert heartbeat.can_write_old_shape(3, just_after)
    assert not heartbeat.can_write_old_shape(3, just_after + window)


@pytest.mark.parametrize("lease", ["0", "-5", "1e12", "nan"])
def test_a_lease_out_of_any_sensible_range_is_refused(lease: str) -> None:
    # leaseSeconds is written by hand only. 0 or below: lease / 4 is the check loop's
    # sleep (server.runtime._start_checking), so every process would read and heartbeat
    # without pause; 1e12: a process would check once and then never again. Such an item
    # fails the check (the lease runs out: no writes), it is never taken as it is.
    item = {**TableLayout.new_table().to_item(), "leaseSeconds": {"N": lease}}
    with pytest.raises(ValueError, match="out of range"):
        TableLayout.of(item)


@pytest.mark.parametrize("broken", ["indexes", "writers", "revision"])
def test_a_layout_item_missing_a_number_is_refused_not_read_as_zero(broken: str) -> None:
    # A writers attribute removed by hand would read as 0: anyone may write.
    item = TableLayout(4, 4, 3).to_item()
    del item[broken]
    with pytest.raises(ValueError, match="malformed"):
        TableLayout.of(item)


async def test_a_fenced_process_stays_fenced_when_the_layout_item_disappears(
    table: TableRef,
) -> None:
    own = await own_table(table, "race_gone")
    me = ProcessId("p:1", "p")
    # This code as the old code of a later upgrade: the fence says the next layout.
    later = TableLayout(CODE_LAYOUT + 1, CODE_LAYOUT + 1, CODE_LAYOUT, LEASE)
    await own.client.put_item(TableName=own.name, Item=later.to_item())
    gate = LayoutGate(enforced=True)
    await check_layout(own, gate, me)
    assert not gate.may_write()
    # The item is deleted (by hand, or a script that "resets" the table's metadata).
    await own.client.delete_item(TableName=own.name, Key=LAYOUT_VERSION_KEY)
    await check_layout(own, gate, me)
    assert not gate.may_write(), (
        f"fenced at writers={CODE_LAYOUT + 1}, then no item: the gate opened again ({gate.fit})"
    )


async def _versionless_comment_with_a_stale_key(own: TableRef, pid: str) -> str:
    made = await create_comment(own, NewComment(pid, "en", 4, "legacy", "l-1"), backoff=FAST)
    item = comment_to_item(made.comment, holds_slot=True)
    del item["version"]  # written before comments carried a version
    item[HELPFUL_SORT_KEY] = {"S": keys.helpful_sort_key(3, made.comment.sort_key)}
    await own.client.put_item(TableName=own.name, Item=item)
    return made.comment.comment_id


async def test_verify_repairs_the_keys_of_a_comment_without_a_version(table: TableRef) -> None:
    own = await own_table(table, "race_nover")
    await _versionless_comment_with_a_stale_key(own, own_product_id())
    report = await verify(own)
    assert [d.wrong_keys for d in report.vote_drifts] == [(HELPFUL_SORT_KEY,)]
    repaired = await repair(own, report)
    assert (repaired.repaired, repaired.skipped) == (1, 0), repaired
    assert (await verify(own)).exact


async def test_migrate_finishes_on_a_comment_without_a_version(table: TableRef) -> None:
    own = await own_table(table, "race_nover_m")
    # Fenced already (an earlier run stopped after the fence); the keys remain.
    await own.client.put_item(
        TableName=own.name, Item=TableLayout(CODE_LAYOUT, CODE_LAYOUT, 2, LEASE).to_item()
    )
    await _versionless_comment_with_a_stale_key(own, own_product_id())
    runs = [await migrate(own, wait_seconds=WAIT, poll_seconds=POLL) for _ in range(3)]
    assert runs[-1].complete, [(r.stopped, r.keys_repaired, r.keys_skipped) for r in runs]
