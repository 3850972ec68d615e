"""``verify-stats`` for facets: recount every facet counter item from the comments, check
every comment's facet entries (present where it is listed, with the keys its rating,
language and values give them, and nowhere else), and repair what differs, each repair on
the condition that what it fixes is still as scanned.

``FacetTally`` sees the items of ``storage.ops.verify``'s one scan; nothing scans twice.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from storage.base.errors import ConditionFailed
from storage.base.expressions import (
    Attr,
    Update,
    check_request,
    delete_request,
    put_request,
)
from storage.base.types import Item
from storage.engine.table import TableRef
from storage.model import keys
from storage.model.comments import Comment
from storage.model.facets import (
    COUNTER_PREFIX,
    FACET_LANG_PARTITION,
    FACET_PARTITION,
    GROUP_PREFIX,
    facet_moves,
)
from storage.model.indexes import SORT_KEY
from storage.model.items import (
    HELPFUL_ATTR,
    NOT_HELPFUL_ATTR,
    comment_key,
    entry_items,
    is_entry_item,
    item_version,
    number,
)
from storage.writes.facet_parts import listed
from storage.writes.state import Stored
from storage.writes.transaction import CallBudget, Part, transact

CounterKey = tuple[str, str]  # (scope partition, F#<value>)
EntryKey = tuple[str, str]  # (comment partition, FACET#<scope>#<value>)
# What an entry must agree on with its comment: the two facet indexes' keys and the order
# within them (what makes it findable), and the helpful counts it shows (a vote's
# follow-up brings them up after the vote).
_ENTRY_KEYS = (FACET_PARTITION, FACET_LANG_PARTITION, SORT_KEY)
_ENTRY_COUNTS = (HELPFUL_ATTR, NOT_HELPFUL_ATTR)


@dataclass(frozen=True, slots=True)
class FacetCounterDrift:
    """A facet counter item whose counts disagree with the comments."""

    key: CounterKey
    stored: dict[str, int]
    expected: dict[str, int]

    def describe(self) -> str:
        return f"{self.key[0]} {self.key[1]}: facet counts {self.stored} != {self.expected}"


@dataclass(frozen=True, slots=True)
class EntryDrift:
    """A facet entry that is missing, left over, or keyed otherwise than its comment says."""

    key: EntryKey
    stored: Item | None  # the entry as scanned (None: missing)
    expected: Item | None  # as the comment says (None: it should not exist)
    comment: Item | None  # the comment item as scanned (None: no comment)

    def describe(self) -> str:
        what = (
            "missing"
            if self.stored is None
            else "left over"
            if self.expected is None
            else "keyed otherwise than its comment"
        )
        return f"{self.key[0]} {self.key[1]}: facet entry {what}"


@dataclass
class FacetTally:
    """What one scan saw of facets, and what the comments say it should be."""

    counters: dict[CounterKey, dict[str, int]] = field(default_factory=dict)
    entries: dict[EntryKey, Item] = field(default_factory=dict)
    expected_counters: dict[CounterKey, dict[str, int]] = field(default_factory=dict)
    expected_entries: dict[EntryKey, Item] = field(default_factory=dict)
    comments: dict[str, Item] = field(default_factory=dict)  # comment partition -> item

    def see(self, item: Item) -> bool:
        """Take ``item`` if it is a facet item (True), else leave it to the caller."""
        pk, sk = item["PK"]["S"], item["SK"]["S"]
        if is_entry_item(item):
            self.entries[(pk, sk)] = item
            return True
        if sk.startswith(COUNTER_PREFIX) and pk.startswith((keys.PRODUCT_PREFIX, GROUP_PREFIX)):
            self.counters[(pk, sk)] = {
                name: int(value["N"]) for name, value in item.items() if "N" in value
            }
            return True
        return False

    def comment(self, item: Item, comment: Comment) -> None:
        """A comment item of the scan: what its facet items must be."""
        self.comments[item["PK"]["S"]] = item
        moves = facet_moves(None, listed(comment))
        for entry in entry_items(comment, moves.put, item_version(item)):
            self.expected_entries[(entry["PK"]["S"], entry["SK"]["S"])] = entry
        for (scope, value), deltas in moves.counters.items():
            into = self.expected_counters.setdefault((scope.pk, COUNTER_PREFIX + value.token), {})
            for name, delta in deltas.items():
                into[name] = into.get(name, 0) + delta

    def counter_drifts(self) -> tuple[FacetCounterDrift, ...]:
        found = []
        for key in sorted(self.counters.keys() | self.expected_counters.keys()):
            stored = {n: c for n, c in self.counters.get(key, {}).items() if c}
            expected = self.expected_counters.get(key, {})
            if stored != expected:
                found.append(FacetCounterDrift(key, self.counters.get(key, {}), expected))
        return tuple(found)

    def entry_drifts(self) -> tuple[EntryDrift, ...]:
        found = []
        for key in sorted(self.entries.keys() | self.expected_entries.keys()):
            stored, expected = self.entries.get(key), self.expected_entries.get(key)
            if stored is not None and expected is not None and _keyed(stored) == _keyed(expected):
                continue
            found.append(EntryDrift(key, stored, expected, self.comments.get(key[0])))
        return tuple(found)


def _keyed(entry: Item) -> tuple[Any, ...]:
    # Counts as numbers: a vote's follow-up sets a zero that a transition's copy leaves out.
    counts = tuple(number(entry, name) for name in _ENTRY_COUNTS)
    return tuple(entry.get(name) for name in _ENTRY_KEYS) + counts


async def repair_facets(
    table: TableRef,
    counters: tuple[FacetCounterDrift, ...],
    entries: tuple[EntryDrift, ...],
) -> tuple[int, int]:
    """Rewrite each drifting counter item and entry on the condition that it (and the
    entry's comment) is still as scanned; (repaired, skipped)."""
    repaired = skipped = 0
    for drift in counters:
        try:
            await table.client.update_item(**_counter_repair(table, drift))
            repaired += 1
        except ConditionFailed:
            skipped += 1
    for entry in entries:
        if await transact(table, _entry_repair(table, entry), CallBudget(1)) is None:
            repaired += 1
        else:
            skipped += 1
    return repaired, skipped


def _counter_repair(table: TableRef, drift: FacetCounterDrift) -> dict[str, Any]:
    u = Update()
    for name in sorted(drift.stored.keys() | drift.expected.keys()):
        want = drift.expected.get(name, 0)
        if want:
            u.set(name, want)
        else:
            u.remove(name)
        have = Attr(name)
        u.condition(have.eq(drift.stored[name]) if name in drift.stored else have.not_exists())
    key = {"PK": {"S": drift.key[0]}, "SK": {"S": drift.key[1]}}
    return u.request(table.name, key)


def _entry_repair(table: TableRef, drift: EntryDrift) -> list[Part]:
    pk = drift.key[0]
    comment_id = pk.removeprefix(keys.COMMENT_PREFIX)
    comment_as_read = (
        Attr("PK").not_exists() if drift.comment is None else Stored.of(drift.comment).unchanged()
    )
    check = check_request(table.name, comment_key(comment_id), comment_as_read)
    entry_key = {"PK": {"S": pk}, "SK": {"S": drift.key[1]}}
    if drift.expected is None:
        fix = {"Delete": delete_request(table.name, entry_key)}
    else:
        fix = {"Put": put_request(table.name, drift.expected)}
    return [Part("comment", {"ConditionCheck": check}), Part("entry", fix)]
