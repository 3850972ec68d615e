"""The leaderboard's layout: over how many index partitions (shards) its entries are spread.

Every product's ``S`` item with 5-star comments is its leaderboard entry, an item of the
``byLangAndRating`` index's partition named by ``GSIPK``. One partition takes about 1,000
writes per second, and a throttled index write throttles the table write behind it, so a
table can spread the entries over ``shards`` partitions: ``LEADERS`` when there is one (the
layout of every table made before shards existed), ``LEADERS#<k>`` for k from 0 to
``shards - 1`` otherwise, k from a stable hash of the product id (its *home* shard).

The layout is a property of the table, not of a process: one item (``LAYOUT_KEY``) records
it, and a table without that item has one shard. While ``storage.ops.reshard`` moves the entries
to another number of shards, the item also names the layout they come from (``previous``):
readers then read both, and an entry may be in either. ``epoch`` counts the item's changes
(0: no item yet); a write that places a new entry conditions on it, so no write places one
by a layout the table has left (see ``storage.writes.counters``).

Pure: no I/O, so the key functions, the table and the planner-side code can import it.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

from storage.base.expressions import Attr, Condition
from storage.base.types import Item
from storage.model import keys, rules
from storage.model.items import number

LAYOUT_KEY: Item = {"PK": {"S": "LAYOUT"}, "SK": {"S": keys.LEADERS}}
SHARDS_ATTR = "shards"
PREVIOUS_ATTR = "previous"
EPOCH_ATTR = "epoch"
# A migration's place in its scan (the last key it finished), so a re-run resumes there.
POSITION_ATTR = "position"
# A leaderboard read queries every shard of the layout (both layouts during a migration):
# the bound keeps that, and the GraphQL cost of a leaderboard, small.
MAX_SHARDS = 16


def validate_shards(shards: object) -> int:
    """A number of leaderboard shards, 1 to ``MAX_SHARDS``, else ValueError."""
    if isinstance(shards, bool) or not isinstance(shards, int) or not 1 <= shards <= MAX_SHARDS:
        raise ValueError(f"the leaderboard has 1 to {MAX_SHARDS} shards")
    return shards


def shard_of(product_id: str, shards: int) -> int:
    """The product's shard among ``shards``: the same in every process and on every run
    (a hash of the id, not Python's salted ``hash``)."""
    digest = hashlib.sha256(rules.validate_product_id(product_id).encode()).digest()
    return int.from_bytes(digest[:8], "big") % validate_shards(shards)


def shard_partition(shards: int, k: int) -> str:
    """The index partition of shard ``k``; one shard is today's single ``LEADERS``."""
    if validate_shards(shards) == 1:
        return keys.LEADERS
    if not 0 <= k < shards:
        raise ValueError(f"shard {k} of {shards}")
    return f"{keys.LEADERS}#{k}"


def partitions(shards: int) -> tuple[str, ...]:
    """Every index partition of a layout of ``shards`` shards."""
    return tuple(shard_partition(shards, k) for k in range(validate_shards(shards)))


def home_partition(product_id: str, shards: int) -> str:
    return shard_partition(shards, shard_of(product_id, shards))


def is_leader_partition(value: str) -> bool:
    """Whether a ``GSIPK`` value names a leaderboard partition of any layout."""
    if value == keys.LEADERS:
        return True
    prefix, sep, k = value.partition("#")
    return prefix == keys.LEADERS and sep == "#" and k.isdigit() and int(k) < MAX_SHARDS


@dataclass(frozen=True, slots=True)
class LeaderLayout:
    """The table's layout as recorded: ``shards`` for new entries, and while a migration
    runs the ``previous`` number it moves entries from."""

    shards: int = 1
    previous: int | None = None
    epoch: int = 0
    # The migration's resume point (a scan's LastEvaluatedKey as JSON), None at its start.
    position: str | None = None

    def __post_init__(self) -> None:
        validate_shards(self.shards)
        if self.previous is not None:
            validate_shards(self.previous)

    @property
    def migrating(self) -> bool:
        return self.previous is not None

    def home(self, product_id: str) -> str:
        """Where a new entry of the product goes (and where the migration moves it)."""
        return home_partition(product_id, self.shards)

    def allowed(self, product_id: str) -> frozenset[str]:
        """The partitions the product's entry may be in: its home, and during a migration
        its home in the layout being left."""
        found = {self.home(product_id)}
        if self.previous is not None:
            found.add(home_partition(product_id, self.previous))
        return frozenset(found)

    def read_rounds(self) -> tuple[tuple[str, ...], ...]:
        """The partitions a leaderboard read queries, round by round: during a migration the
        layout being left first and the new one after (see ``storage.reads.leaders``)."""
        if self.previous is None:
            return (partitions(self.shards),)
        return (partitions(self.previous), partitions(self.shards))

    def unchanged(self) -> Condition:
        """The condition that the recorded layout is still this one."""
        epoch = Attr(EPOCH_ATTR)
        return epoch.not_exists() if self.epoch == 0 else epoch.eq(self.epoch)

    def describe(self) -> str:
        if self.previous is None:
            return f"{self.shards} shard{'s' if self.shards > 1 else ''}"
        return f"moving from {self.previous} to {self.shards} shards"


def layout_of(item: Item | None) -> LeaderLayout:
    """The layout a layout item records; no item: the single ``LEADERS`` partition."""
    if not item:
        return LeaderLayout()
    previous = number(item, PREVIOUS_ATTR) if PREVIOUS_ATTR in item else None
    position = item.get(POSITION_ATTR, {}).get("S")
    return LeaderLayout(
        number(item, SHARDS_ATTR) or 1, previous, number(item, EPOCH_ATTR), position
    )


def layout_item(layout: LeaderLayout) -> Item:
    """The layout item that records ``layout``."""
    item: Item = {
        **LAYOUT_KEY,
        SHARDS_ATTR: {"N": str(layout.shards)},
        EPOCH_ATTR: {"N": str(layout.epoch)},
    }
    if layout.previous is not None:
        item[PREVIOUS_ATTR] = {"N": str(layout.previous)}
    if layout.position is not None:
        item[POSITION_ATTR] = {"S": layout.position}
    return item


class LayoutMemory:
    """The layout as this process last read it. Only a hint: a write that places an entry
    by it conditions on it, and a leaderboard read checks it after its queries."""

    def __init__(self) -> None:
        self.known: LeaderLayout | None = None
