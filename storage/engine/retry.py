"""Concurrency and retry helpers shared by reads and writes.

botocore retries throttling and 5xx on single calls (standard mode) but never retries a
cancelled transaction or unprocessed batch keys; ``Backoff`` is our own bounded, jittered
schedule for those.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Coroutine
from dataclasses import dataclass
from typing import Any, TypeVar

from storage.base.errors import StorageError

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class Backoff:
    """Bounded exponential backoff with full jitter."""

    attempts: int = 8
    base: float = 0.01
    cap: float = 0.5

    def delay(self, attempt: int, rng: random.Random | None = None) -> float:
        """Seconds to wait after failed attempt number ``attempt`` (1-based)."""
        ceiling = min(self.cap, self.base * 2 ** (attempt - 1))
        return (rng or random).uniform(0, ceiling)

    async def sleep(self, attempt: int) -> None:
        await asyncio.sleep(self.delay(attempt))


DEFAULT_BACKOFF = Backoff()


async def gather_reads(calls: list[Coroutine[Any, Any, T]]) -> list[T]:
    """Run reads concurrently; the first storage error fails all of them (the others are
    cancelled), raised as itself rather than as a group."""
    if len(calls) == 1:
        return [await calls[0]]
    tasks: list[asyncio.Task[T]] = []
    try:
        async with asyncio.TaskGroup() as group:
            tasks.extend(group.create_task(c) for c in calls)
    except BaseExceptionGroup as group_error:
        own = [e for e in group_error.exceptions if isinstance(e, StorageError)]
        if own:
            raise own[0] from group_error
        raise
    return [t.result() for t in tasks]
