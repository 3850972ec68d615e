"""Bring an existing table up to this code's layout (``storage.model.layout_version``): expand
(indexes, stream, TTL), fence the older writers and wait for them, backfill the keys old
comments lack, check every comment's index keys and repair them, then record the contract.

**Expand.** A table made by the first ``create-table`` has the four listing indexes only,
one made by the next the eight without the helpful twins; a table restored from a backup
(point-in-time recovery) has its indexes but neither stream nor TTL. Missing indexes are
added one per UpdateTable (DynamoDB builds one at a time), each waited for until ACTIVE for
at most ``wait_seconds``; then the stream (new and old images) and TTL are turned on. A
table whose stream shows other images is left alone with an error: changing the view means
turning the stream off, which ends it and the 24 hours of changes it holds, and that is for
its operator to decide. The layout item then records ``indexes``. Old code notices none of
this; new code may now be deployed.

**Fence and wait.** Before any comment is given new keys, no process of an older layout
may still write: one that wrote the old shape after the backfill passed its comment would
hide it from the new listings (the rolling deploy that lost comments from the most helpful
order did exactly that). ``migrate-table`` reads the processes' heartbeats; while one of an
older layout is alive it stops and names them, unless told to ``fence`` them (they then
refuse writes). It raises the fence, then waits until every older process has seen it or
its lease ran out. A table from before layout versions has processes nobody can see: the
fence is raised only when the operator says they are gone (``legacy_processes_gone``).

**Backfill, check, contract.** The helpful keys' backfill (``storage.ops.backfill``) gives
old comments HSK; then a scan checks every comment's index keys (``storage.ops.verify``,
``comment_drift``) and rewrites those that are wrong, each conditioned on the version it
read; then the item records ``data``. Every step resumes where it stopped when run again.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from storage.base.errors import ConditionFailed, StorageUnavailable
from storage.base.expressions import Attr, put_request
from storage.engine.layout_check import read_table_layout
from storage.engine.table import TableRef
from storage.model.indexes import (
    HELPFUL_SORT_KEY,
    STREAM_SPECIFICATION,
    Index,
    index_attributes,
    index_definition,
)
from storage.model.items import is_comment_item
from storage.model.layout_version import (
    CODE_LAYOUT,
    HEARTBEAT_FENCE_ATTR,
    HEARTBEAT_LAYOUT_ATTR,
    HEARTBEAT_NAME_ATTR,
    HEARTBEAT_UNTIL_ATTR,
    HEARTBEAT_WINDOW_ATTR,
    PROCESS_PK,
    REVISION_ATTR,
    TableLayout,
)
from storage.ops.backfill import Backfill, backfill_helpful_keys
from storage.ops.create import ensure_ttl, missing_indexes
from storage.ops.verify import comment_drift, comment_repair_request, scan_pages

Progress = Callable[[str], None]
# Seconds added to a heartbeat's lease, besides the process's own write window, before it
# counts as run out: the clocks of the host that wrote it and of this one may disagree.
CLOCK_MARGIN = 15.0
# A heartbeat that names no write window (none written by this code does): as long as a
# write may take with the default client settings, rounded up.
UNKNOWN_WINDOW = 60.0


@dataclass(frozen=True, slots=True)
class Heartbeat:
    """A serving process as its last heartbeat describes it."""

    key: str
    name: str
    layout: int
    fence_seen: int
    until: float  # epoch seconds
    window: float  # seconds a write it sent may take to land

    def can_write_old_shape(self, target: int, now: float, margin: float = CLOCK_MARGIN) -> bool:
        """Whether this process may still write a shape older than ``target``: it has not
        acknowledged the fence (the acknowledgement waits for its writes in flight), and a
        write it sent before its lease ran out may still land."""
        if self.layout >= target or self.fence_seen >= target:
            return False
        return now < self.until + self.window + margin


@dataclass(frozen=True, slots=True)
class Migration:
    added: tuple[str, ...]  # indexes this run created
    present: tuple[str, ...]  # indexes that were there already
    backfill: Backfill | None = None
    stream_enabled: bool = False  # this run turned the stream on
    ttl_enabled: bool = False  # this run turned TTL on
    before: TableLayout | None = None  # the layout item as this run found it
    after: TableLayout | None = None  # and as it left it
    fenced: bool = False  # this run raised the fence
    waited_for: tuple[str, ...] = ()  # processes of older layouts it waited for
    keys_repaired: int = 0  # comments whose index keys this run rewrote
    keys_skipped: int = 0  # comments written meanwhile (checked again next run)
    # Why the run stopped before the contract (None: it did not stop early).
    stopped: str | None = None

    @property
    def complete(self) -> bool:
        return self.stopped is None and self.after is not None and self.after.data >= CODE_LAYOUT

    def describe(self) -> list[str]:
        """What this run changed, line by line, for the person who ran it."""
        lines = []
        if self.added:
            lines.append(f"added indexes: {', '.join(self.added)}")
        if self.stream_enabled:
            lines.append("turned the stream on (new and old images)")
        if self.ttl_enabled:
            lines.append("turned TTL on")
        if self.fenced:
            lines.append(
                f"raised the fence: processes of layouts before {CODE_LAYOUT} write nothing"
            )
        if self.waited_for:
            lines.append(f"waited for {len(self.waited_for)} older processes to stop writing")
        filled = self.backfill
        if filled is not None and not filled.already_done:
            lines.append(f"gave {filled.written} comments the most helpful order's key")
        if self.keys_repaired:
            lines.append(f"rewrote the index keys of {self.keys_repaired} comments")
        if self.keys_skipped:
            lines.append(
                f"{self.keys_skipped} comments changed while being checked: run again to check them"
            )
        if self.before != self.after and self.after is not None:
            was = "no layout recorded" if self.before is None else self.before.describe()
            lines.append(f"layout item: {was} -> {self.after.describe()}")
        if not lines:
            lines.append("the table is at this code's layout already; nothing to do")
        return lines


async def migrate(
    table: TableRef,
    *,
    progress: Progress | None = None,
    wait_seconds: float = 3600,
    poll_seconds: float = 0.5,
    expand_only: bool = False,
    fence: bool = False,
    legacy_processes_gone: bool = False,
    wall: Callable[[], float] = time.time,
    clock_margin: float = CLOCK_MARGIN,
) -> Migration:
    """Bring the table to this code's layout, as far as is safe; see the module doc.

    A run that may not go on (processes of an older layout alive, or possibly alive)
    returns with ``stopped`` saying why and what to do, having done what was safe. Each
    wait (for an index, for a fence to be seen) gives up after ``wait_seconds`` with
    StorageUnavailable naming what it waited for; TableMissing if there is no table.
    """
    say = progress or (lambda _: None)
    before = await read_table_layout(table)
    missing = await missing_indexes(table)
    present = tuple(i.value for i in Index if i not in missing)
    await _wait_active(table, say, wait_seconds, poll_seconds)  # one left building earlier
    for n, index in enumerate(missing, 1):
        say(f"[{n}/{len(missing)}] adding index {index.value}")
        await table.client.update_table(
            TableName=table.name,
            # Only the new index's keys: UpdateTable takes the definitions it uses.
            AttributeDefinitions=index_attributes(index),
            GlobalSecondaryIndexUpdates=[{"Create": index_definition(index)}],
        )
        await _wait_active(table, say, wait_seconds, poll_seconds)
        say(f"[{n}/{len(missing)}] index {index.value} is ACTIVE")
    streamed = await _enable_stream(table, say)
    if streamed:
        await _wait_active(table, say, wait_seconds, poll_seconds)
    ttl = await ensure_ttl(table)
    layout = await _record(table, before, lambda t: replace(t, indexes=max(t.indexes, CODE_LAYOUT)))
    done = Migration(tuple(i.value for i in missing), present, None, streamed, ttl, before, layout)
    if layout.data >= CODE_LAYOUT:
        return done
    if expand_only:
        return replace(done, stopped=_DEPLOY_THEN_RUN_AGAIN)
    if layout.writers < CODE_LAYOUT:
        if layout.writers == 0 and not legacy_processes_gone:
            return replace(done, stopped=_LEGACY)
        alive = await _older_writers(table, wall(), clock_margin)
        if alive and not fence:
            return replace(done, stopped=_older_alive(alive))
        say(f"raising the fence: processes of layouts before {CODE_LAYOUT} may no longer write")
        layout = await _record(table, layout, lambda t: replace(t, writers=CODE_LAYOUT))
        done = replace(done, fenced=True, after=layout)
    waited = await _wait_for_fence(table, say, wait_seconds, poll_seconds, wall, clock_margin)
    filled = await backfill_helpful_keys(table, progress=say)
    repaired, skipped = await repair_index_keys(table, say)
    done = replace(
        done, waited_for=waited, backfill=filled, keys_repaired=repaired, keys_skipped=skipped
    )
    if skipped:
        return replace(done, stopped=_CHANGED_MEANWHILE)
    layout = await _record(table, layout, lambda t: replace(t, data=CODE_LAYOUT))
    return replace(done, after=layout)


_DEPLOY_THEN_RUN_AGAIN = (
    f"expanded only: deploy the release of layout {CODE_LAYOUT} to every process, then run "
    "`comments migrate-table` again to give the old comments their keys"
)
_LEGACY = (
    "the table was served by a release that records no layout, and its processes cannot be "
    f"seen: once every process runs a release of layout {CODE_LAYOUT}, run "
    "`comments migrate-table --legacy-processes-gone`"
)
_CHANGED_MEANWHILE = "some comments changed while their keys were checked: run it again"


def _older_alive(alive: list[Heartbeat]) -> str:
    names = ", ".join(f"{h.name} (layout {h.layout})" for h in alive)
    return (
        f"{len(alive)} processes of an older layout are running: {names}. Deploy the release "
        f"of layout {CODE_LAYOUT} to them and run it again, or run it with --fence to stop "
        "their writes now"
    )


async def _record(
    table: TableRef, found: TableLayout | None, change: Callable[[TableLayout], TableLayout]
) -> TableLayout:
    """Write ``change`` of the layout item, on the condition that it is still ``found``
    (its revision; absent when ``found`` is None); a layout item made meanwhile by another
    run is read again and the change applied to it."""
    while True:
        base = found if found is not None else TableLayout(0, 0, 0)
        wanted = change(base)
        if found is not None and wanted == found:
            return found
        written = replace(wanted, revision=base.revision + 1)
        revision = Attr(REVISION_ATTR)
        condition = revision.not_exists() if found is None else revision.eq(found.revision)
        try:
            await table.client.put_item(**put_request(table.name, written.to_item(), condition))
            return written
        except ConditionFailed:
            found = await read_table_layout(table)


async def read_heartbeats(table: TableRef) -> list[Heartbeat]:
    """Every serving process's last heartbeat (those TTL has not removed yet)."""
    found: list[Heartbeat] = []
    params: dict[str, Any] = {
        "TableName": table.name,
        "KeyConditionExpression": "PK = :pk",
        "ExpressionAttributeValues": {":pk": {"S": PROCESS_PK}},
        "ConsistentRead": True,
    }
    while True:
        response = await table.client.query(**params)
        for item in response.get("Items", []):
            found.append(
                Heartbeat(
                    item["SK"]["S"],
                    item.get(HEARTBEAT_NAME_ATTR, {}).get("S", item["SK"]["S"]),
                    int(item[HEARTBEAT_LAYOUT_ATTR]["N"]),
                    int(item[HEARTBEAT_FENCE_ATTR]["N"]),
                    float(item[HEARTBEAT_UNTIL_ATTR]["N"]),
                    float(item.get(HEARTBEAT_WINDOW_ATTR, {}).get("N", UNKNOWN_WINDOW)),
                )
            )
        if "LastEvaluatedKey" not in response:
            return found
        params["ExclusiveStartKey"] = response["LastEvaluatedKey"]


async def _older_writers(table: TableRef, now: float, margin: float) -> list[Heartbeat]:
    """The processes of an older layout that may still write, by their heartbeats."""
    heartbeats = await read_heartbeats(table)
    return [h for h in heartbeats if h.can_write_old_shape(CODE_LAYOUT, now, margin)]


async def _wait_for_fence(
    table: TableRef,
    say: Progress,
    wait_seconds: float,
    poll_seconds: float,
    wall: Callable[[], float],
    margin: float,
) -> tuple[str, ...]:
    """Until no process of an older layout may write: each has seen the fence in a
    heartbeat, or its lease (and the clock margin) has run out."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + wait_seconds
    waited: set[str] = set()
    while True:
        now = wall()
        pending = await _older_writers(table, now, margin)
        if not pending:
            return tuple(sorted(waited))
        fresh = {h.name for h in pending} - waited
        if fresh:
            latest = max(h.until for h in pending) + margin - now
            say(
                f"waiting for {len(pending)} older processes to see the fence or stop "
                f"(at most {latest:.0f} s): {', '.join(sorted(h.name for h in pending))}"
            )
            waited |= fresh
        if loop.time() > deadline:
            raise StorageUnavailable(
                f"processes of an older layout still write after {wait_seconds:g} s: "
                f"{', '.join(sorted(h.name for h in pending))}"
            )
        await asyncio.sleep(poll_seconds)


async def repair_index_keys(table: TableRef, say: Progress) -> tuple[int, int]:
    """Check every comment's index keys and rewrite those that are wrong, each on the
    condition that it is the version scanned; (rewritten, changed meanwhile)."""
    repaired = skipped = scanned = 0
    async for response in scan_pages(table):
        for item in response.get("Items", []):
            if not is_comment_item(item):
                continue
            drift = comment_drift(item, None)
            # An HSK that is there but lags a vote is the vote's follow-up to finish (by
            # design, storage.writes.ballots), not an old shape: rewriting it would race
            # every vote on a busy comment and never settle.
            lagging = drift is not None and drift.wrong_keys == (HELPFUL_SORT_KEY,)
            if drift is None or not drift.wrong_keys or (lagging and HELPFUL_SORT_KEY in item):
                continue
            try:
                await table.client.put_item(**comment_repair_request(table, drift))
                repaired += 1
            except ConditionFailed:
                skipped += 1
        scanned += int(response.get("ScannedCount", 0))
        say(f"index keys: {scanned} items checked, {repaired} comments rewritten")
    return repaired, skipped


async def _enable_stream(table: TableRef, say: Progress) -> bool:
    """Turn the table's stream on (new and old images) if it is off; True if this did."""
    described = (await table.client.describe_table(TableName=table.name))["Table"]
    spec = described.get("StreamSpecification") or {}
    if spec.get("StreamEnabled"):
        view = spec.get("StreamViewType")
        if view != STREAM_SPECIFICATION["StreamViewType"]:
            raise StorageUnavailable(
                f"table {table.name!r} streams {view}, not "
                f"{STREAM_SPECIFICATION['StreamViewType']}: turn its stream off and run "
                "migrate-table again (turning it off ends the stream and its changes)"
            )
        return False
    say("turning the table's stream on (new and old images)")
    await table.client.update_table(
        TableName=table.name, StreamSpecification=dict(STREAM_SPECIFICATION)
    )
    return True


async def _wait_active(
    table: TableRef, say: Progress, wait_seconds: float, poll_seconds: float
) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + wait_seconds
    reported: set[str] = set()
    while True:
        described = (await table.client.describe_table(TableName=table.name))["Table"]
        building = [
            g["IndexName"]
            for g in described.get("GlobalSecondaryIndexes", [])
            if g.get("IndexStatus") != "ACTIVE" or g.get("Backfilling")
        ]
        if described.get("TableStatus") == "ACTIVE" and not building:
            return
        for name in set(building) - reported:
            say(f"waiting for index {name} to be built")
            reported.add(name)
        if loop.time() > deadline:
            waiting_for = ", ".join(sorted(building)) or "the table itself"
            raise StorageUnavailable(
                f"table {table.name!r}: {waiting_for} still not ACTIVE after {wait_seconds:g} s; "
                "DynamoDB goes on building it, and migrate-table run again waits for it and "
                "adds the rest"
            )
        await asyncio.sleep(poll_seconds)
