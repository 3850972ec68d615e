"""The leaderboard read (AP11) over the table's shards.

A read queries the ``first`` highest entries of every shard at once and merges them, most
first (``merge_leaders``). Which shards comes from the layout this process remembers; after
the queries the layout item is read (strongly consistent), and when it is not the one the
queries were chosen by, the read runs again by the new one. The layout changes only when a
migration starts or ends, and entries move between shards only while one runs
(``storage.ops.reshard``), so a read whose layout held from before its queries to after them
saw no entry move that it was not prepared for.

During a migration an entry moves once, from its shard of the layout being left to its
shard of the new one. The read queries the old shards first and the new ones after: an
entry still in the old shard when the first round reads it is seen there, and one that moved
before that is in the new shard when the second round reads it, so no entry is missed; one
seen in both is counted once, as the later round saw it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from storage.base.errors import InvalidPageRequest, StorageUnavailable
from storage.base.expressions import Attr, query_request
from storage.base.types import Item, Response
from storage.engine.leaderboard_layout import known_layout, read_layout
from storage.engine.retry import gather_reads
from storage.engine.table import TableRef
from storage.model import keys
from storage.model.indexes import Index
from storage.model.leaderboard import MAX_SHARDS
from storage.model.stats import LEADER_ATTR, LEADER_SORT_ATTR

# How many leaderboard entries one request may ask for, and how many it gets by default.
LEADERBOARD_MAX = 100
LEADERBOARD_DEFAULT = 10
# Reads of one leaderboard request: the layout changes twice per migration, so a third
# change within one read means migrations are being started back to back.
LAYOUT_ATTEMPTS = 3
# The most storage calls one leaderboard read makes: the layout at a process's first read,
# then per attempt every shard of both layouts and the layout again. The GraphQL cost
# model prices a leaderboard at this bound.
LEADERBOARD_CALLS = 1 + LAYOUT_ATTEMPTS * (2 * MAX_SHARDS + 1)


@dataclass(frozen=True, slots=True)
class LeaderEntry:
    product_id: str
    five_star_count: int


async def leaderboard(table: TableRef, first: int = LEADERBOARD_DEFAULT) -> list[LeaderEntry]:
    """Top products by 5-star count, most first, exact over every shard (see module doc)."""
    if isinstance(first, bool) or not isinstance(first, int) or not 1 <= first <= LEADERBOARD_MAX:
        raise InvalidPageRequest(f"first must be between 1 and {LEADERBOARD_MAX}")
    layout = await known_layout(table)
    for _ in range(LAYOUT_ATTEMPTS):
        read: list[list[Item]] = []
        for partitions in layout.read_rounds():
            responses = await gather_reads([_top(table, p, first) for p in partitions])
            read += [response.get("Items", []) for response in responses]
        fresh = await read_layout(table)
        if fresh.epoch == layout.epoch:
            return merge_leaders(read, first)
        layout = fresh
    raise StorageUnavailable("the leaderboard's layout kept changing during the read")


async def _top(table: TableRef, partition: str, first: int) -> Response:
    return await table.client.query(
        **query_request(
            table.name,
            index=Index.BY_LANG_AND_RATING.value,
            key=Attr(LEADER_ATTR).eq(partition),
            forward=False,
            limit=first,
        )
    )


def merge_leaders(partitions: Sequence[Sequence[Item]], first: int) -> list[LeaderEntry]:
    """The ``first`` entries with the most 5-star comments from each partition's top
    entries (in the order the partitions were read, each most first).

    A product read in two partitions (its entry moved between the reads) counts once, as
    the later read saw it. Equal counts keep the order they were read in: the engine's order
    within a partition, then the partitions' order. With one shard that is exactly the
    order of today's single ``LEADERS`` query; DynamoDB documents no order among equal sort
    keys, so no order among ties is promised beyond being the same for the same data.
    """
    latest: dict[str, tuple[int, int]] = {}
    for p, items in enumerate(partitions):
        for n, item in enumerate(items):
            latest[item["PK"]["S"]] = (p, n)
    kept = [
        item
        for p, items in enumerate(partitions)
        for n, item in enumerate(items)
        if latest[item["PK"]["S"]] == (p, n)
    ]
    # A stable sort on the count alone keeps the order of equal counts as read.
    kept.sort(key=lambda i: i[LEADER_SORT_ATTR]["S"], reverse=True)
    return [
        LeaderEntry(keys.product_id_from_pk(i["PK"]["S"]), int(i[LEADER_SORT_ATTR]["S"]))
        for i in kept[:first]
    ]
