"""One process's feed of the table's stream: comment events to its subscribers, fresh
counters to its snapshot.

Each process follows the stream itself (``storage.live.stream``), so a write through any
process reaches the subscribers of every process, and each keeps its own snapshot of the
counters (``storage.reads.snapshots``) current without reading them.

For each batch of changes:

1. every stats item's new counters refresh the process's snapshot, for the scopes it keeps
   (the stream carries the whole table's changes; taking them all in would push out the
   scopes this process's pages use);
2. every comment change is classified for each subscriber of its product
   (``storage.live.events.classify``: what that subscriber's listing shows before and after);
3. the counters of the products that have events are read once for the batch (after the
   changes were written, so they count them) and handed out with the events.

Bounds: a batch is handed out whole; a subscriber that, at the next batch for its
product, has more than ``queue_size`` events waiting and took none since, or more than
``HARD_FACTOR`` times that many, is ended with TOO_SLOW rather than let its queue grow,
and its client resubscribes and reloads (``Subscription``). The events queued are shared
by the subscribers of a product, so what a process holds is at most that many events per
product watched, plus one batch (a comment is at most ``model.BODY_MAX_BYTES`` and its
title), and a reference per subscriber and event. The number of subscribers per process
is capped (``max_subscribers``).

Nothing is hidden: when the stream loses changes (a reader more than 24 hours behind, an
iterator that expired before anything was read, the follower failing and starting again
from the latest position), every subscriber is ended with EVENTS_LOST so its client
reloads, and the snapshot is dropped.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import suppress
from dataclasses import dataclass, field

from storage.base.errors import StorageError
from storage.engine.table import TableRef
from storage.live.events import (
    CommentChange,
    EventKind,
    Listing,
    classify,
    comment_change,
    fresh_counts,
)
from storage.live.stream import Change
from storage.model.comments import RatingCounts
from storage.model.stats import StatsScope
from storage.reads.reader import batch_get_counts
from storage.reads.snapshots import PlanMemory

log = logging.getLogger("comments.feed")

DEFAULT_QUEUE = 100
# A subscriber with this many times its queue size waiting is too slow, however it reads.
HARD_FACTOR = 10
DEFAULT_MAX_SUBSCRIBERS = 10_000
# Attempts at reading a batch's counters before its subscribers are ended.
COUNTS_ATTEMPTS = 3


class Ended(Exception):
    """A subscription ended by the feed; ``code`` says why (a stable error code)."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code


class TooManySubscribers(Exception):
    """The process holds as many subscriptions as it may."""


@dataclass(frozen=True, slots=True)
class Delivery:
    """One event for one subscriber: what happened, and the product's counters after it
    (all languages, and the subscriber's language when it watches one)."""

    kind: EventKind
    change: CommentChange
    counts: RatingCounts
    language_counts: RatingCounts | None


@dataclass(eq=False, slots=True)
class Subscription:
    """One subscriber's events, in the order the stream gave them; iterate to receive.

    How slow is too slow: a batch of the stream is handed out whole, however many events
    it holds for the subscriber (a client cannot read any of them before the batch is
    handed out); at the next batch for its product, a subscriber that has more than
    ``queue_size`` events waiting and has taken none since the last batch, or that has more
    than ``HARD_FACTOR`` times ``queue_size`` waiting (it reads, but slower than events
    come), is ended with TOO_SLOW."""

    listing: Listing
    queue_size: int
    _queue: deque[Delivery] = field(default_factory=deque)
    _ready: asyncio.Event = field(default_factory=asyncio.Event)
    _ended: Ended | None = None
    # Events taken by the client in all, and as counted at the last batch.
    _taken: int = 0
    _taken_at_check: int = 0

    def check_pace(self) -> None:
        """Called before a batch for its product is handed out (see the class doc)."""
        waiting = len(self._queue)
        stuck = waiting > self.queue_size and self._taken == self._taken_at_check
        if stuck or waiting > HARD_FACTOR * self.queue_size:
            self.end(
                Ended(
                    "TOO_SLOW",
                    f"More than {self.queue_size} events waited for this subscriber; "
                    "subscribe again and reload the page's comments.",
                )
            )
        self._taken_at_check = self._taken

    def put(self, delivery: Delivery) -> None:
        if self._ended is not None:
            return
        self._queue.append(delivery)
        self._ready.set()

    def end(self, reason: Ended) -> None:
        if self._ended is None:
            self._ended = reason
            self._queue.clear()
        self._ready.set()

    def __aiter__(self) -> AsyncIterator[Delivery]:
        return self

    async def __anext__(self) -> Delivery:
        while True:
            if self._ended is not None:
                raise self._ended
            if self._queue:
                self._taken += 1
                return self._queue.popleft()
            self._ready.clear()
            await self._ready.wait()


Batches = Callable[[], AsyncIterator[list[Change]]]


@dataclass(slots=True)
class Feed:
    """The stream's changes handed to this process's subscribers and snapshot."""

    table: TableRef
    queue_size: int = DEFAULT_QUEUE
    max_subscribers: int = DEFAULT_MAX_SUBSCRIBERS
    # Seconds between the newest change of the last batch being written and its delivery
    # (0 once a poll found nothing).
    lag_seconds: float = 0.0
    _by_product: dict[str, set[Subscription]] = field(default_factory=dict)
    _count: int = 0
    # Set while the stream is being followed: subscriptions are refused otherwise.
    _following: asyncio.Event = field(default_factory=asyncio.Event)

    @property
    def following(self) -> bool:
        return self._following.is_set()

    async def wait_following(self, seconds: float) -> bool:
        """Whether the stream is followed, waiting up to ``seconds`` for it (a process that
        has just started, or a follower starting again)."""
        if not self.following:
            with suppress(TimeoutError):
                async with asyncio.timeout(seconds):
                    await self._following.wait()
        return self.following

    @property
    def subscribers(self) -> int:
        return self._count

    def subscribe(self, listing: Listing) -> Subscription:
        if self._count >= self.max_subscribers:
            raise TooManySubscribers(
                f"this server holds {self.max_subscribers} subscriptions, as many as it may"
            )
        subscription = Subscription(listing, self.queue_size)
        self._by_product.setdefault(listing.product_id, set()).add(subscription)
        self._count += 1
        return subscription

    def unsubscribe(self, subscription: Subscription) -> None:
        watching = self._by_product.get(subscription.listing.product_id)
        if watching is None or subscription not in watching:
            return
        watching.discard(subscription)
        self._count -= 1
        if not watching:
            del self._by_product[subscription.listing.product_id]

    def interrupt(self, code: str, message: str) -> None:
        """End every subscription (their clients reload) and drop the snapshot."""
        self.table.memory(PlanMemory).forget()
        for watching in self._by_product.values():
            for subscription in watching:
                subscription.end(Ended(code, message))

    async def deliver(self, changes: Sequence[Change]) -> None:
        """Hand one batch of the stream's changes out."""
        fresh: list[RatingCounts] = []
        events: list[CommentChange] = []
        for change in changes:
            counts = fresh_counts(change)
            if counts is not None:
                fresh.append(counts)
                continue
            event = comment_change(change)
            if event is not None and event.product_id in self._by_product:
                events.append(event)
        if fresh:
            self.table.memory(PlanMemory).refresh_counts(fresh)
        if events:
            await self._hand_out(events)
        written = [c.written_at for c in changes if c.written_at is not None]
        # A poll that found nothing has caught up.
        self.lag_seconds = max(0.0, time.time() - max(written)) if written else 0.0

    async def _hand_out(self, events: list[CommentChange]) -> None:
        # The subscribers the batch is for are those registered when it is handed out: one
        # that subscribes while the counters are read came after these changes (and its
        # language's counters are not being read).
        watching = {e.product_id: list(self._by_product.get(e.product_id, ())) for e in events}
        scopes: dict[StatsScope, None] = {}
        for product_id, subscriptions in watching.items():
            scopes[(product_id, None)] = None
            for subscription in subscriptions:
                if subscription.listing.language is not None:
                    scopes[(product_id, subscription.listing.language)] = None
        for subscriptions in watching.values():
            for subscription in subscriptions:
                subscription.check_pace()
        counts = await self._read_counts(list(scopes))
        if counts is None:
            for subscriptions in watching.values():
                for subscription in subscriptions:
                    subscription.end(
                        Ended(
                            "STORAGE_UNAVAILABLE",
                            "The counters that go with the next event could not be read; "
                            "subscribe again and reload.",
                        )
                    )
            return
        for event in events:
            for subscription in watching[event.product_id]:
                listing = subscription.listing
                kind = classify(event, listing)
                if kind is None:
                    continue
                language = None
                if listing.language is not None:
                    language = counts[(event.product_id, listing.language)]
                subscription.put(Delivery(kind, event, counts[(event.product_id, None)], language))

    async def _read_counts(self, scopes: list[StatsScope]) -> dict[StatsScope, RatingCounts] | None:
        for attempt in range(COUNTS_ATTEMPTS):
            try:
                read = await batch_get_counts(self.table, scopes)
            except StorageError as exc:
                log.warning("reading counters for events failed (%s)", type(exc).__name__)
                await asyncio.sleep(0.1 * 2**attempt)
                continue
            return {(c.product_id, c.language): c for c in read}
        return None

    async def follow(
        self,
        batches: Batches,
        *,
        retry_seconds: float = 1.0,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
        on_batch: Callable[[int], None] = lambda changes: None,
        on_failure: Callable[[], None] = lambda: None,
    ) -> None:
        """Deliver the stream's batches for as long as the process runs; ``on_batch`` is
        told how many changes each had once it is delivered. When the follower fails
        (``on_failure``) it is started again from the latest position, after everyone was
        told that events may have been lost."""
        while True:
            try:
                async for batch in batches():
                    # The follower has taken its position once it gives a first batch:
                    # from then on, nothing written is missed.
                    self._following.set()
                    await self.deliver(batch)
                    on_batch(len(batch))
            except asyncio.CancelledError:
                self._following.clear()
                raise
            except Exception as exc:  # the follower's own failure, whatever it is
                self._following.clear()
                on_failure()
                log.warning(
                    "following the table's stream failed (%s); starting again from its "
                    "latest position",
                    type(exc).__name__,
                )
                self.interrupt(
                    "EVENTS_LOST",
                    "The server lost its place in the table's changes; subscribe again and reload.",
                )
                await sleep(retry_seconds)
