"""Per-key lanes of waiting work, each served by one task at a time (group commit).

What joins a lane while its task is busy waits there, and the task takes it all in its
next round, so writes of one process to one hot item go in one request at a time instead
of racing each other. Each waiting entry belongs to a request that is waiting for it, so
a lane holds no more than the requests in flight (which the server bounds), and a lane
with nothing waiting and no task is dropped.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine
from typing import Any, Generic, TypeVar

T = TypeVar("T")


class Lane(Generic[T]):
    """Entries waiting for their turn on one key, oldest first."""

    def __init__(self) -> None:
        self.waiting: list[T] = []
        self.worker: asyncio.Task[None] | None = None


Serve = Callable[["Lane[T]"], Coroutine[Any, Any, None]]


class Lanes(Generic[T]):
    """One lane per key with work waiting or under way."""

    def __init__(self) -> None:
        self._lanes: dict[str, Lane[T]] = {}

    def join(self, key: str, entry: T, serve: Serve[T]) -> None:
        """Queue ``entry`` on ``key``'s lane; start ``serve`` on the lane unless a task
        serves it already. ``serve`` must take entries until none waits: it runs in a task
        of its own (no request's cancellation stops it) and returns only then."""
        lane = self._lanes.get(key)
        if lane is None:
            lane = self._lanes[key] = Lane()
        lane.waiting.append(entry)
        if lane.worker is None:
            lane.worker = asyncio.create_task(self._serve(key, lane, serve))

    def leave(self, key: str, entry: T) -> bool:
        """Take back an entry that is still waiting (its request gave up); False when its
        turn has come already."""
        lane = self._lanes.get(key)
        if lane is None or entry not in lane.waiting:
            return False
        lane.waiting.remove(entry)
        return True

    async def _serve(self, key: str, lane: Lane[T], serve: Serve[T]) -> None:
        try:
            await serve(lane)
        finally:
            lane.worker = None
            if lane.waiting:  # only when serve failed: start again for those left
                lane.worker = asyncio.create_task(self._serve(key, lane, serve))
            elif self._lanes.get(key) is lane:
                del self._lanes[key]

    async def drain(self) -> None:
        """Wait until every lane's task has finished (at shutdown, in tests)."""
        while workers := [lane.worker for lane in self._lanes.values() if lane.worker]:
            await asyncio.wait(workers)

    def __len__(self) -> int:
        return len(self._lanes)
