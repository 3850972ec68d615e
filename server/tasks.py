"""Background tasks of a process (the fan-out's reader, the webhook worker, the purgers):
how they end with it."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from contextlib import suppress
from typing import Any


async def cancel_and_wait(tasks: Sequence[asyncio.Task[Any]]) -> None:
    """Cancel every one, then wait for each to end: the ``CancelledError`` each ends with is
    its own ending, not a failure of the caller's."""
    for task in tasks:
        task.cancel()
    for task in tasks:
        with suppress(asyncio.CancelledError):
            await task
