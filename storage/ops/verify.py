"""Recount every product's counters, leaderboard entry and per-author slots from the
comments, every comment's helpful counts from its vote items, and every comment's index
keys from the comment itself.

``verify`` scans the table once (strongly consistent), recounts, and reports every stats
item whose counters or leaderboard entry disagree with the comments, every author's
per-product count that disagrees with the comments holding a slot, and every comment
whose vote counts disagree with its votes (a vote's follow-up that never ran: see
``storage.writes.ballots``) or whose index keys are not those its status, product,
language, rating, verified mark and counts give it (``INDEX_KEY_ATTRS``: the listings'
partition keys, the shared sort key, the helpful order's HSK, the moderation queue's keys).
A comment with a wrong or missing key is missing from a listing, or in one it left, while
the counters still count it: written by code of an older layout during a migration, or by
hand.
Facet entries and counters (a group's among them, by the group each comment stores),
the counts groups hold of products and groups' member items are checked too
(``storage.ops.facet_check``, ``storage.ops.group_check``).
``repair`` rewrites those items, each under the condition that it still holds what the scan
saw, so a write racing with the repair is never overwritten (that item is reported as
skipped; run again).
"""

from __future__ import annotations

import asyncio
import math
import time
from collections import defaultdict
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from storage.base.errors import ConditionFailed
from storage.base.expressions import Attr, Update, check_request, put_request
from storage.base.types import Item, Response
from storage.engine.leaderboard_layout import read_layout
from storage.engine.metering import READ_UNIT_BYTES, call_figures, item_bytes
from storage.engine.table import TableRef
from storage.model import keys
from storage.model.comments import Status, Vote
from storage.model.indexes import HELPFUL_SORT_KEY, Index
from storage.model.items import (
    SLOT_COUNT_ATTR,
    VOTE_ATTR,
    comment_to_item,
    holds_slot,
    is_comment_item,
    item_to_comment,
    item_version,
    number,
)
from storage.model.leaderboard import LAYOUT_KEY, LeaderLayout
from storage.model.stats import (
    LEADER_ATTR,
    TALLY_SIZE,
    Leader,
    StatsScope,
    StoredStats,
    count_in,
    is_stats_item,
    name_scope,
    scope_of,
    set_counts,
    stats_key,
    unchanged_since,
)
from storage.ops.facet_check import EntryDrift, FacetCounterDrift, FacetTally, repair_facets
from storage.ops.group_check import GroupDrift, GroupTally, repair_groups
from storage.writes.state import Stored
from storage.writes.transaction import CallBudget, Part, transact

# Every attribute an index keys on: a comment's place in each listing, in the helpful order
# and in the moderation queue.
INDEX_KEY_ATTRS = frozenset(
    {index.partition_attr for index in Index} | {index.sort_attr for index in Index}
)

# A count item's key: (author partition, PRODUCT#<product>) for an author's comments on a
# product, or the moderation queue's length.
SlotKey = tuple[str, str]
_QUEUE: SlotKey = (keys.QUEUE_PK, keys.QUEUE_COUNT_SK)


@dataclass(frozen=True, slots=True)
class SlotDrift:
    """A count item (an author's comments on a product, the moderation queue's length) that
    disagrees with the comments."""

    key: SlotKey
    stored: int | None
    expected: int

    def describe(self) -> str:
        what = "pending comments" if self.key == _QUEUE else "author's comments"
        return f"{self.key[0]} {self.key[1]}: {what} {self.stored} != {self.expected}"


@dataclass(frozen=True, slots=True)
class Drift:
    """One stats item that disagrees with its comments."""

    product_id: str
    language: str | None
    stored: tuple[int, ...]  # count_1..count_5, verified_1..verified_5, the two totals
    expected: tuple[int, ...]
    stored_leader: Leader | None  # the leaderboard entry's partition and GSISK (S items only)
    expected_leader: Leader | None
    raw: Item  # the stats item as scanned, for the repair's condition

    def describe(self) -> str:
        scope = self.language or "all languages"
        parts = []
        # stored and expected: five counts, five verified counts, then the two totals.
        for label, picked in (("counts", [0, 1, 2, 3, 4, 10]), ("verified", [5, 6, 7, 8, 9, 11])):
            have = [self.stored[i] for i in picked]
            want = [self.expected[i] for i in picked]
            if have != want:
                parts.append(f"{label} {have} != {want}")
        if self.stored_leader != self.expected_leader:
            stored, expected = map(_leader_text, (self.stored_leader, self.expected_leader))
            parts.append(f"leaderboard {stored} != {expected}")
        return f"{self.product_id} ({scope}): " + "; ".join(parts)


def _leader_text(leader: Leader | None) -> str:
    return "none" if leader is None else f"{leader[1]} in {leader[0]}"


@dataclass(frozen=True, slots=True)
class VoteDrift:
    """A comment whose helpful counts disagree with its vote items, or whose index keys
    (``INDEX_KEY_ATTRS``) are not those the comment and its votes give it."""

    comment_id: str
    stored: tuple[int, int]  # helpful, not helpful
    expected: tuple[int, int]
    raw: Item  # the comment item as scanned, for the repair's condition
    stored_key: str | None = None  # HSK as scanned, and as the votes say (None: no HSK)
    expected_key: str | None = None
    # The index key attributes that are wrong, missing or left over (HSK among them when
    # it is the only one and the counts are right).
    wrong_keys: tuple[str, ...] = ()

    def describe(self) -> str:
        parts = []
        if self.stored != self.expected:
            parts.append(f"votes {list(self.stored)} != {list(self.expected)}")
        if self.stored_key != self.expected_key:
            parts.append(f"helpful order key {self.stored_key} != {self.expected_key}")
        others = [a for a in self.wrong_keys if a != HELPFUL_SORT_KEY]
        if others:
            parts.append(f"index keys {', '.join(others)} not as the comment says")
        return f"comment {self.comment_id}: " + "; ".join(parts)


def wrong_index_keys(item: Item, expected: Item) -> tuple[str, ...]:
    """The index key attributes in which ``item`` differs from ``expected`` (the item as
    ``comment_to_item`` writes it), sorted."""
    return tuple(sorted(a for a in INDEX_KEY_ATTRS if item.get(a) != expected.get(a)))


@dataclass(frozen=True, slots=True)
class Report:
    comments: int
    stats_items: int
    drifts: tuple[Drift, ...]
    slot_drifts: tuple[SlotDrift, ...] = ()
    repaired: int = 0
    skipped: int = 0
    vote_drifts: tuple[VoteDrift, ...] = ()
    # The leaderboard's layout the entries were checked against (after the scan).
    layout: LeaderLayout = field(default_factory=LeaderLayout)
    facet_drifts: tuple[FacetCounterDrift, ...] = ()
    entry_drifts: tuple[EntryDrift, ...] = ()
    group_drifts: tuple[GroupDrift, ...] = ()
    # Products whose group move is not complete (not a drift: each comment counts in the
    # group it stores, exactly; ``move-group`` finishes it).
    moving: tuple[str, ...] = ()

    @property
    def exact(self) -> bool:
        return not (
            self.drifts
            or self.slot_drifts
            or self.vote_drifts
            or self.facet_drifts
            or self.entry_drifts
            or self.group_drifts
        )

    def describe(self) -> list[str]:
        return (
            [d.describe() for d in self.drifts]
            + [d.describe() for d in self.slot_drifts]
            + [d.describe() for d in self.vote_drifts]
            + [d.describe() for d in self.facet_drifts]
            + [d.describe() for d in self.entry_drifts]
            + [d.describe() for d in self.group_drifts]
        )

    def to_json(self) -> dict[str, Any]:
        """The report as JSON data (``verify-stats --json``), each difference with the
        line ``describe`` gives it."""
        return {
            "exact": self.exact,
            "comments": self.comments,
            "statsItems": self.stats_items,
            "leaderboardLayout": self.layout.describe(),
            "stats": [
                {
                    "productId": d.product_id,
                    "language": d.language,
                    "stored": list(d.stored),
                    "expected": list(d.expected),
                    "storedLeader": None if d.stored_leader is None else list(d.stored_leader),
                    "expectedLeader": (
                        None if d.expected_leader is None else list(d.expected_leader)
                    ),
                    "description": d.describe(),
                }
                for d in self.drifts
            ],
            "counts": [
                {
                    "key": list(d.key),
                    "stored": d.stored,
                    "expected": d.expected,
                    "description": d.describe(),
                }
                for d in self.slot_drifts
            ],
            "commentDrifts": [
                {
                    "commentId": d.comment_id,
                    "storedVotes": list(d.stored),
                    "expectedVotes": list(d.expected),
                    "wrongKeys": list(d.wrong_keys),
                    "description": d.describe(),
                }
                for d in self.vote_drifts
            ],
            "facetCounts": [
                {
                    "key": list(d.key),
                    "stored": d.stored,
                    "expected": d.expected,
                    "description": d.describe(),
                }
                for d in self.facet_drifts
            ],
            "facetEntries": [
                {"key": list(d.key), "description": d.describe()} for d in self.entry_drifts
            ],
            "groups": [d.to_json() for d in self.group_drifts],
            "groupMovesInProgress": list(self.moving),
            "repaired": self.repaired,
            "skipped": self.skipped,
        }


ProgressFn = Callable[[int], None]


class ReadPace:
    """At most ``units_per_second`` read capacity units on average, so that a scan of a
    production table leaves the traffic its capacity (and an on-demand table's bill) alone.
    What a page consumed is what the response reports; where it reports nothing (an engine
    that does not), the page's bytes as DynamoDB counts a consistent scan: one unit per
    4 KB begun. Unknown is never free."""

    def __init__(
        self,
        units_per_second: float,
        *,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    ) -> None:
        if units_per_second <= 0:
            raise ValueError("the read rate is a number of capacity units per second above 0")
        self.rate = units_per_second
        self.clock, self.sleep = clock, sleep
        self.start: float | None = None
        self.units = 0.0

    @property
    def page_items(self) -> int:
        """Items per page: about two seconds' worth of small items, at least 10."""
        return max(10, min(1000, int(self.rate * 2)))

    async def consumed(self, response: Response) -> None:
        """Count one page, and wait until the average is back within the rate."""
        if self.start is None:
            self.start = self.clock()
        units = call_figures("scan", response).read_capacity
        if not units:
            size = sum(item_bytes(item) for item in response.get("Items", []))
            units = float(max(1, math.ceil(size / READ_UNIT_BYTES)))
        self.units += units
        ahead = self.start + self.units / self.rate - self.clock()
        if ahead > 0:
            await self.sleep(ahead)


async def scan_pages(table: TableRef, pace: ReadPace | None = None) -> AsyncIterator[Response]:
    """Every page of a strongly consistent scan of the whole table, in turn; at ``pace``
    when given."""
    params: dict[str, Any] = {"TableName": table.name, "ConsistentRead": True}
    if pace is not None:
        params.update(ReturnConsumedCapacity="TOTAL", Limit=pace.page_items)
    while True:
        response = await table.client.scan(**params)
        if pace is not None:
            await pace.consumed(response)
        yield response
        if "LastEvaluatedKey" not in response:
            return
        params["ExclusiveStartKey"] = response["LastEvaluatedKey"]


async def verify(
    table: TableRef, *, progress: ProgressFn | None = None, pace: ReadPace | None = None
) -> Report:
    """Recount everything and report each stats item that is not exact, every leaderboard
    entry outside its product's shard included."""
    before = await read_layout(table)
    tallies: dict[StatsScope, list[int]] = {}
    stored: dict[StatsScope, Item] = {}
    slots: defaultdict[SlotKey, int] = defaultdict(int)
    stored_slots: dict[SlotKey, int] = {}
    comments = 0
    scanned = 0
    # Per comment partition: the comment item, and its votes counted (helpful, not).
    comment_items: dict[str, Item] = {}
    votes: defaultdict[str, list[int]] = defaultdict(lambda: [0, 0])
    facets = FacetTally()
    groups = GroupTally()
    async for response in scan_pages(table, pace):
        for item in response.get("Items", []):
            pk, sk = item["PK"]["S"], item["SK"]["S"]
            if facets.see(item) or groups.see(item):
                continue
            if sk.startswith(keys.VOTE_PREFIX):
                votes[pk][Vote(item[VOTE_ATTR]["S"]) is not Vote.HELPFUL] += 1
            elif is_comment_item(item):
                comments += 1
                comment_items[pk] = item
                c = item_to_comment(item)
                facets.comment(item, c)
                groups.comment(c)
                if c.published:
                    count_in(tallies, c.product_id, c.language, c.rating, verified=c.verified)
                if c.status is Status.PENDING:
                    slots[_QUEUE] += 1
                if holds_slot(item):
                    pid = c.product_id
                    author = item["author"]["S"]
                    slots[(keys.author_pk(author), keys.author_product_sk(pid))] += 1
            elif is_stats_item(item):
                stored[scope_of(item)] = item
            elif (pk, sk) == _QUEUE or (
                pk.startswith(keys.AUTHOR_PREFIX) and sk.startswith(keys.PRODUCT_PREFIX)
            ):
                stored_slots[(pk, sk)] = number(item, SLOT_COUNT_ATTR)
        scanned += response.get("ScannedCount", 0)
        if progress is not None:
            progress(scanned)
    # A migration that started or ended during the scan may have moved entries: each may
    # be where either layout allows.
    after = await read_layout(table)
    drifts = []
    for scope in sorted(tallies.keys() | stored.keys(), key=lambda k: (k[0], k[1] or "")):
        tally = tallies.get(scope, [0] * TALLY_SIZE)
        drift = _compare(scope, tally, stored.get(scope, {}), (before, after))
        if drift is not None:
            drifts.append(drift)
    slot_drifts = tuple(
        SlotDrift(key, stored_slots.get(key), slots.get(key, 0))
        for key in sorted(slots.keys() | stored_slots.keys())
        if stored_slots.get(key, 0) != slots.get(key, 0)
    )
    vote_drifts = []
    for pk, item in comment_items.items():
        wrong = comment_drift(item, votes.get(pk, (0, 0)))
        if wrong is not None:
            vote_drifts.append(wrong)
    return Report(
        comments,
        len(stored),
        tuple(drifts),
        slot_drifts,
        vote_drifts=tuple(vote_drifts),
        layout=after,
        facet_drifts=facets.counter_drifts(),
        entry_drifts=facets.entry_drifts(),
        group_drifts=groups.drifts(),
        moving=groups.moving,
    )


def _compare(
    scope: StatsScope, counts: list[int], item: Item, layouts: tuple[LeaderLayout, ...]
) -> Drift | None:
    have = StoredStats.of(item)
    product_id, language = scope
    home = None if language is not None else layouts[-1].home(product_id)
    want = StoredStats.expected(counts, home=home)
    allowed = set().union(*(layout.allowed(product_id) for layout in layouts))
    if have.leader is not None and want.leader is not None and have.leader[0] in allowed:
        want = replace(want, leader=(have.leader[0], want.leader[1]))
    if have == want:
        return None
    return Drift(
        scope[0],
        scope[1],
        (*have.counts, *have.totals),
        (*want.counts, *want.totals),
        have.leader,
        want.leader,
        item,
    )


async def repair(table: TableRef, report: Report) -> Report:
    """Rewrite every drifting item, unless it changed since the scan (or the leaderboard's
    layout did, for an entry)."""
    repaired = skipped = 0
    for drift in report.drifts:
        parts = [Part("stats", {"Update": _repair_request(table, drift)})]
        if drift.language is None:
            check = check_request(table.name, LAYOUT_KEY, report.layout.unchanged())
            parts.append(Part("layout", {"ConditionCheck": check}))
        if await transact(table, parts, CallBudget(1)) is None:
            repaired += 1
        else:
            skipped += 1  # written since the scan, or the layout changed: the next run
    # Each call named as it is (no getattr): tests/deploy/test_iam.py derives the actions
    # the operations role needs from the calls it can read.
    for slot in report.slot_drifts:
        try:
            await table.client.update_item(**_slot_repair_request(table, slot))
            repaired += 1
        except ConditionFailed:
            skipped += 1  # written since the scan: left for the next run
    for comment in report.vote_drifts:
        try:
            await table.client.put_item(**comment_repair_request(table, comment))
            repaired += 1
        except ConditionFailed:
            skipped += 1
    fixed, left = await repair_facets(table, report.facet_drifts, report.entry_drifts)
    grouped, stale = await repair_groups(table, report.group_drifts)
    return replace(report, repaired=repaired + fixed + grouped, skipped=skipped + left + stale)


def comment_drift(item: Item, votes: Sequence[int] | None) -> VoteDrift | None:
    """How the comment ``item`` disagrees with its ``votes`` counted (helpful, not helpful;
    None: trust the counts it stores) and with the index keys it should carry; None when
    it does not."""
    c = item_to_comment(item)
    helpful, not_helpful = (c.helpful, c.not_helpful) if votes is None else votes
    fixed = replace(c, helpful=helpful, not_helpful=not_helpful)
    expected = comment_to_item(fixed, version=item_version(item), holds_slot=holds_slot(item))
    wrong = wrong_index_keys(item, expected)
    if (c.helpful, c.not_helpful) == (helpful, not_helpful) and not wrong:
        return None
    return VoteDrift(
        c.comment_id,
        (c.helpful, c.not_helpful),
        (helpful, not_helpful),
        item,
        item.get(HELPFUL_SORT_KEY, {}).get("S"),
        expected.get(HELPFUL_SORT_KEY, {}).get("S"),
        wrong,
    )


def comment_repair_request(table: TableRef, drift: VoteDrift) -> dict[str, Any]:
    """The comment rewritten whole with its counts as its votes say and every index key as
    the comment says, on the condition that it is the version scanned."""
    helpful, not_helpful = drift.expected
    fixed = replace(item_to_comment(drift.raw), helpful=helpful, not_helpful=not_helpful)
    stored = Stored.of(drift.raw)
    item = comment_to_item(fixed, version=stored.version + 1, holds_slot=stored.holds_slot)
    return put_request(table.name, item, stored.unchanged())


def _slot_repair_request(table: TableRef, drift: SlotDrift) -> dict[str, Any]:
    u = Update()
    u.set(SLOT_COUNT_ATTR, drift.expected)
    n = Attr(SLOT_COUNT_ATTR)
    u.condition(n.not_exists() if drift.stored is None else n.eq(drift.stored))
    key = {"PK": {"S": drift.key[0]}, "SK": {"S": drift.key[1]}}
    return u.request(table.name, key)


def _repair_request(table: TableRef, drift: Drift) -> dict[str, Any]:
    u = Update()
    name_scope(u, drift.product_id, drift.language)
    home = None if drift.expected_leader is None else drift.expected_leader[0]
    if drift.language is None and home is None:
        home = keys.LEADERS  # no entry is expected: the partition is not written
    set_counts(u, drift.expected[:TALLY_SIZE], home=home)
    unchanged_since(u, drift.raw)
    # The entry as scanned: a move by a migration since then is not undone.
    partition = drift.raw.get(LEADER_ATTR)
    u.condition(
        Attr(LEADER_ATTR).not_exists() if partition is None else Attr(LEADER_ATTR).eq(partition)
    )
    return u.request(table.name, stats_key(drift.product_id, drift.language))
