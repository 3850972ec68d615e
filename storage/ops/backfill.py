"""Give every published comment its helpful order key (HSK), so that a table made before
the most helpful order lists its old comments in the helpful twins of its indexes.

Comments written since carry the key; older ones get it here, one conditioned update each:
only while the comment is still listed (its ``all`` key is there), still lacks the key, and
still has the helpful count the key was computed from. A comment written meanwhile by the
write path already carries its key, so losing such a race is never an error.

The scan keeps its place in a checkpoint item (``MIGRATION`` / ``HSK``) after every page,
so a run that stops (a crash, Ctrl-C, a timeout) resumes where it stopped; a finished run
marks the checkpoint done, and running again costs one read.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from storage.base.errors import ConditionFailed
from storage.base.expressions import Attr, Update, get_request
from storage.base.types import Item
from storage.engine.table import TableRef
from storage.model import keys
from storage.model.indexes import HELPFUL_SORT_KEY, SORT_KEY, Index
from storage.model.items import HELPFUL_ATTR, is_comment_item, number

CHECKPOINT_KEY: Item = {"PK": {"S": "MIGRATION"}, "SK": {"S": HELPFUL_SORT_KEY}}
_POSITION = "position"  # the scan's LastEvaluatedKey, as JSON
_DONE = "done"
PAGE_ITEMS = 500

Progress = Callable[[str], None]


@dataclass(frozen=True, slots=True)
class Backfill:
    scanned: int  # items this run scanned
    written: int  # comments this run gave their key
    resumed: bool  # the run continued a stopped one
    already_done: bool  # a finished earlier run: nothing scanned


async def backfill_helpful_keys(
    table: TableRef, *, progress: Progress | None = None, page_items: int = PAGE_ITEMS
) -> Backfill:
    """Give every listed comment without an HSK its key; resumable, see the module doc."""
    say = progress or (lambda _: None)
    checkpoint = await _read_checkpoint(table)
    if checkpoint.get(_DONE, {}).get("BOOL"):
        return Backfill(0, 0, False, True)
    start = checkpoint.get(_POSITION, {}).get("S")
    params: dict[str, Any] = {"TableName": table.name, "Limit": page_items}
    if start is not None:
        params["ExclusiveStartKey"] = json.loads(start)
        say("resuming the helpful keys' backfill where it stopped")
    scanned = written = 0
    while True:
        response = await table.client.scan(**params)
        for item in response.get("Items", []):
            if _needs_key(item):
                written += await _give_key(table, item)
        scanned += int(response.get("ScannedCount", 0))
        last = response.get("LastEvaluatedKey")
        await _write_checkpoint(table, last)
        say(f"helpful keys: {written} comments given theirs, {scanned} items scanned")
        if last is None:
            return Backfill(scanned, written, start is not None, False)
        params["ExclusiveStartKey"] = last


def _needs_key(item: Item) -> bool:
    listed = Index.ALL.partition_attr in item  # published: in the listings, so in the twins
    return is_comment_item(item) and listed and HELPFUL_SORT_KEY not in item


async def _give_key(table: TableRef, item: Item) -> int:
    """1 if the comment got its key, 0 if a write got there first (it wrote the key)."""
    helpful = number(item, HELPFUL_ATTR)
    u = Update()
    u.set(HELPFUL_SORT_KEY, keys.helpful_sort_key(helpful, item[SORT_KEY]["S"]))
    u.condition(Attr(HELPFUL_SORT_KEY).not_exists())
    u.condition(Attr(Index.ALL.partition_attr).exists())
    counted = Attr(HELPFUL_ATTR)
    u.condition(counted.eq(helpful) if helpful else counted.not_exists())
    try:
        await table.client.update_item(
            **u.request(table.name, {"PK": item["PK"], "SK": item["SK"]})
        )
    except ConditionFailed:
        return 0
    return 1


async def _read_checkpoint(table: TableRef) -> Item:
    response = await table.client.get_item(
        **get_request(table.name, CHECKPOINT_KEY, consistent=True)
    )
    found: Item = response.get("Item", {})
    return found


async def _write_checkpoint(table: TableRef, last: Item | None) -> None:
    item: Item = {**CHECKPOINT_KEY}
    if last is None:
        item[_DONE] = {"BOOL": True}
    else:
        item[_POSITION] = {"S": json.dumps(last, sort_keys=True)}
    await table.client.put_item(TableName=table.name, Item=item)
