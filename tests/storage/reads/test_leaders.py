"""The sharded leaderboard: its layout, the scatter-gather read against brute force, and the
migration between layouts under concurrent writes and reads, interrupted and run again."""

from __future__ import annotations

import asyncio
import random
import uuid
from collections import Counter
from typing import Any

import pytest

from storage.base.errors import StorageUnavailable
from storage.base.types import DynamoClient, Item, Response
from storage.engine.leaderboard_layout import read_layout
from storage.engine.table import TableRef
from storage.engine.wrapping import ClientWrapper
from storage.model import keys
from storage.model.comments import Comment, NewComment
from storage.model.leaderboard import (
    LeaderLayout,
    home_partition,
    is_leader_partition,
    layout_item,
    layout_of,
    partitions,
    shard_of,
    validate_shards,
)
from storage.ops.bulk import load_new_products
from storage.ops.reshard import reshard_leaders
from storage.ops.verify import repair, verify
from storage.reads.leaders import LeaderEntry, leaderboard, merge_leaders
from storage.writes import create_comment, delete_comment
from tests.helpers import FAST, own_table

# -- the layout (no engine) ------------------------------------------------------------------


def test_one_shard_is_todays_single_partition() -> None:
    assert partitions(1) == (keys.LEADERS,)
    assert home_partition("anything", 1) == keys.LEADERS
    assert partitions(4) == ("LEADERS#0", "LEADERS#1", "LEADERS#2", "LEADERS#3")
    assert all(is_leader_partition(p) for p in (*partitions(1), *partitions(16)))
    assert not any(is_leader_partition(p) for p in ("LEADERS#", "LEADERS#x", "LEADERS#16"))


def test_a_products_shard_is_stable_and_spread() -> None:
    # A hash of the id, the same in every process and release: pinned, since changing it
    # would put every entry outside its shard.
    assert [shard_of(p, 8) for p in ("p1", "p2", "p3")] == [3, 4, 5]
    assert shard_of("sku-1", 16) == 5
    spread = Counter(shard_of(f"sku-{n}", 8) for n in range(8000))
    assert sorted(spread) == list(range(8))
    assert min(spread.values()) > 850  # 1,000 each on average


@pytest.mark.parametrize("bad", [0, 17, -1, True, 2.0])
def test_shard_counts_are_bounded(bad: object) -> None:
    with pytest.raises(ValueError, match="1 to 16"):
        validate_shards(bad)


def test_the_layout_item_round_trips_and_its_absence_is_one_shard() -> None:
    assert layout_of(None) == LeaderLayout(1, None, 0)
    moving = LeaderLayout(8, 1, 3, '{"PK": {"S": "PRODUCT#x"}}')
    assert layout_of(layout_item(moving)) == moving
    assert moving.read_rounds() == (partitions(1), partitions(8))
    assert moving.allowed("x") == {keys.LEADERS, home_partition("x", 8)}
    assert LeaderLayout(4).allowed("x") == {home_partition("x", 4)}


def _entry(product: str, five: int) -> Item:
    return {
        "PK": {"S": keys.product_pk(product)},
        "GSISK": {"S": keys.leader_sort_key(five)},
    }


def test_the_merge_is_most_first_and_keeps_the_read_order_of_ties() -> None:
    shards = [[_entry("a", 9), _entry("b", 3)], [_entry("c", 12), _entry("d", 3)]]
    assert merge_leaders(shards, 3) == [
        LeaderEntry("c", 12),
        LeaderEntry("a", 9),
        LeaderEntry("b", 3),  # a tie: the earlier partition's first
    ]


def test_an_entry_read_twice_counts_once_as_read_last() -> None:
    # Moved from the old shard (read first) to the new one (read after), 4 -> 5 meanwhile.
    old, new = [_entry("a", 4), _entry("b", 2)], [_entry("a", 5)]
    assert merge_leaders([old, new], 10) == [LeaderEntry("a", 5), LeaderEntry("b", 2)]


# -- against DynamoDB Local ------------------------------------------------------------------


def _brute_force(fives: dict[str, int]) -> list[tuple[str, int]]:
    return sorted(((p, n) for p, n in fives.items() if n > 0), key=lambda e: -e[1])


def _assert_exact(got: list[LeaderEntry], fives: dict[str, int], first: int) -> None:
    """``got`` is a top ``first``: the counts match brute force, and so do the products,
    except which of those tied at the cut are shown (DynamoDB orders no ties)."""
    want = _brute_force(fives)[:first]
    assert [e.five_star_count for e in got] == [n for _, n in want]
    assert all(fives[e.product_id] == e.five_star_count for e in got)
    assert len({e.product_id for e in got}) == len(got)
    if want:
        cut = want[-1][1]
        assert {e.product_id for e in got if e.five_star_count > cut} == {
            p for p, n in want if n > cut
        }


async def _make(table: TableRef, product: str, rating: int = 5, author: str = "ann") -> Comment:
    made = await create_comment(table, NewComment(product, "en", rating, "t", author), backoff=FAST)
    return made.comment


async def _seed(table: TableRef, fives: dict[str, int]) -> dict[str, list[str]]:
    """Each product's 5-star comments (and one 3-star), bulk loaded: the entries are placed
    by the table's layout as recorded."""
    comments = [
        NewComment(product, "en", rating, "t", f"a{n}").stored_as(
            keys.new_comment_id(), "2024-03-01T00:00:00.000Z", None
        )
        for product, count in fives.items()
        for rating, n in [*((5, n) for n in range(count)), (3, 99)]
    ]
    await load_new_products(table, comments)
    made: dict[str, list[str]] = {p: [] for p in fives}
    for c in comments:
        if c.rating == 5:
            made[c.product_id].append(c.comment_id)
    return made


async def _entries_at_home(table: TableRef) -> None:
    report = await verify(table)
    assert report.exact, report.describe()
    assert not report.layout.migrating


@pytest.mark.engine
async def test_a_sharded_leaderboard_is_exact_against_brute_force(table: TableRef) -> None:
    own = await own_table(table, "shards")
    assert (await reshard_leaders(own, 4)).moved == 0  # an empty table: only the layout
    rng = random.Random(7)
    fives = {f"p{n:02d}": rng.choice([0, 1, 1, 2, 3, 5]) for n in range(16)}
    for k in range(4):  # every shard holds entries
        fives[next(f"x{n}" for n in range(100) if shard_of(f"x{n}", 4) == k)] = 2 + k
    made = await _seed(own, fives)
    # Some products lose 5-star comments, a few all of theirs (their entries go).
    for product in rng.sample(sorted(made), 5):
        for comment_id in made[product][: rng.randint(1, 2)]:
            await delete_comment(own, comment_id, backoff=FAST)
            fives[product] -= 1
    for first in (1, 3, 10, 100):
        _assert_exact(await leaderboard(own, first), fives, first)
    await _entries_at_home(own)


class _Slowed(ClientWrapper):
    """Pauses before each call of ``operations``, so that other tasks run in between."""

    def __init__(self, inner: DynamoClient, operations: set[str], pause: float) -> None:
        super().__init__(inner)
        self.operations = operations
        self.pause = pause

    async def _call(self, operation: str, kwargs: dict[str, Any]) -> Response:
        if operation in self.operations:
            await asyncio.sleep(self.pause)
        return await super()._call(operation, kwargs)


class _Interrupted(Exception):
    pass


class _StopAfter(ClientWrapper):
    """Raises after ``moves`` transactions: a migration killed half way."""

    def __init__(self, inner: DynamoClient, moves: int) -> None:
        super().__init__(inner)
        self.left = moves

    async def _call(self, operation: str, kwargs: dict[str, Any]) -> Response:
        if operation == "transact_write_items":
            if self.left == 0:
                raise _Interrupted
            self.left -= 1
        return await super()._call(operation, kwargs)


@pytest.mark.engine
async def test_reads_during_a_migration_are_exact(table: TableRef) -> None:
    own = await own_table(table, "shards")
    fives = {f"q{n:02d}": 1 + n % 4 for n in range(16)}
    await _seed(own, fives)
    mover = TableRef(_Slowed(own.client, {"transact_write_items"}, 0.002), own.name)
    reader = TableRef(own.client, own.name)  # another process: its own memory of the layout
    await leaderboard(reader, 5)  # it knows the one-shard layout before the move starts
    migration = asyncio.ensure_future(reshard_leaders(mover, 8, page_items=10))
    reads = 0
    while not migration.done():
        _assert_exact(await leaderboard(reader, 100), fives, 100)
        _assert_exact(await leaderboard(reader, 5), fives, 5)
        reads += 1
    done = await migration
    assert done.moved == 16
    assert reads > 3
    assert (await read_layout(own)) == LeaderLayout(8, None, 2)
    _assert_exact(await leaderboard(reader, 100), fives, 100)
    await _entries_at_home(own)


@pytest.mark.engine
async def test_a_migration_under_concurrent_writes_of_two_processes(table: TableRef) -> None:
    own = await own_table(table, "shards")
    fives = {f"r{n:02d}": n % 3 for n in range(12)}
    made = await _seed(own, fives)
    # Two processes, each with its own memory of the layout; both learn the old one first.
    procs = [TableRef(own.client, own.name) for _ in range(2)]
    stale = TableRef(own.client, own.name)
    for proc in (*procs, stale):
        await leaderboard(proc, 1)
    mover = TableRef(_Slowed(own.client, {"transact_write_items"}, 0.001), own.name)
    rng = random.Random(11)
    stop = asyncio.Event()

    written = 0

    async def writer(proc: TableRef, seed: int) -> None:
        nonlocal written
        local = random.Random(seed)
        while not stop.is_set():
            written += 1
            product = local.choice(sorted(fives))
            if made[product] and local.random() < 0.45:
                comment_id = made[product].pop(local.randrange(len(made[product])))
                await delete_comment(proc, comment_id, backoff=FAST)
                fives[product] -= 1
            else:
                c = await _make(proc, product, 5, f"w{uuid.uuid4().hex[:6]}")
                made[product].append(c.comment_id)
                fives[product] += 1

    # New products' first entries, written by a process that learnt the layout before the
    # move and wrote nothing since: placed by the table's layout all the same.
    late = [f"new{n}" for n in range(3)]
    writers = [asyncio.ensure_future(writer(p, rng.randrange(1 << 30))) for p in procs]
    await reshard_leaders(mover, 4, page_items=10)
    stop.set()
    await asyncio.gather(*writers)
    assert written > 10  # writes and moves did interleave
    assert stale.leader_layout.known == LeaderLayout()
    for product in late:
        await _make(stale, product)
        fives[product] = 1
    _assert_exact(await leaderboard(procs[1], 100), fives, 100)
    await _entries_at_home(own)


@pytest.mark.engine
async def test_an_interrupted_migration_stays_exact_and_resumes(table: TableRef) -> None:
    own = await own_table(table, "shards")
    fives = {f"s{n:02d}": 1 + n % 3 for n in range(12)}
    made = await _seed(own, fives)
    killed = TableRef(_StopAfter(own.client, 5), own.name)
    with pytest.raises(_Interrupted):
        await reshard_leaders(killed, 4, page_items=5)
    half = await read_layout(own)
    assert (half.shards, half.previous) == (4, 1)
    # Meanwhile: exact reads, exact verify (either shard), writes placed by the new layout.
    _assert_exact(await leaderboard(own, 100), fives, 100)
    assert (await verify(own)).exact
    await delete_comment(own, made["s00"].pop(), backoff=FAST)
    fives["s00"] -= 1
    await _make(own, "s01")
    fives["s01"] += 1
    with pytest.raises(StorageUnavailable, match="unfinished"):
        await reshard_leaders(own, 8)
    lines: list[str] = []
    again = await reshard_leaders(own, 4, progress=lines.append, page_items=5)
    assert again.resumed
    assert any("resuming" in line for line in lines)
    assert any("entries moved" in line for line in lines)
    await _entries_at_home(own)
    _assert_exact(await leaderboard(own, 100), fives, 100)
    assert (await reshard_leaders(own, 4)).already_done
    # And back to the single partition of today.
    back = await reshard_leaders(own, 1)
    assert back.moved == sum(1 for n in fives.values() if n > 0)
    await _entries_at_home(own)
    _assert_exact(await leaderboard(own, 100), fives, 100)


@pytest.mark.engine
async def test_verify_reports_an_entry_in_the_wrong_shard_and_repair_moves_it(
    table: TableRef,
) -> None:
    own = await own_table(table, "shards")
    await reshard_leaders(own, 4)
    await _make(own, "t1")
    home = home_partition("t1", 4)
    wrong = next(p for p in partitions(4) if p != home)
    key = {"PK": {"S": keys.product_pk("t1")}, "SK": {"S": keys.STATS_ALL}}
    await own.client.update_item(
        TableName=own.name,
        Key=key,
        UpdateExpression="SET GSIPK = :p",
        ExpressionAttributeValues={":p": {"S": wrong}},
    )
    report = await verify(own)
    (drift,) = report.drifts
    assert drift.stored_leader == (wrong, keys.leader_sort_key(1))
    assert drift.expected_leader == (home, keys.leader_sort_key(1))
    assert f"in {wrong} != " in drift.describe()
    fixed = await repair(own, report)
    assert (fixed.repaired, fixed.skipped) == (1, 0)
    await _entries_at_home(own)
