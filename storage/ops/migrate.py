"""Bring an existing table up to the layout of ``storage.model.indexes``: add the indexes it lacks,
turn its stream on, then give old comments the helpful order's key (``storage.ops.backfill``).

A table made by the first ``create-table`` has the four listing indexes only, one made by
the next the eight without the helpful twins. No item has to be rewritten for the others:
``byAuthor`` is keyed by the ``author`` attribute every comment already has (DynamoDB
backfills it from the existing items), and the keys of
``verifiedByRating``, ``verifiedByLangAndRating`` and ``moderationQueue`` exist only on
comments written since (verified purchases, PENDING comments), which an older table cannot
hold. DynamoDB builds one index per UpdateTable, so they are added one after another, each
waited for until ACTIVE, for at most ``wait_seconds`` each. Running it again after an
interruption or a wait given up picks up where it stopped (an index already being built is
waited for).

A table made before the stream was part of the layout gets it (new and old images). One
whose stream shows other images is left alone with an error: changing the view means
turning the stream off, which ends it and the 24 hours of changes it holds, and that is
for its operator to decide.

The helpful twins (the most helpful order) are the exception: their sort key HSK is on
comments written since, so the comments already there get it from a backfill, which runs
once the indexes are built and resumes where it stopped as well.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass

from storage.base.errors import StorageUnavailable
from storage.engine.table import TableRef
from storage.model.indexes import STREAM_SPECIFICATION, Index, index_attributes, index_definition
from storage.ops.backfill import Backfill, backfill_helpful_keys

Progress = Callable[[str], None]


@dataclass(frozen=True, slots=True)
class Migration:
    added: tuple[str, ...]  # indexes this run created
    present: tuple[str, ...]  # indexes that were there already
    backfill: Backfill | None = None
    stream_enabled: bool = False  # this run turned the stream on


async def missing_indexes(table: TableRef) -> list[Index]:
    """The indexes of the layout the table does not have (being built counts as having)."""
    described = (await table.client.describe_table(TableName=table.name))["Table"]
    have = {g["IndexName"] for g in described.get("GlobalSecondaryIndexes", [])}
    return [i for i in Index if i.value not in have]


async def migrate(
    table: TableRef,
    *,
    progress: Progress | None = None,
    wait_seconds: float = 3600,
    poll_seconds: float = 0.5,
    backfill: bool = True,
) -> Migration:
    """Add every missing index, one at a time, and wait until all are ACTIVE.

    Each wait (for an index, or for one found building) gives up after ``wait_seconds`` with
    StorageUnavailable naming what is still being built; TableMissing if there is no table.
    """
    say = progress or (lambda _: None)
    missing = await missing_indexes(table)
    present = tuple(i.value for i in Index if i not in missing)
    await _wait_active(table, say, wait_seconds, poll_seconds)  # one left building earlier
    for n, index in enumerate(missing, 1):
        say(f"[{n}/{len(missing)}] adding index {index.value}")
        await table.client.update_table(
            TableName=table.name,
            # Only the new index's keys: UpdateTable takes the definitions it uses.
            AttributeDefinitions=index_attributes(index),
            GlobalSecondaryIndexUpdates=[{"Create": index_definition(index)}],
        )
        await _wait_active(table, say, wait_seconds, poll_seconds)
        say(f"[{n}/{len(missing)}] index {index.value} is ACTIVE")
    streamed = await _enable_stream(table, say)
    if streamed:
        await _wait_active(table, say, wait_seconds, poll_seconds)
    filled = await backfill_helpful_keys(table, progress=say) if backfill else None
    return Migration(tuple(i.value for i in missing), present, filled, streamed)


async def _enable_stream(table: TableRef, say: Progress) -> bool:
    """Turn the table's stream on (new and old images) if it is off; True if this did."""
    described = (await table.client.describe_table(TableName=table.name))["Table"]
    spec = described.get("StreamSpecification") or {}
    if spec.get("StreamEnabled"):
        view = spec.get("StreamViewType")
        if view != STREAM_SPECIFICATION["StreamViewType"]:
            raise StorageUnavailable(
                f"table {table.name!r} streams {view}, not "
                f"{STREAM_SPECIFICATION['StreamViewType']}: turn its stream off and run "
                "migrate-table again (turning it off ends the stream and its changes)"
            )
        return False
    say("turning the table's stream on (new and old images)")
    await table.client.update_table(
        TableName=table.name, StreamSpecification=dict(STREAM_SPECIFICATION)
    )
    return True


async def _wait_active(
    table: TableRef, say: Progress, wait_seconds: float, poll_seconds: float
) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + wait_seconds
    reported: set[str] = set()
    while True:
        described = (await table.client.describe_table(TableName=table.name))["Table"]
        building = [
            g["IndexName"]
            for g in described.get("GlobalSecondaryIndexes", [])
            if g.get("IndexStatus") != "ACTIVE" or g.get("Backfilling")
        ]
        if described.get("TableStatus") == "ACTIVE" and not building:
            return
        for name in set(building) - reported:
            say(f"waiting for index {name} to be built")
            reported.add(name)
        if loop.time() > deadline:
            waiting_for = ", ".join(sorted(building)) or "the table itself"
            raise StorageUnavailable(
                f"table {table.name!r}: {waiting_for} still not ACTIVE after {wait_seconds:g} s; "
                "DynamoDB goes on building it, and migrate-table run again waits for it and "
                "adds the rest"
            )
        await asyncio.sleep(poll_seconds)
