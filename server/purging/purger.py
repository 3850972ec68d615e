"""One cache's purges, sent as the table's changes arrive, retried until they land.

``changed`` queues the tags of a change, with ``all`` (the tag of answers that read more
than their tags could name, server.http.cache_tags), and wakes the sender; ``lost`` (a gap
in the stream, a shard taken over from a process that died with purges unsent) queues
everything. What waits is a set, so a burst of changes to one product is one purge.

Each purge is sent again ``repeat_seconds`` later: a cache asked for an answer between the
purge and the moment every process has applied the change (the fan-out takes
milliseconds) or every index has it (DynamoDB's global secondary indexes follow the table
within about a second) would otherwise keep the stale answer it got for as long as its
s-maxage. The repeat bounds that to ``repeat_seconds``.

Bounded: at most ``max_tags`` tags wait, to be sent or repeated; past that they become
"everything", which is one request and drops more, never less. A purge that fails is
kept and tried again with backoff (full jitter), so a cache that is down is purged of
everything that changed meanwhile once it answers; what it serves meanwhile is its own. A
CDN that refuses for its rate limit and says when to come back (``Retry-After``) is left
alone that long at least (within ``retry_after_max_seconds``): sooner would be refused too.
"""

from __future__ import annotations

import asyncio
import logging
import random
from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Protocol

import httpx

from resolvers.read_set import ALL
from server.observability import metrics
from server.purging.targets import PurgeFailed

log = logging.getLogger("comments.purge")

# Repeats due within this many seconds of each other are sent together.
REPEAT_BUCKET_SECONDS = 0.1
# Failures logged: the first, then one in this many, then the recovery.
LOG_EVERY = 20


class Target(Protocol):
    @property
    def name(self) -> str: ...

    async def purge(self, client: httpx.AsyncClient, tags: Iterable[str]) -> None: ...

    async def purge_everything(self, client: httpx.AsyncClient) -> None: ...


@dataclass(frozen=True)
class PurgeTuning:
    repeat_seconds: float = 1.0
    timeout_seconds: float = 5.0
    retry_base_seconds: float = 0.2
    retry_max_seconds: float = 10.0
    retry_after_max_seconds: float = 60.0
    max_tags: int = 10_000


@dataclass(slots=True)
class _Batch:
    """Tags to purge, or everything (``tags`` then empty)."""

    everything: bool = False
    tags: set[str] = field(default_factory=set)

    def add(self, tags: Iterable[str], max_tags: int) -> None:
        if self.everything:
            return
        self.tags.update(tags)
        if len(self.tags) > max_tags:
            self.all_of_it()

    def all_of_it(self) -> None:
        self.everything = True
        self.tags.clear()

    def merge(self, other: _Batch, max_tags: int) -> None:
        if other.everything:
            self.all_of_it()
        else:
            self.add(other.tags, max_tags)

    def __bool__(self) -> bool:
        return self.everything or bool(self.tags)

    def __len__(self) -> int:
        return len(self.tags)


class Purger:
    """The purges of one cache (``target``); ``run`` sends them until cancelled."""

    def __init__(self, target: Target, tuning: PurgeTuning | None = None) -> None:
        self.target = target
        self.tuning = tuning or PurgeTuning()
        self._waiting = _Batch()
        self._repeats: deque[tuple[float, _Batch]] = deque()
        self._wake = asyncio.Event()
        self.sent = 0  # purges confirmed (requests), for tests and metrics
        self.failures = 0  # failed attempts in a row

    def changed(self, tags: Iterable[str]) -> None:
        """Queue the tags of one change (nothing when it changed nothing an answer reads)."""
        named = set(tags)
        if not named:
            return
        named.add(ALL)
        self._waiting.add(named, self.tuning.max_tags)
        self._wake.set()

    def lost(self) -> None:
        """Queue everything: changes went by that no tag list covers."""
        self._waiting.all_of_it()
        self._wake.set()

    @property
    def pending(self) -> int:
        """Tags waiting to be sent or repeated (everything counts as ``max_tags``)."""
        batches = [self._waiting, *(b for _, b in self._repeats)]
        return sum(self.tuning.max_tags if b.everything else len(b) for b in batches)

    async def run(self) -> None:
        timeout = httpx.Timeout(self.tuning.timeout_seconds)
        async with httpx.AsyncClient(timeout=timeout, trust_env=False) as client:
            while True:
                await self._until_due()
                await self.send_due(client)

    async def send_due(self, client: httpx.AsyncClient) -> bool:
        """Send what is due (waiting, and repeats whose time came); False when it failed
        (then kept, and the next attempt waits its backoff)."""
        loop = asyncio.get_running_loop()
        first, self._waiting = self._waiting, _Batch()
        batch = _Batch()
        batch.merge(first, self.tuning.max_tags)
        while self._repeats and self._repeats[0][0] <= loop.time():
            batch.merge(self._repeats.popleft()[1], self.tuning.max_tags)
        if not batch:
            return True
        try:
            await self._send(client, batch)
        except Exception as exc:
            failure = exc if isinstance(exc, PurgeFailed) else self._fault(exc)
            self._failed(batch, failure)
            await asyncio.sleep(self._backoff(failure.retry_after))
            return False
        if self.failures:
            log.warning(
                "purges reach %s again, after %d failed attempts", self.target.name, self.failures
            )
        self.failures = 0
        self.sent += 1
        metrics.purges("sent")
        if first and self.tuning.repeat_seconds > 0:
            self._repeat(first, loop.time() + self.tuning.repeat_seconds)
        self._gauge()
        return True

    async def flush(self) -> bool:
        """Send what waits now, once (at shutdown); False when something stays unsent."""
        timeout = httpx.Timeout(self.tuning.timeout_seconds)
        async with httpx.AsyncClient(timeout=timeout, trust_env=False) as client:
            first, self._waiting = self._waiting, _Batch()
            if not first:
                return True
            try:
                await self._send(client, first)
            except Exception as exc:
                if not isinstance(exc, PurgeFailed):
                    exc = self._fault(exc)
                log.warning(
                    "purge: %s unsent at shutdown (%s); that cache may serve answers "
                    "changed since until they expire",
                    "everything" if first.everything else f"{len(first)} tags",
                    exc,
                )
                return False
            return True

    def _fault(self, exc: Exception) -> PurgeFailed:
        """A fault of ours (a bug, an error no target turned into a failure): logged whole,
        and the purge kept as for any failure, so that purging never stops for good."""
        log.error("purge of %s: unexpected %s", self.target.name, type(exc).__name__, exc_info=exc)
        return PurgeFailed(f"{self.target.name}: {type(exc).__name__}")

    async def _send(self, client: httpx.AsyncClient, batch: _Batch) -> None:
        if batch.everything:
            await self.target.purge_everything(client)
        else:
            await self.target.purge(client, batch.tags)

    def _failed(self, batch: _Batch, exc: PurgeFailed) -> None:
        self.failures += 1
        metrics.purges("failed")
        if self.failures == 1 or self.failures % LOG_EVERY == 0:
            log.warning("purge failed (%s), attempt %d; kept and tried again", exc, self.failures)
        # Kept ahead of what came meanwhile; the repeats it held are repeated with it.
        batch.merge(self._waiting, self.tuning.max_tags)
        self._waiting = batch
        self._gauge()

    def _backoff(self, asked: float | None = None) -> float:
        """Seconds to wait before the next attempt: full jitter under the doubling ceiling,
        and at least what the cache ``asked`` (bounded: a Retry-After of a day is a fault,
        and the purges would wait all that time)."""
        ceiling = min(
            self.tuning.retry_max_seconds,
            self.tuning.retry_base_seconds * 2 ** min(self.failures - 1, 30),
        )
        wait = random.uniform(0, ceiling)
        if asked is None:
            return wait
        return max(wait, min(asked, self.tuning.retry_after_max_seconds))

    def _repeat(self, batch: _Batch, due: float) -> None:
        if self._repeats and due - self._repeats[-1][0] <= REPEAT_BUCKET_SECONDS:
            self._repeats[-1][1].merge(batch, self.tuning.max_tags)
        else:
            self._repeats.append((due, batch))
        if self.pending > self.tuning.max_tags:
            # Too much to remember: one repeat of everything, at the latest time asked.
            self._repeats = deque([(due, _Batch(everything=True))])

    def _gauge(self) -> None:
        metrics.purge_pending(self.target.name, self.pending)

    async def _until_due(self) -> None:
        loop = asyncio.get_running_loop()
        if self._waiting:
            return
        timeout = None
        if self._repeats:
            timeout = max(0.0, self._repeats[0][0] - loop.time())
        self._wake.clear()
        try:
            await asyncio.wait_for(self._wake.wait(), timeout)
        except TimeoutError:
            return
