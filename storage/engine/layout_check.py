"""A serving process's side of the layout protocol (``storage.model.layout_version``): it
reads the table's layout item at start and every ``lease / 4`` seconds, publishes a
heartbeat, and writes only while the protocol lets it.

``LayoutGate`` is what the process knows (a memory of its ``TableRef``); ``FencedWrites``
is the client wrapper that refuses every write the gate does not allow, so no write path
can forget to ask. The order inside one check is what makes the fence safe: a fence that
excludes this code closes the gate *before* the heartbeat that acknowledges it is written,
and the lease is extended only *after* the heartbeat that announces it was written, so
``migrate-table``, reading the heartbeats, never believes a process stopped while it can
still write.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from storage.base.errors import StorageUnavailable
from storage.base.expressions import get_request
from storage.base.types import Item, Response
from storage.engine.table import TableRef
from storage.engine.wrapping import ClientWrapper
from storage.model.indexes import TTL_ATTR
from storage.model.layout_version import (
    CODE_LAYOUT,
    DEFAULT_LEASE_SECONDS,
    HEARTBEAT_FENCE_ATTR,
    HEARTBEAT_LAYOUT_ATTR,
    HEARTBEAT_NAME_ATTR,
    HEARTBEAT_UNTIL_ATTR,
    HEARTBEAT_WINDOW_ATTR,
    LAYOUT_VERSION_KEY,
    PROCESS_PK,
    Fit,
    TableLayout,
    advice,
    fit,
)

log = logging.getLogger("comments.storage")

# The calls that write; the gate stands before each of them.
WRITES = frozenset(
    {"put_item", "update_item", "delete_item", "transact_write_items", "batch_write_item"}
)
# Seconds a heartbeat item is kept after its last write (TTL tidies up after dead processes).
HEARTBEAT_KEPT = 86400


@dataclass(slots=True)
class LayoutGate:
    """What this process knows of the table's layout. ``enforced`` is off for a table the
    caller prepares itself (tests, commands): then every write passes and readiness does not
    ask. ``clock`` is monotonic: the lease never depends on the wall clock of this host."""

    code: int = CODE_LAYOUT
    enforced: bool = False
    table: TableLayout | None = None
    fit: Fit = Fit.NO_LAYOUT
    checked_at: float | None = None  # when the last good check started
    in_flight: int = 0  # writes sent and not yet answered
    # Seconds one write may take from being sent to landing (the client's attempts,
    # timeouts and backoff); published in the heartbeat, see ``FencedWrites``.
    write_window: float = 0.0
    idle: asyncio.Event = field(default_factory=asyncio.Event)  # set while in_flight is 0
    clock: Callable[[], float] = field(default=time.monotonic)

    @property
    def lease_seconds(self) -> float:
        return self.table.lease_seconds if self.table is not None else DEFAULT_LEASE_SECONDS

    def lease_valid(self) -> bool:
        return self.checked_at is not None and self.clock() - self.checked_at < self.lease_seconds

    @property
    def fenced(self) -> bool:
        """The fence (or a layout item gone since it was read) excludes this code."""
        return not self.fit.may_write

    def may_write(self) -> bool:
        return not self.enforced or (not self.fenced and self.lease_valid())

    def ready(self) -> bool:
        return not self.enforced or (self.fit.ready and self.lease_valid())

    def __post_init__(self) -> None:
        self.idle.set()

    async def settled(self) -> None:
        """Once the writes sent before now are answered (none is sent while fenced)."""
        await self.idle.wait()

    def sent(self) -> None:
        self.in_flight += 1
        self.idle.clear()

    def answered(self) -> None:
        self.in_flight -= 1
        if not self.in_flight:
            self.idle.set()

    def reason(self) -> str:
        """Why this process is not ready (or its state, when it is), in one line."""
        if self.checked_at is None:
            return "the table's layout has not been read yet"
        if not self.lease_valid():
            return (
                "the table's layout could not be read and this process's heartbeat written "
                "for longer than the lease"
            )
        return advice(self.fit, self.table, self.code)


@dataclass(frozen=True, slots=True)
class ProcessId:
    """A serving process in heartbeats: ``key`` unique per start, ``name`` for people."""

    key: str
    name: str


async def read_table_layout(table: TableRef) -> TableLayout | None:
    """The table's layout item, strongly consistent; None when it has none."""
    response = await table.client.get_item(
        **get_request(table.name, LAYOUT_VERSION_KEY, consistent=True)
    )
    return TableLayout.of(response.get("Item"))


async def check_layout(
    table: TableRef,
    gate: LayoutGate,
    process: ProcessId,
    *,
    wall: Callable[[], float] = time.time,
    attempts: int = 3,
) -> Fit:
    """One check: read the item, close the gate at once if the fence excludes this code,
    publish the heartbeat, read the item again, and extend the lease only when the second
    read finds what the first did. A failure (storage errors, a malformed item) leaves the
    lease as it was: it runs out unless a later check succeeds.

    The second read is what makes a late heartbeat harmless: migrate-table raises the fence
    and then reads the heartbeats; this reads the item after its heartbeat landed. Either
    migrate-table sees the heartbeat (and waits for it), or this sees the fence.
    """
    started, started_wall = gate.clock(), wall()
    layout = await read_table_layout(table)
    for _ in range(attempts):
        found = fit(layout, gate.code, seen=gate.table)
        if found is not gate.fit or gate.checked_at is None:
            _say(found, layout, gate.code)
        if not found.may_write:
            # Closed before the heartbeat that says this process saw the fence, and that
            # heartbeat waits for the writes already on their way: once migrate-table reads
            # it, no write of the old shape can land any more.
            gate.fit = found
            if layout is not None:
                gate.table = layout
            await gate.settled()
        await table.client.put_item(
            TableName=table.name, Item=_heartbeat(gate, process, layout, started_wall)
        )
        again_at, again_wall = gate.clock(), wall()
        again = await read_table_layout(table)
        if again == layout:
            if layout is not None:
                gate.table = layout
            gate.fit = found
            gate.checked_at = started  # after the heartbeat: never a lease nobody can see
            return found
        # The item changed while the heartbeat was on its way: start again from the second
        # read, the lease counted from when it was sent.
        layout, started, started_wall = again, again_at, again_wall
    raise StorageUnavailable("the table's layout kept changing while it was checked")


def _heartbeat(
    gate: LayoutGate, process: ProcessId, layout: TableLayout | None, started_wall: float
) -> Item:
    seen = layout if layout is not None else gate.table
    lease = layout.lease_seconds if layout is not None else gate.lease_seconds
    return {
        "PK": {"S": PROCESS_PK},
        "SK": {"S": process.key},
        HEARTBEAT_NAME_ATTR: {"S": process.name},
        HEARTBEAT_LAYOUT_ATTR: {"N": str(gate.code)},
        HEARTBEAT_FENCE_ATTR: {"N": str(seen.writers if seen is not None else 0)},
        HEARTBEAT_UNTIL_ATTR: {"N": f"{started_wall + lease:.3f}"},
        HEARTBEAT_WINDOW_ATTR: {"N": f"{gate.write_window:.3f}"},
        TTL_ATTR: {"N": str(int(started_wall) + HEARTBEAT_KEPT)},
    }


def _say(found: Fit, layout: TableLayout | None, code: int) -> None:
    if found is Fit.READY:
        log.info("table layout: %s", advice(found, layout, code))
    elif found is Fit.BACKFILL_PENDING:
        log.warning("table layout: %s", advice(found, layout, code))
    else:
        log.error("table layout: %s", advice(found, layout, code))


class FencedWrites(ClientWrapper):
    """Every write asks the gate first; a refused one raises StorageUnavailable and is
    never sent. Reads pass."""

    def __init__(self, inner: Any, gate: LayoutGate) -> None:
        super().__init__(inner)
        self.gate = gate

    async def _call(self, operation: str, kwargs: dict[str, Any]) -> Response:
        if operation not in WRITES:
            return await super()._call(operation, kwargs)
        if not self.gate.may_write():
            raise StorageUnavailable(f"{operation} refused: {self.gate.reason()}")
        self.gate.sent()
        try:
            response = await super()._call(operation, kwargs)
        except BaseException:
            # No answer (an error, a timeout, the request's deadline cancelling it): the
            # request may still be on its way and land later, so it counts as in flight
            # for the longest a write may take.
            asyncio.get_running_loop().call_later(self.gate.write_window, self.gate.answered)
            raise
        self.gate.answered()
        return response
