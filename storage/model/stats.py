"""The stats item: one per product and scope, its counters and its leaderboard entry.

A product has an ``S`` item (all languages) and an ``S#<lang>`` item per language it has
comments in. Each holds ``count_1`` to ``count_5`` and ``count_total`` of its PUBLISHED
comments, and ``verified_1`` to ``verified_5`` and ``verified_total`` of those written by
verified purchasers (the planner sizes and skips verified-only reads by them); the ``S`` item of a
product with 5-star comments doubles as its leaderboard entry (``LEADER_ATTR`` set to
its leaderboard partition, ``LEADERS`` or a shard's, see ``storage.model.leaderboard``, and the sort
key to the padded 5-star count). This module is the one definition of that shape: items,
bulk loading, the writes' counter moves and verify all build and read it through here.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from storage.base.expressions import Attr, Update
from storage.base.types import Item
from storage.model import keys, rules
from storage.model.comments import RatingCounts
from storage.model.indexes import SORT_KEY, Index
from storage.model.items import number
from storage.model.leaderboard import LeaderLayout, is_leader_partition

# (product id, language or None for all languages): which stats item.
StatsScope = tuple[str, str | None]

COUNT_ATTRS: tuple[str, ...] = tuple(f"count_{r}" for r in rules.RATINGS)
FIVE_ATTR = COUNT_ATTRS[4]
TOTAL_ATTR = "count_total"
VERIFIED_ATTRS: tuple[str, ...] = tuple(f"verified_{r}" for r in rules.RATINGS)
VERIFIED_TOTAL_ATTR = "verified_total"
# Every counter of a stats item, in the order of a tally (see ``count_in``).
COUNTERS: tuple[str, ...] = (*COUNT_ATTRS, *VERIFIED_ATTRS)
TOTALS: tuple[str, ...] = (TOTAL_ATTR, VERIFIED_TOTAL_ATTR)
# A tally: count_1..count_5 then verified_1..verified_5.
TALLY_SIZE = len(COUNTERS)
# The S item doubles as the leaderboard entry on this index's partition key (and GSISK).
# A leaderboard entry as stored: (its partition, its sort key).
Leader = tuple[str, str]
LEADER_ATTR = Index.BY_LANG_AND_RATING.partition_attr
LEADER_SORT_ATTR = SORT_KEY


def stats_key(product_id: str, language: str | None) -> Item:
    return {"PK": {"S": keys.product_pk(product_id)}, "SK": {"S": keys.stats_sk(language)}}


def stats_language(sk: str) -> str | None:
    """Inverse of ``keys.stats_sk``."""
    if sk == keys.STATS_ALL:
        return None
    return sk.removeprefix(keys.STATS_ALL + "#")


def is_stats_item(item: Item) -> bool:
    pk: str = item.get("PK", {}).get("S", "")
    sk: str = item.get("SK", {}).get("S", "")
    return pk.startswith(keys.PRODUCT_PREFIX) and (
        sk == keys.STATS_ALL or sk.startswith(keys.STATS_ALL + "#")
    )


def scope_of(item: Item) -> StatsScope:
    """Which product and language a stats item counts."""
    return keys.product_id_from_pk(item["PK"]["S"]), stats_language(item["SK"]["S"])


def leader_sort_key(five: int) -> str | None:
    """The leaderboard entry's sort key for a 5-star count; None: no entry (no 5 stars)."""
    return keys.leader_sort_key(five) if five > 0 else None


@dataclass(frozen=True, slots=True)
class StoredStats:
    """A stats item's counters and leaderboard entry exactly as stored (unclamped: a
    negative counter is corruption to report, not to hide)."""

    counts: tuple[int, ...]  # count_1 .. count_5, verified_1 .. verified_5
    totals: tuple[int, int]  # count_total, verified_total
    leader: Leader | None  # the entry's partition and sort key, None without an entry

    @classmethod
    def of(cls, item: Item) -> StoredStats:
        leader = None
        partition = item.get(LEADER_ATTR, {}).get("S")
        if partition is not None and is_leader_partition(partition):
            leader = (partition, item.get(LEADER_SORT_ATTR, {}).get("S", ""))
        total, verified = (number(item, a) for a in TOTALS)
        return cls(tuple(number(item, a) for a in COUNTERS), (total, verified), leader)

    @classmethod
    def expected(cls, tally: Sequence[int], *, home: str | None) -> StoredStats:
        """What the item of this tally holds: the totals, and on the all-languages item
        (``home``: the partition its entry belongs in; None for a language's item) the
        leaderboard entry."""
        key = leader_sort_key(tally[4]) if home is not None else None
        leader = None if home is None or key is None else (home, key)
        return cls(tuple(tally), (sum(tally[:5]), sum(tally[5:])), leader)


def count_in(
    tallies: dict[StatsScope, list[int]],
    product_id: str,
    language: str,
    rating: int,
    *,
    verified: bool = False,
) -> None:
    """Count one published comment in both stats items it belongs to (all languages and
    its own): its rating, and its verified rating when it is a verified purchase."""
    for scope in ((product_id, None), (product_id, language)):
        tally = tallies.setdefault(scope, [0] * TALLY_SIZE)
        tally[rating - 1] += 1
        if verified:
            tally[len(COUNT_ATTRS) + rating - 1] += 1


def item_to_counts(product_id: str, language: str | None, item: Item | None) -> RatingCounts:
    """Counters of a stats item; a missing item means no comments yet.

    Writes never move a counter below zero (their conditions forbid it), so a negative one
    is corruption: ``RatingCounts`` refuses it rather than hiding it.
    """
    if not item:
        return RatingCounts(product_id, language)
    c1, c2, c3, c4, c5 = (number(item, a) for a in COUNT_ATTRS)
    v1, v2, v3, v4, v5 = (number(item, a) for a in VERIFIED_ATTRS)
    return RatingCounts(product_id, language, (c1, c2, c3, c4, c5), (v1, v2, v3, v4, v5))


def whole_item(
    product_id: str, language: str | None, tally: Sequence[int], layout: LeaderLayout
) -> Item:
    """A complete stats item for this tally (bulk loading of new products), its entry in
    the product's home shard of ``layout``."""
    item: Item = {**stats_key(product_id, language), "productId": {"S": product_id}}
    for attr, n in _with_totals(tally):
        item[attr] = {"N": str(n)}
    counts = tally[: len(COUNT_ATTRS)]
    if language is not None:
        item["language"] = {"S": language}
    else:
        leader = leader_sort_key(counts[4])
        if leader is not None:
            item[LEADER_ATTR] = {"S": layout.home(product_id)}
            item[LEADER_SORT_ATTR] = {"S": leader}
    return item


def name_scope(update: Update, product_id: str, language: str | None) -> None:
    """SET the attributes that say which scope an item counts (kept for readers of raw
    items and for verify)."""
    update.set("productId", product_id)
    if language is not None:
        update.set("language", language)


def _with_totals(tally: Sequence[int]) -> list[tuple[str, int]]:
    """Each counter's name and value, the two totals included."""
    if len(tally) != TALLY_SIZE:
        raise ValueError(f"a tally has {TALLY_SIZE} numbers: {list(tally)}")
    half = len(COUNT_ATTRS)
    return [
        *zip(COUNTERS, tally, strict=True),
        (TOTAL_ATTR, sum(tally[:half])),
        (VERIFIED_TOTAL_ATTR, sum(tally[half:])),
    ]


def add_counts(update: Update, deltas: Sequence[int]) -> None:
    """ADD each counter's delta (a tally of deltas) and the totals'; a decrement conditions
    on the counter holding at least what it takes away, so no counter can go below zero."""
    for attr, delta in _with_totals(deltas):
        if delta:
            update.add(attr, delta)
            if delta < 0:
                update.condition(Attr(attr).ge(-delta))


def set_counts(update: Update, tally: Sequence[int], *, home: str | None) -> None:
    """SET every counter to exactly this tally, and on the all-languages item (``home``:
    the partition of its entry; None for a language's item) the leaderboard entry."""
    for attr, n in _with_totals(tally):
        update.set(attr, n)
    if home is not None:
        set_leader(update, tally[4], home)


def set_leader(update: Update, five: int, partition: str) -> None:
    """Make the leaderboard entry match a 5-star count, in ``partition`` (removed at zero)."""
    leader = leader_sort_key(five)
    if leader is None:
        update.remove(LEADER_ATTR)
        update.remove(LEADER_SORT_ATTR)
    else:
        update.set(LEADER_ATTR, partition)
        update.set(LEADER_SORT_ATTR, leader)


def move_leader(update: Update, before: int, after: int, home: str) -> None:
    """The leaderboard entry's change when the 5-star count goes from ``before`` to
    ``after``. An entry that stays keeps its partition: only ``storage.ops.reshard`` moves
    entries between shards, so a write never undoes a move it did not see. A new entry
    goes to ``home`` (the caller conditions on the layout it took ``home`` from)."""
    if before > 0 and after > 0:
        update.set(LEADER_SORT_ATTR, keys.leader_sort_key(after))
    else:
        set_leader(update, after, home)


def unchanged_since(update: Update, item: Item) -> None:
    """Condition the update on every counter still holding what ``item`` held (absent
    ones still absent): nothing written since that read is overwritten."""
    for attr in (*COUNTERS, *TOTALS):
        stored = item.get(attr)
        update.condition(Attr(attr).not_exists() if stored is None else Attr(attr).eq(stored))
