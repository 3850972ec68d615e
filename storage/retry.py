"""Concurrency and retry helpers shared by reads and writes.

botocore retries throttling and 5xx on single calls (standard mode) but never retries a
cancelled transaction; ``Backoff`` is our own bounded, jittered schedule for those.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Coroutine
from dataclasses import dataclass
from typing import Any, TypeVar

from botocore.exceptions import BotoCoreError, ClientError

from storage.errors import StorageError, StorageUnavailable

T = TypeVar("T")

# Error codes that mean "slow down and try again", on single calls and inside
# a transaction's CancellationReasons.
THROTTLING_CODES = frozenset(
    {
        "ThrottlingException",
        "ThrottlingError",
        "ProvisionedThroughputExceeded",
        "ProvisionedThroughputExceededException",
        "RequestLimitExceeded",
        "InternalServerError",
        "ServiceUnavailable",
    }
)

ENGINE_ERRORS = (ClientError, BotoCoreError, OSError, TimeoutError)


def error_code(exc: BaseException) -> str:
    if isinstance(exc, ClientError):
        return str(exc.response.get("Error", {}).get("Code", ""))
    return ""


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


async def gather_reads(calls: list[Coroutine[Any, Any, T]], *, what: str) -> list[T]:
    """Run reads concurrently; any engine failure fails all of them as StorageUnavailable."""
    if len(calls) == 1:
        try:
            return [await calls[0]]
        except ENGINE_ERRORS as exc:
            raise StorageUnavailable(f"{what} failed") from exc
    tasks: list[asyncio.Task[T]] = []
    try:
        async with asyncio.TaskGroup() as group:
            tasks.extend(group.create_task(c) for c in calls)
    except BaseExceptionGroup as group_error:
        errors = group_error.exceptions
        own = [e for e in errors if isinstance(e, StorageError)]
        if own:
            raise own[0] from group_error
        if all(isinstance(e, ENGINE_ERRORS) for e in errors):
            raise StorageUnavailable(f"{what} failed") from errors[0]
        raise
    return [t.result() for t in tasks]
