"""The process's own map of public answers: an anonymous query over GET asked again is
answered from memory, without executing it, until something it read changes.

Keyed by what the answer depends on (``AnswerKey``: the document, the operation's name,
the variables in canonical JSON, the extensions, the negotiated media type); the bytes are
those the view made, before compression and the ETag, which the middleware outside it add
per request as for any answer. Each entry keeps the answer's cache tags
(resolvers.read_set), and any event source tells the map what changed in the same tags
(``changed``, server.http.answer_changes reads them off the table's stream) or that it
lost track (``lost``).

Exactness: an answer is never served after this process has seen a change of something
it read. So
- ``changed`` drops every entry with one of the tags (every entry for ``all``, and the
  entries tagged ``all`` on any change);
- an answer whose execution overlapped a change of one of its tags is not stored: its
  execution takes the map's version when it starts (``start``), and ``store`` compares it
  with the version at which each tag last changed (``_changed_at``, bounded: when it
  grows past ``MAX_TRACKED`` tags it is forgotten and everything counts as changed then);
- ``lost`` (a gap in the stream, a follower starting again) empties the map and stops it
  until the stream is followed again (``following``): without a follower nothing would
  drop an entry, so a process that does not follow the stream never serves from it.

Bounded in bytes: an entry is charged its key, body, headers and tags; the least recently
used are evicted first. Misses do not stampede: concurrent misses of one key in a process
wait for one execution (``flight``), within a bound, and execute themselves when it fails
or they tire of waiting.
"""

from __future__ import annotations

import asyncio
import hashlib
from collections import OrderedDict
from collections.abc import Iterable
from contextlib import suppress
from dataclasses import dataclass

import orjson

from resolvers.read_set import ALL

# Tags whose last change is remembered, for stores of executions still running.
MAX_TRACKED = 10_000
# What an entry costs besides its bytes (the dict slots, the objects).
ENTRY_OVERHEAD = 200


@dataclass(frozen=True, slots=True)
class AnswerKey:
    digest: bytes  # SHA-256 of everything the answer depends on

    @classmethod
    def of(
        cls,
        query: str | None,
        operation_name: str | None,
        variables: str | None,
        extensions: str | None,
        media_type: str,
    ) -> AnswerKey | None:
        """The key of a GET's answer; None when its JSON parameters do not parse (the
        request is an error, never kept)."""
        try:
            canonical = [
                None if raw is None else orjson.loads(raw) for raw in (variables, extensions)
            ]
            parts = orjson.dumps(
                [query, operation_name, *canonical, media_type], option=orjson.OPT_SORT_KEYS
            )
        except (orjson.JSONDecodeError, TypeError):
            return None
        return cls(hashlib.sha256(parts).digest())


@dataclass(frozen=True, slots=True)
class Answer:
    body: bytes
    headers: tuple[tuple[str, str], ...]
    tags: frozenset[str]
    # The operation that made it, as its execution named it: an answer served from the map
    # is counted under it in the metrics and the request log, as an executed one is.
    operation: str | None = None

    def size(self) -> int:
        headers = sum(len(k) + len(v) for k, v in self.headers)
        tags = sum(len(t) for t in self.tags)
        return 32 + len(self.body) + headers + tags + len(self.operation or "") + ENTRY_OVERHEAD


class AnswerCache:
    """See the module's doc. ``max_bytes`` 0: off (nothing kept, nothing served)."""

    def __init__(self, max_bytes: int, wait_seconds: float = 5.0) -> None:
        self.max_bytes = max_bytes
        self.wait_seconds = wait_seconds
        self._entries: OrderedDict[AnswerKey, Answer] = OrderedDict()
        self._by_tag: dict[str, set[AnswerKey]] = {}
        self._flights: dict[AnswerKey, asyncio.Future[None]] = {}
        self._version = 0
        self._floor = 0
        self._changed_at: dict[str, int] = {}
        self._following = False
        self.bytes = 0
        self.hits = 0
        self.misses = 0
        self.evictions = 0
        self.invalidations = 0
        self.not_stored = 0

    @property
    def on(self) -> bool:
        return self.max_bytes > 0

    @property
    def serving(self) -> bool:
        return self.on and self._following

    def __len__(self) -> int:
        return len(self._entries)

    # Events: any source of "something changed" calls these.

    def following(self) -> None:
        """The stream is followed: from now on every change reaches ``changed``."""
        self._following = True

    def changed(self, tags: Iterable[str]) -> None:
        """Something named by ``tags`` changed: drop what read it."""
        tags = set(tags)
        if not tags:
            return
        self._version += 1
        if ALL in tags:
            self._forget(self._version)
            return
        if len(self._changed_at) + len(tags) > MAX_TRACKED:
            self._changed_at.clear()
            self._floor = self._version
        for tag in tags:
            self._changed_at[tag] = self._version
        dropped: set[AnswerKey] = set()
        for tag in (*tags, ALL):
            dropped |= self._by_tag.get(tag, set())
        for key in dropped:
            self._drop(key)
        self.invalidations += len(dropped)

    def lost(self) -> None:
        """Changes may have been missed: empty the map, and serve nothing until the stream
        is followed again."""
        self._following = False
        self._version += 1
        self._forget(self._version)

    # Answers.

    def start(self) -> int:
        """The version an execution starts at (passed back to ``store``)."""
        return self._version

    def get(self, key: AnswerKey) -> Answer | None:
        """The answer kept for ``key``; counted, a hit or a miss."""
        if not self.serving:
            return None
        found = self._entries.get(key)
        if found is None:
            self.misses += 1
            return None
        self._entries.move_to_end(key)
        self.hits += 1
        return found

    async def find(self, key: AnswerKey) -> Answer | None:
        """The answer kept for ``key``, or the one another request of this process is
        making, waited for (at most ``wait_seconds``); None: execute. Counted once, when
        the wait is over: a request that waited and got an answer is a hit, not a miss
        and a hit."""
        if self.serving and key not in self._entries:
            await self._wait_for_flight(key)
        return self.get(key)

    def store(self, key: AnswerKey, answer: Answer, started: int) -> bool:
        """Keep ``answer``, made by an execution that started at version ``started``,
        unless something it read changed since then (or the map stopped)."""
        if not self.serving or not self._unchanged_since(answer.tags, started):
            self.not_stored += 1
            return False
        size = answer.size()
        if size > self.max_bytes // 8:  # one answer never takes much of the map
            self.not_stored += 1
            return False
        if key in self._entries:
            self._drop(key)
        while self._entries and self.bytes + size > self.max_bytes:
            oldest = next(iter(self._entries))
            self._drop(oldest)
            self.evictions += 1
        self._entries[key] = answer
        self.bytes += size
        for tag in answer.tags or {ALL}:
            self._by_tag.setdefault(tag, set()).add(key)
        return True

    def _unchanged_since(self, tags: frozenset[str], started: int) -> bool:
        if ALL in tags:
            return self._version == started
        if self._floor > started:
            return False
        return all(self._changed_at.get(tag, self._floor) <= started for tag in tags)

    def _drop(self, key: AnswerKey) -> None:
        answer = self._entries.pop(key, None)
        if answer is None:
            return
        self.bytes -= answer.size()
        for tag in answer.tags or {ALL}:
            keys = self._by_tag.get(tag)
            if keys is not None:
                keys.discard(key)
                if not keys:
                    del self._by_tag[tag]

    def _forget(self, version: int) -> None:
        self._entries.clear()
        self._by_tag.clear()
        self._changed_at.clear()
        self._floor = version
        self.bytes = 0

    # Single flight.

    async def _wait_for_flight(self, key: AnswerKey) -> None:
        """Wait for the request of this process executing ``key``, if there is one (at most
        ``wait_seconds``: it may fail, or take too long)."""
        flight = self._flights.get(key)
        if flight is not None:
            with suppress(TimeoutError):
                await asyncio.wait_for(asyncio.shield(flight), self.wait_seconds)

    def take_flight(self, key: AnswerKey) -> asyncio.Future[None] | None:
        """Lead the execution of ``key`` (None: another request leads it already)."""
        if key in self._flights:
            return None
        flight: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._flights[key] = flight
        return flight

    def land(self, key: AnswerKey, flight: asyncio.Future[None]) -> None:
        """The leader's execution ended, however it ended: release whoever waits."""
        if self._flights.get(key) is flight:
            del self._flights[key]
        if not flight.done():
            flight.set_result(None)
