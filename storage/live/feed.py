"""One process's feed of the table's stream: comment events to its subscribers, fresh
counters to its snapshot.

Each process is handed every change of the table: by following the stream itself
(``storage.live.stream``), or, with a broker, from the shard's one claimed reader through
it (``storage.live.fanout``); so a write through any process reaches the subscribers of
every process, and each keeps its own snapshot of the counters
(``storage.reads.snapshots``) current without reading them.

For each batch of changes:

1. every stats item's new counters refresh the process's snapshot, for the scopes it keeps
   (the stream carries the whole table's changes; taking them all in would push out the
   scopes this process's pages use);
2. every comment change is classified for each subscriber of its product, and of the
   groups it counted in before and counts in after (``storage.live.events.classify``: what
   that subscriber's listing shows before and after, so a group move enters or leaves a
   group's listing);
3. the counters of the products and groups of the listings that have events, and of each
   distinct facet listing with events whose count they give, are read once for the batch
   (after the changes were written, so they count them) and handed out with the events:
   the reads grow with the distinct listings that have events, never with their
   subscribers (the distinct listings on one product or group are bounded by its budget,
   server.http.event_groups); a batch nobody is handed an event of reads nothing.

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
from storage.model import rules
from storage.model.comments import RatingCounts
from storage.model.facet_counts import FacetCounts, FacetListingCounts
from storage.model.stats import StatsScope
from storage.reads.facet_reader import facet_listing_counts, group_listing_counts
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
    """One event for one subscriber: what happened, and the counters after it of the
    product or group watched (all languages, and the subscriber's language when it watches
    one), with the listing's exact count (None: not kept by counters, a listing of several
    facet values)."""

    kind: EventKind
    change: CommentChange
    counts: RatingCounts
    language_counts: RatingCounts | None
    total: int | None = None


def counted_from_facets(listing: Listing) -> bool:
    """Whether the listing's count takes facet counter items beyond its scope's stats: one
    facet value, or a product's listing leaving incentivized reviews out (a group's
    listing counter item counts those itself). With several values no counter says how
    many comments have them all."""
    if len(listing.facets) == 1:
        return True
    return not listing.facets and listing.exclude_incentivized and not listing.of_group


@dataclass(frozen=True, slots=True)
class _Counters:
    """What one batch's reads of the counters found (``Feed._read_counts``)."""

    products: dict[StatsScope, RatingCounts]
    groups: dict[str, FacetCounts]
    listings: dict[Listing, FacetListingCounts]

    def delivery(self, kind: EventKind, change: CommentChange, listing: Listing) -> Delivery:
        lang = listing.language
        if listing.of_group:
            group = self.groups[listing.product_id]
            everything = group.as_rating_counts(listing.product_id, None)
            language = None if lang is None else group.as_rating_counts(listing.product_id, lang)
        else:
            everything = self.products[(listing.product_id, None)]
            language = None if lang is None else self.products[(listing.product_id, lang)]
        return Delivery(kind, change, everything, language, self._total(listing, language))

    def _total(self, listing: Listing, language: RatingCounts | None) -> int | None:
        if len(listing.facets) > 1:
            return None
        faceted = self.listings.get(listing)
        if faceted is not None:
            return faceted.total(listing.as_filter())
        if listing.of_group:
            held = self.groups[listing.product_id].matching(
                listing.language,
                verified_only=listing.verified_only,
                exclude_incentivized=listing.exclude_incentivized,
            )
            asked = listing.ratings or frozenset(rules.RATINGS)
            return sum(n for r, n in zip(rules.RATINGS, held, strict=True) if r in asked)
        own = language or self.products[(listing.product_id, None)]
        if listing.verified_only:
            own = own.only_verified()
        return own.matching(listing.ratings)


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
    # Subscriptions by what they watch (``Listing.watch_key``: a product, or a group).
    _by_watch: dict[str, set[Subscription]] = field(default_factory=dict)
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
        self._by_watch.setdefault(listing.watch_key, set()).add(subscription)
        self._count += 1
        return subscription

    def unsubscribe(self, subscription: Subscription) -> None:
        key = subscription.listing.watch_key
        watching = self._by_watch.get(key)
        if watching is None or subscription not in watching:
            return
        watching.discard(subscription)
        self._count -= 1
        if not watching:
            del self._by_watch[key]

    def interrupt(self, code: str, message: str) -> None:
        """End every subscription (their clients reload) and drop the snapshot."""
        self.table.memory(PlanMemory).forget()
        for watching in self._by_watch.values():
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
            if event is not None and not event.watched.isdisjoint(self._by_watch):
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
        # counters are not being read).
        watching = {
            key: list(self._by_watch[key])
            for event in events
            for key in event.watched
            if key in self._by_watch
        }
        for subscriptions in watching.values():
            for subscription in subscriptions:
                subscription.check_pace()
        # What each subscriber is handed, classified first: counters are read only for
        # the listings something happened to (a comment no facet listing shows reads none).
        handed: list[tuple[Subscription, EventKind, CommentChange]] = []
        for event in events:
            # A subscription watches one key, so it meets each event once.
            for key in event.watched:
                for subscription in watching.get(key, ()):
                    kind = classify(event, subscription.listing)
                    if kind is not None:
                        handed.append((subscription, kind, event))
        if not handed:
            return
        counters = await self._read_counts({s.listing for s, _, _ in handed})
        if counters is None:
            for subscription in {s for s, _, _ in handed}:
                subscription.end(
                    Ended(
                        "STORAGE_UNAVAILABLE",
                        "The counters that go with the next event could not be read; "
                        "subscribe again and reload.",
                    )
                )
            return
        for subscription, kind, event in handed:
            subscription.put(counters.delivery(kind, event, subscription.listing))

    async def _read_counts(self, listings: set[Listing]) -> _Counters | None:
        """The counters of a batch's listings, each item read once for all of them: the
        products' stats items (all languages and each language watched), the groups'
        listing counter items, and the facet counters of each distinct listing whose
        ``totalCount`` they give (``counted_from_facets``)."""
        scopes: dict[StatsScope, None] = {}
        groups: dict[str, None] = {}
        faceted = [listing for listing in listings if counted_from_facets(listing)]
        for listing in listings:
            if listing.of_group:
                groups[listing.product_id] = None
                continue
            scopes[(listing.product_id, None)] = None
            if listing.language is not None:
                scopes[(listing.product_id, listing.language)] = None
        for attempt in range(COUNTS_ATTEMPTS):
            try:
                read = await batch_get_counts(self.table, list(scopes)) if scopes else []
                by_group = await group_listing_counts(self.table, list(groups)) if groups else {}
                by_listing = await asyncio.gather(
                    *(facet_listing_counts(self.table, f.as_filter()) for f in faceted)
                )
            except StorageError as exc:
                log.warning("reading counters for events failed (%s)", type(exc).__name__)
                await asyncio.sleep(0.1 * 2**attempt)
                continue
            return _Counters(
                {(c.product_id, c.language): c for c in read},
                by_group,
                dict(zip(faceted, by_listing, strict=True)),
            )
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
