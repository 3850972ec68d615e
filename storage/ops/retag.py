"""Re-tag every comment tagged with a taxonomy other than the stored one, so that topics,
their entries and their counters follow a taxonomy change.

Each comment whose tagging fingerprint is not the stored taxonomy's is re-tagged by one
transition (``storage.writes.transition.apply``): its topics recomputed from the comment as
read, its entries and counters moved in the same transaction, conditioned on its version.
So counts are exact at every moment of the run, whatever writers do meanwhile: an edit
that lands first makes the re-tag read again (and find the comment tagged already, when
the edit changed its text), and one that lands after conditions on the re-tag's version.

Converging: writes keep a compiled taxonomy per process (``storage.writes.tagging``) and
may tag with a replaced one for up to ``SETTLE_SECONDS`` after a save. The run waits that
long after the save (the taxonomy's head says when it was) before it scans, so no comment
tagged with an older taxonomy is written behind its scan; what it scans, it re-tags.

The scan keeps its place in a checkpoint item (``MIGRATION`` / ``RETAG``) after every page,
with the fingerprint it converges to: a run that stops resumes where it stopped, a run for
a newer taxonomy starts over, and a finished one costs one read. Two runs at once stay
exact (every re-tag is conditioned), only wasteful.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from storage.base.errors import CommentNotFound
from storage.base.expressions import get_request
from storage.base.types import Item
from storage.engine.retry import DEFAULT_BACKOFF, Backoff
from storage.engine.table import TableRef
from storage.model.items import is_comment_item, item_to_comment
from storage.model.topics import Tagger
from storage.writes.facet_settings import read_taxonomy, read_taxonomy_head
from storage.writes.state import Stored
from storage.writes.tagging import SETTLE_SECONDS, stale, tag
from storage.writes.transition import Change, apply

CHECKPOINT_KEY: Item = {"PK": {"S": "MIGRATION"}, "SK": {"S": "RETAG"}}
_FINGERPRINT = "fingerprint"
_POSITION = "position"  # the scan's LastEvaluatedKey, as JSON
_DONE = "done"
_SCANNED = "scanned"  # items scanned by every run for this fingerprint
_RETAGGED = "retagged"
_NONE = "-"  # the fingerprint of no taxonomy
PAGE_ITEMS = 200
CONCURRENCY = 8  # comments re-tagged at once

Progress = Callable[[str], None]


@dataclass(frozen=True, slots=True)
class Retag:
    """What a run did."""

    fingerprint: str | None  # the taxonomy's it converged to (None: no taxonomy)
    scanned: int  # items this run scanned
    retagged: int  # comments this run re-tagged
    raced: int  # stale when scanned, tagged by a write before their turn (or deleted)
    resumed: bool  # it continued a stopped run
    already_done: bool  # a finished earlier run for this taxonomy: nothing scanned
    seconds: float
    # Over every run for this taxonomy, this one included.
    scanned_in_all: int = 0
    retagged_in_all: int = 0

    def describe(self) -> str:
        if self.already_done:
            return "every comment is tagged with the stored taxonomy already"
        rate = self.scanned / max(self.seconds, 1e-9)
        return (
            f"re-tagged {self.retagged} comments ({self.raced} tagged meanwhile by writes), "
            f"{self.scanned} items scanned in {self.seconds:.1f} s ({rate:.0f} items/s)"
            + (" resuming a stopped run" if self.resumed else "")
            + f"; in all for this taxonomy: {self.retagged_in_all} re-tagged, "
            f"{self.scanned_in_all} scanned"
        )


async def retag_comments(
    table: TableRef,
    *,
    progress: Progress | None = None,
    page_items: int = PAGE_ITEMS,
    concurrency: int = CONCURRENCY,
    settle_seconds: float = SETTLE_SECONDS,
    backoff: Backoff = DEFAULT_BACKOFF,
    wall_clock: Callable[[], float] = time.time,
    sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
) -> Retag:
    """Re-tag every comment whose tagging is not the stored taxonomy's; resumable, exact
    throughout (see the module doc)."""
    say = progress or (lambda _: None)
    started = time.monotonic()
    tagger, saved_at = await _current(table)
    fingerprint = None if tagger is None else tagger.fingerprint
    checkpoint = await _read_checkpoint(table)
    same = checkpoint.get(_FINGERPRINT, {}).get("S") == (fingerprint or _NONE)
    if same and checkpoint.get(_DONE, {}).get("BOOL"):
        return Retag(fingerprint, 0, 0, 0, False, True, time.monotonic() - started)
    wait = saved_at + settle_seconds - wall_clock()
    if wait > 0:
        say(f"waiting {wait:.0f} s for every process to take the new taxonomy")
        await sleep(wait)
    start = checkpoint.get(_POSITION, {}).get("S") if same else None
    scanned_before = int(checkpoint.get(_SCANNED, {}).get("N", "0")) if same else 0
    retagged_before = int(checkpoint.get(_RETAGGED, {}).get("N", "0")) if same else 0
    params: dict[str, Any] = {"TableName": table.name, "Limit": page_items, "ConsistentRead": True}
    if start is not None:
        params["ExclusiveStartKey"] = json.loads(start)
        say("resuming the re-tagging where it stopped")
    total = await _item_count(table)
    gate = asyncio.Semaphore(concurrency)
    scanned = retagged = raced = 0

    async def one(comment_id: str) -> bool:
        async with gate:
            return await _retag_one(table, tagger, comment_id, backoff)

    while True:
        response = await table.client.scan(**params)
        due = [
            item["commentId"]["S"]
            for item in response.get("Items", [])
            if is_comment_item(item) and stale(tagger, item_to_comment(item))
        ]
        # Every re-tag of the page ends before the run goes on, or stops on a failure.
        outcomes = await asyncio.gather(*(one(c) for c in due), return_exceptions=True)
        failed = [o for o in outcomes if isinstance(o, BaseException)]
        if failed:
            raise failed[0]
        done = [o for o in outcomes if o is True]
        retagged += len(done)
        raced += len(outcomes) - len(done)
        scanned += int(response.get("ScannedCount", 0))
        last = response.get("LastEvaluatedKey")
        await _write_checkpoint(
            table, fingerprint, last, scanned_before + scanned, retagged_before + retagged
        )
        elapsed = time.monotonic() - started
        say(
            f"re-tagging: {scanned_before + scanned}/~{max(total, scanned_before + scanned)} "
            f"items scanned, {retagged} comments re-tagged "
            f"({scanned / max(elapsed, 1e-9):.0f} items/s)"
        )
        if last is None:
            return Retag(
                fingerprint,
                scanned,
                retagged,
                raced,
                start is not None,
                False,
                time.monotonic() - started,
                scanned_before + scanned,
                retagged_before + retagged,
            )
        params["ExclusiveStartKey"] = last


async def _current(table: TableRef) -> tuple[Tagger | None, float]:
    """The stored taxonomy's tagger and when it was saved (0: unknown, saved before heads)."""
    while True:
        head = await read_taxonomy_head(table, consistent=True)
        stored = await read_taxonomy(table, consistent=True)
        tagger = None if stored.taxonomy is None else Tagger.for_taxonomy(stored.taxonomy)
        if head is None or head.revision == stored.revision:
            return tagger, 0.0 if head is None else head.saved_at
        # Saved between the two reads: read both again.


async def _retag_one(
    table: TableRef, tagger: Tagger | None, comment_id: str, backoff: Backoff
) -> bool:
    """True when this re-tagged the comment; False when a write did first (or it is gone)."""

    def decide(stored: Stored) -> Change:
        c = stored.comment
        return Change(tag(tagger, c) if stale(tagger, c) else c)

    try:
        applied = await apply(table, comment_id, decide, backoff=backoff)
    except CommentNotFound:
        return False
    return applied.after != applied.before.comment


async def _item_count(table: TableRef) -> int:
    """The table's items, as DynamoDB last counted them (every six hours or so): progress's
    denominator, approximate."""
    response = await table.client.describe_table(TableName=table.name)
    return int(response.get("Table", {}).get("ItemCount", 0))


async def _read_checkpoint(table: TableRef) -> Item:
    response = await table.client.get_item(
        **get_request(table.name, CHECKPOINT_KEY, consistent=True)
    )
    found: Item = response.get("Item", {})
    return found


async def _write_checkpoint(
    table: TableRef, fingerprint: str | None, last: Item | None, scanned: int, retagged: int
) -> None:
    item: Item = {
        **CHECKPOINT_KEY,
        _FINGERPRINT: {"S": fingerprint or _NONE},
        _SCANNED: {"N": str(scanned)},
        _RETAGGED: {"N": str(retagged)},
    }
    if last is None:
        item[_DONE] = {"BOOL": True}
    else:
        item[_POSITION] = {"S": json.dumps(last, sort_keys=True)}
    await table.client.put_item(TableName=table.name, Item=item)
