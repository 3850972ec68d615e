"""Background tasks of a process (the stream's follower, the fan-out's reader, the webhook
worker, the purgers): what they wait for before they start, and how they end with it."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from contextlib import suppress
from typing import Any

from storage.base.errors import StorageError
from storage.engine.table import TableRef
from storage.live.stream import stream_arn

log = logging.getLogger("comments.live")

# Seconds between looks for a stream a table does not have yet (migrate-table may turn it on).
STREAM_RECHECK_SECONDS = 60.0


async def stream_when_on(table: TableRef, who: str, missing: str) -> str:
    """The table's stream, once it has one: looked for again every minute, its absence said
    once (``missing``), a failed look each time, each line opened with ``who``."""
    warned = False
    while True:
        try:
            arn = await stream_arn(table)
        except StorageError as exc:
            log.warning("%s: describing the table failed (%s)", who, type(exc).__name__)
        else:
            if arn is not None:
                return arn
            if not warned:
                log.warning("%s: %s", who, missing)
                warned = True
        await asyncio.sleep(STREAM_RECHECK_SECONDS)


async def cancel_and_wait(tasks: Sequence[asyncio.Task[Any]]) -> None:
    """Cancel every one, then wait for each to end: the ``CancelledError`` each ends with is
    its own ending, not a failure of the caller's."""
    for task in tasks:
        task.cancel()
    for task in tasks:
        with suppress(asyncio.CancelledError):
            await task
