"""Move the leaderboard's entries to another number of shards (``storage.model.leaderboard``).

The steps, each safe to interrupt and to run again:

1. The layout item records the move: ``shards`` becomes the new number and ``previous``
   the old one (conditioned on the layout read, so two migrations cannot both start).
   From then on every new entry goes to its home shard of the new layout (the writes that
   place one check the layout item), and leaderboard reads read both layouts.
2. A strongly consistent scan visits every ``S`` item; an entry outside its new home shard
   is moved there by a transaction that conditions on the entry's partition and ``count_5``
   as read and on the layout item still recording this move. A write that moved the count
   since the read fails the condition, and the entry is read again and moved as it is now;
   writes never move an entry (they keep its partition), so a move cannot be undone by a
   write that read the entry before it, and a write that removes the entry (its count
   reaching zero) fails the move's condition instead of leaving half an entry. After every
   page the scan's position is stored on the layout item, where a re-run resumes.
3. The layout item forgets ``previous``: reads use the new layout only.

Items created after the scan passed their place got their entry from the new layout (step
1), so when the scan ends no entry is left in a shard the new layout does not have.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from storage.base.errors import ConditionFailed, StorageUnavailable
from storage.base.expressions import Attr, Update, check_request, get_request, put_request
from storage.base.types import Item
from storage.engine.leaderboard_layout import read_layout
from storage.engine.table import TableRef
from storage.model import keys
from storage.model.leaderboard import (
    LAYOUT_KEY,
    POSITION_ATTR,
    LeaderLayout,
    layout_item,
    validate_shards,
)
from storage.model.stats import FIVE_ATTR, LEADER_ATTR
from storage.writes.transaction import CallBudget, Part, transact

PAGE_ITEMS = 500
# Reads and moves of one entry before the migration gives up on it (each failed move means
# a write changed the entry's count meanwhile).
MOVE_ATTEMPTS = 20

Progress = Callable[[str], None]


class LayoutChanged(StorageUnavailable):
    """Another migration changed the layout while this one ran."""


@dataclass(frozen=True, slots=True)
class Reshard:
    shards: int  # the layout now recorded
    scanned: int  # items this run scanned
    moved: int  # entries this run moved
    resumed: bool  # this run continued an interrupted one
    already_done: bool  # the table already had this layout: nothing scanned


async def reshard_leaders(
    table: TableRef,
    shards: int,
    *,
    progress: Progress | None = None,
    page_items: int = PAGE_ITEMS,
) -> Reshard:
    """Give the leaderboard ``shards`` shards, moving every entry; resumable, race-safe
    against every write (see the module doc)."""
    validate_shards(shards)
    say = progress or (lambda _: None)
    layout = await read_layout(table)
    resumed = layout.migrating
    if layout.migrating and layout.shards != shards:
        raise StorageUnavailable(
            f"a move of the leaderboard from {layout.previous} to {layout.shards} shards is "
            f"unfinished: finish it first (--leaderboard-shards {layout.shards})"
        )
    if not layout.migrating:
        if layout.shards == shards:
            return Reshard(shards, 0, 0, False, True)
        layout = await _record(table, layout, LeaderLayout(shards, layout.shards, layout.epoch + 1))
        say(f"leaderboard: moving from {layout.previous} to {shards} shards")
    else:
        say(f"leaderboard: resuming the move from {layout.previous} to {shards} shards")
    params: dict[str, Any] = {
        "TableName": table.name,
        "ConsistentRead": True,
        "Limit": page_items,
    }
    if layout.position is not None:
        params["ExclusiveStartKey"] = json.loads(layout.position)
    scanned = moved = 0
    while True:
        response = await table.client.scan(**params)
        for item in response.get("Items", []):
            if _is_entry_holder(item):
                moved += await _move(table, layout, item)
        scanned += int(response.get("ScannedCount", 0))
        last = response.get("LastEvaluatedKey")
        say(f"leaderboard: {moved} entries moved, {scanned} items scanned")
        if last is None:
            break
        position = json.dumps(last, sort_keys=True)
        layout = await _record(table, layout, replace(layout, position=position))
        params["ExclusiveStartKey"] = last
    await _record(table, layout, LeaderLayout(shards, None, layout.epoch + 1))
    say(f"leaderboard: {shards} shards")
    return Reshard(shards, scanned, moved, resumed, False)


def _is_entry_holder(item: Item) -> bool:
    """An all-languages stats item: the only items that carry an entry."""
    pk: str = item["PK"]["S"]
    return pk.startswith(keys.PRODUCT_PREFIX) and item["SK"]["S"] == keys.STATS_ALL


async def _record(table: TableRef, seen: LeaderLayout, new: LeaderLayout) -> LeaderLayout:
    """Write the layout item, on the condition that it still records ``seen`` (its epoch and
    its position: a second run of the same migration must not rewind the first)."""
    condition = seen.unchanged()
    position = Attr(POSITION_ATTR)
    if seen.epoch:
        condition = condition & (
            position.not_exists() if seen.position is None else position.eq(seen.position)
        )
    try:
        await table.client.put_item(**put_request(table.name, layout_item(new), condition))
    except ConditionFailed as exc:
        raise LayoutChanged(
            "another run changed the leaderboard's layout meanwhile; run the migration again"
        ) from exc
    table.leader_layout.known = new
    return new


async def _move(table: TableRef, layout: LeaderLayout, item: Item) -> int:
    """Move one product's entry to its home shard; 1 if this call moved it."""
    # The layout item still records this migration (its position may move on meanwhile).
    unchanged = layout.unchanged()
    for _ in range(MOVE_ATTEMPTS):
        partition = item.get(LEADER_ATTR, {}).get("S")
        home = layout.home(keys.product_id_from_pk(item["PK"]["S"]))
        if partition is None or partition == home:
            return 0
        u = Update()
        u.set(LEADER_ATTR, home)
        u.condition(Attr(LEADER_ATTR).eq(partition))
        five = item.get(FIVE_ATTR)
        u.condition(Attr(FIVE_ATTR).not_exists() if five is None else Attr(FIVE_ATTR).eq(five))
        key = {"PK": item["PK"], "SK": item["SK"]}
        parts = [
            Part("entry", {"Update": u.request(table.name, key)}),
            Part("layout", {"ConditionCheck": check_request(table.name, LAYOUT_KEY, unchanged)}),
        ]
        cancel = await transact(table, parts, CallBudget(1))
        if cancel is None:
            return 1
        if cancel.failed("layout"):
            raise LayoutChanged("the leaderboard's layout changed during the migration")
        response = await table.client.get_item(**get_request(table.name, key, consistent=True))
        item = response.get("Item") or {}
        if not item:
            return 0
    raise StorageUnavailable("an entry kept changing during its move; run the migration again")
