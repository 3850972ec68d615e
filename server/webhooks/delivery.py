"""Delivering events in lanes: one endpoint and one product (or the shop-wide scope) per
lane, in the order of the product's sequence numbers, by one process at a time.

Each process polls the due partition (``storage.reads.webhooks.due_lanes``: lanes with
events not yet delivered), and for each lane that is due and not backing off, claims it
(``storage.writes.webhook_lanes.claim_lane``: owner and lease), then sends the lane's
events after its cursor one by one, moving the cursor after each answer (renewing the
lease). A lane whose receiver fails (non-2xx, a timeout, a refused address) backs off
exponentially with full jitter and is given up; only that lane waits: other products of
the same endpoint go on. An event that keeps failing for ``horizon_seconds`` is kept as
failed (replayable: ``comments webhooks replay``) and the lane moves past it. A 410 Gone
turns the endpoint off.

Bounds: ``concurrency`` lanes at once per process, ``per_endpoint`` of one endpoint; every
send ends within the transport's deadline, which the lease outlasts (settings check it),
so a slow or silent receiver holds one lane's slot, never the API or other lanes.
"""

from __future__ import annotations

import asyncio
import logging
import random
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

import httpx

from server.webhooks.signing import signed_headers
from server.webhooks.transport import Answer, Refused
from storage.base.errors import StorageError
from storage.base.types import Item
from storage.engine.table import TableRef
from storage.model.webhooks import Endpoint, Event
from storage.reads.webhooks import DueLane, due_lanes, events_after, get_endpoint
from storage.writes.webhook_endpoints import disable_endpoint
from storage.writes.webhook_lanes import (
    Lane,
    LaneLost,
    advance,
    back_off,
    claim_lane,
    clear_due,
    give_up,
    release,
)

log = logging.getLogger("comments.webhooks")

# Events read from a scope's log per Query.
EVENTS_PER_READ = 25
# Due lanes read per poll.
DUE_PER_POLL = 200


class Poster(Protocol):
    async def post(self, url: str, body: bytes, headers: dict[str, str]) -> Answer: ...


@dataclass(frozen=True, slots=True)
class DeliveryTuning:
    concurrency: int = 32
    per_endpoint: int = 4
    lease_seconds: float = 60.0
    poll_seconds: float = 0.5
    retry_base_seconds: float = 5.0
    retry_max_seconds: float = 3600.0
    horizon_seconds: float = 86400.0


def backoff(attempt: int, tuning: DeliveryTuning, rand: Callable[[], float]) -> float:
    """Seconds until the next attempt after ``attempt`` failures: full jitter over an
    exponential ceiling."""
    ceiling = min(tuning.retry_max_seconds, tuning.retry_base_seconds * 2.0 ** min(attempt, 30))
    return max(tuning.retry_base_seconds / 10, rand() * ceiling)


@dataclass(slots=True)
class Stats:
    sent: int = 0
    failed_attempts: int = 0
    given_up: int = 0
    lanes_lost: int = 0


@dataclass(slots=True)
class Deliverer:
    """One process's share of deliveries; ``run`` until cancelled."""

    table: TableRef
    owner: str
    poster: Poster
    tuning: DeliveryTuning = DeliveryTuning()
    rand: Callable[[], float] = random.random
    on_sent: Callable[[Event, Endpoint], None] = lambda event, endpoint: None
    # Told each attempt's outcome: sent, failed (to be retried) or given_up.
    on_outcome: Callable[[str], None] = lambda outcome: None
    stats: Stats = field(default_factory=Stats)
    due_per_poll: int = DUE_PER_POLL
    _busy: set[tuple[str, str]] = field(default_factory=set)
    # Where the last look at the due lanes stopped (None: at the start).
    _resume: Item | None = None
    _slots: asyncio.Semaphore | None = None
    _per_endpoint: dict[str, asyncio.Semaphore] = field(default_factory=dict)
    _tasks: set[asyncio.Task[None]] = field(default_factory=set)

    async def run(self) -> None:
        try:
            while True:
                try:
                    await self.poll()
                except StorageError as exc:
                    log.warning("webhooks: reading due lanes failed (%s)", type(exc).__name__)
                await asyncio.sleep(self.tuning.poll_seconds)
        finally:
            for task in self._tasks:
                task.cancel()
            if self._tasks:
                await asyncio.gather(*self._tasks, return_exceptions=True)

    async def poll(self) -> int:
        """Start a delivery task for each due lane this process has room for; how many."""
        if self._slots is None:
            self._slots = asyncio.Semaphore(self.tuning.concurrency)
        now = time.time()
        found, self._resume = await due_lanes(
            self.table, limit=self.due_per_poll, after=self._resume
        )
        due = [d for d in found if d.next_at <= now]
        random.shuffle(due)
        started = 0
        for lane in due:
            key = (lane.endpoint_id, lane.scope)
            if key in self._busy or self._slots.locked():
                continue
            per = self._per_endpoint.setdefault(
                lane.endpoint_id, asyncio.Semaphore(self.tuning.per_endpoint)
            )
            if per.locked():
                continue
            self._busy.add(key)
            task = asyncio.create_task(self._guarded(lane, per))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)
            started += 1
        return started

    async def _guarded(self, due: DueLane, per: asyncio.Semaphore) -> None:
        assert self._slots is not None
        try:
            async with self._slots, per:
                await self.deliver_lane(due)
        except LaneLost:
            self.stats.lanes_lost += 1
        except (StorageError, OSError) as exc:
            log.warning("webhooks: lane %s/%s stopped (%s)", due.endpoint_id, due.scope, exc)
        finally:
            self._busy.discard((due.endpoint_id, due.scope))

    async def deliver_lane(self, due: DueLane) -> None:
        """Claim the lane and deliver what it has, until caught up or a failure."""
        lane = await claim_lane(
            self.table,
            due.endpoint_id,
            due.scope,
            owner=self.owner,
            lease_seconds=self.tuning.lease_seconds,
            start=due.start,
        )
        if lane is None:
            return
        try:
            endpoint = await get_endpoint(self.table, due.endpoint_id)
            if endpoint is None or not endpoint.enabled:
                await clear_due(self.table, due.endpoint_id, due.scope, due.head)
                return
            caught_up = await self._deliver(endpoint, lane, due.head)
            if caught_up:
                await clear_due(self.table, due.endpoint_id, due.scope, due.head)
        finally:
            await release(self.table, lane, owner=self.owner)

    async def _deliver(self, endpoint: Endpoint, lane: Lane, head: int) -> bool:
        lease = self.tuning.lease_seconds
        while lane.cursor < head:
            events = await events_after(
                self.table, lane.scope, lane.cursor, head, limit=EVENTS_PER_READ
            )
            if not events:  # expired from the log: nothing left to send
                lane = await advance(
                    self.table, lane, owner=self.owner, lease_seconds=lease, to=head, sent=None
                )
                break
            for event in events:
                if not endpoint.wants(event):
                    lane = await advance(
                        self.table,
                        lane,
                        owner=self.owner,
                        lease_seconds=lease,
                        to=event.sequence,
                        sent=None,
                    )
                    continue
                outcome = await self.send(endpoint, event, lane.last_sent)
                self.on_outcome("sent" if outcome is None else "failed")
                if outcome is None:
                    self.stats.sent += 1
                    self.on_sent(event, endpoint)
                    lane = await advance(
                        self.table,
                        lane,
                        owner=self.owner,
                        lease_seconds=lease,
                        to=event.sequence,
                        sent=event.sequence,
                    )
                    continue
                if outcome == "410":
                    await disable_endpoint(self.table, endpoint.endpoint_id, "answered 410 Gone")
                    return False
                self.stats.failed_attempts += 1
                now = time.time()
                first = lane.first_fail_at if lane.first_fail_at is not None else now
                if now - first >= self.tuning.horizon_seconds:
                    self.stats.given_up += 1
                    self.on_outcome("given_up")
                    log.warning(
                        "webhooks: gave up %s on %s after %s attempts (%s)",
                        event.event_id,
                        endpoint.endpoint_id,
                        lane.attempt + 1,
                        outcome,
                    )
                    lane = await give_up(
                        self.table,
                        lane,
                        owner=self.owner,
                        lease_seconds=lease,
                        sequence=event.sequence,
                        reason=outcome,
                    )
                    continue
                delay = backoff(lane.attempt, self.tuning, self.rand)
                await back_off(self.table, lane, owner=self.owner, next_at=now + delay, now=now)
                return False
        return True

    async def send(self, endpoint: Endpoint, event: Event, previous: int | None) -> str | None:
        """One attempt; None when the receiver took it, else why not (``410`` for Gone)."""
        body = event.payload(previous)
        headers = signed_headers(event.event_id, body, endpoint.signing_secrets(time.time()))
        try:
            answer = await self.poster.post(endpoint.url, body.encode(), headers)
        except Refused as exc:
            return f"refused: {exc}"
        except (httpx.HTTPError, TimeoutError, OSError) as exc:
            return f"no answer: {type(exc).__name__}"
        if 200 <= answer.status < 300:
            return None
        if answer.status == 410:
            return "410"
        return f"answered {answer.status}"


Replay = Callable[[Endpoint, Event, int | None], Awaitable[str | None]]


def describe(due: DueLane) -> dict[str, Any]:
    return {"endpoint": due.endpoint_id, "scope": due.scope, "head": due.head}
