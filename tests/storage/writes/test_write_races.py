"""A stateful model test of the write path with real concurrency, and readers during writes.

Each step runs a batch of writes at once (creates, deletes of live and dead ids, re-creates
with reused idempotency keys, bursts of one request) through two "processes" (table refs
with their own locks) against DynamoDB Local, with readers paging listings while the
writes are in flight. After every step, the counters, the histograms per language, the
leaderboard entry (in its product's shard of a leaderboard of three), the authors' slots and
every listing must equal a recount of the model.

Readers check the guarantee a client relies on: a page contains, in order, every matching
comment that existed for the whole duration of the read and lies between the page's bounds.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from hypothesis import Phase, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule

from server.dev.local_engine import LocalEngine
from storage.base.errors import (
    CommentNotFound,
    CommentsPerProductLimit,
    IdempotencyKeyReused,
)
from storage.engine.retry import Backoff
from storage.engine.table import TableRef
from storage.model import rules
from storage.model.comments import Comment, Direction, ListingFilter, NewComment, PageRequest
from storage.ops.reshard import reshard_leaders
from storage.ops.verify import verify
from storage.reads.cursor import decode_cursor, encode_cursor
from storage.reads.reader import get_counts, list_comments
from storage.writes import WriteLimits, create_comment, delete_comment
from tests.helpers import LoopHarness, oracle, walk

PRODUCTS = ("a", "b")
AUTHORS = ("ann", "bob", "cy")
LANGUAGES = ("en", "de")
KEYS = ("k1", "k2", None)
PER_PRODUCT = 3
LIMITS = WriteLimits(per_product=PER_PRODUCT, per_hour=None)
BACKOFF = Backoff(attempts=8, base=0.002, cap=0.05)
FILTERS: tuple[tuple[str | None, frozenset[int] | None], ...] = (
    (None, None),
    ("en", None),
    (None, frozenset({5})),
    (None, frozenset({1, 5})),
    ("de", frozenset({2, 4, 5})),
)


@dataclass(frozen=True)
class Create:
    author: str
    product: str
    rating: int
    language: str
    key: str | None
    copies: int = 1  # a burst: the same request several times at once


@dataclass(frozen=True)
class Delete:
    pick: int  # index into every id seen so far (dead ones too)
    as_moderator: bool


@dataclass(frozen=True)
class Read:
    filter_no: int
    size: int
    direction: Direction
    start_pick: int | None  # a cursor at a comment that exists, or the first page


creates = st.builds(
    Create,
    st.sampled_from(AUTHORS),
    st.sampled_from(PRODUCTS),
    st.sampled_from([1, 2, 4, 5, 5]),
    st.sampled_from(LANGUAGES),
    st.sampled_from(KEYS),
    st.sampled_from([1, 1, 3]),
)
deletes = st.builds(Delete, st.integers(0, 10_000), st.booleans())
reads = st.builds(
    Read,
    st.integers(0, len(FILTERS) - 1),
    st.integers(0, 4),
    st.sampled_from(Direction),
    st.none() | st.integers(0, 10_000),
)


HARNESS: LoopHarness | None = None


class WriteRaces(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        assert HARNESS is not None
        assert HARNESS.tables is not None
        self.run = HARNESS.run
        self.tables = HARNESS.tables
        self.prefix = f"r{uuid.uuid4().hex[:8]}-"
        self.live: dict[str, Comment] = {}
        self.seen: list[str] = []  # every id ever created, for deletes of dead ids
        self.bindings: dict[tuple[str, str], tuple[tuple[Any, ...], str]] = {}
        self.languages_used: set[tuple[str, str]] = set()

    def pid(self, product: str) -> str:
        return self.prefix + product

    def author(self, name: str) -> str:
        return self.prefix + name

    @initialize()
    def nothing_yet(self) -> None:
        pass

    @rule(
        batch=st.lists(st.one_of(creates, deletes), min_size=2, max_size=8),
        readers=st.lists(reads, max_size=3),
    )
    def step(self, batch: list[Create | Delete], readers: list[Read]) -> None:
        self.run(self._step(batch, readers))

    async def _step(self, batch: list[Create | Delete], readers: list[Read]) -> None:
        before = dict(self.live)
        bindings_before = dict(self.bindings)
        targets = {
            self.seen[op.pick % len(self.seen)]
            for op in batch
            if isinstance(op, Delete) and self.seen
        }
        stable = {cid: c for cid, c in before.items() if cid not in targets}
        jobs: list[tuple[Any, Any]] = []
        n = 0
        for op in batch:
            if isinstance(op, Create):
                for _ in range(op.copies):
                    table = self.tables[n % 2]
                    n += 1
                    jobs.append((op, self._create(table, op)))
            elif self.seen:
                cid = self.seen[op.pick % len(self.seen)]
                author = None if op.as_moderator else before.get(cid, _nobody()).author_id
                table = self.tables[n % 2]
                n += 1
                jobs.append(
                    ((op, cid), delete_comment(table, cid, author_id=author, backoff=BACKOFF))
                )
        read_jobs = [self._read(r, stable, before) for r in readers]
        outcomes = await asyncio.gather(
            *(job for _, job in jobs), *read_jobs, return_exceptions=True
        )
        # Successes first: a refusal is judged against the bindings and slots they made.
        done = list(zip((op for op, _ in jobs), outcomes, strict=False))
        for op, outcome in sorted(done, key=lambda d: isinstance(d[1], BaseException)):
            self._absorb(op, outcome, before, bindings_before)
        for outcome in outcomes[len(jobs) :]:
            if isinstance(outcome, BaseException):
                raise outcome
        # A reader may also have seen a comment created in this batch: fine, it existed.

    async def _create(self, table: TableRef, op: Create) -> Any:
        new = NewComment(
            self.pid(op.product),
            op.language,
            op.rating,
            f"{op.rating} stars in {op.language}",
            self.author(op.author),
            idempotency_key=op.key,
        )
        return await create_comment(table, new, write_limits=LIMITS, backoff=BACKOFF)

    def _absorb(
        self,
        op: Any,
        outcome: Any,
        before: dict[str, Comment],
        bindings_before: dict[tuple[str, str], tuple[tuple[Any, ...], str]],
    ) -> None:
        if isinstance(op, Create):
            request = (op.product, op.rating, op.language)
            binding = None if op.key is None else self.bindings.get((op.author, op.key))
            if isinstance(outcome, IdempotencyKeyReused):
                assert binding is not None, op
                assert binding[0] != request, (op, binding)
                return
            if isinstance(outcome, CommentsPerProductLimit):
                # A retry of a request that had succeeded before this batch must replay, not
                # count against the limit. (Within a batch, a copy may be refused before
                # its twin commits in a slot a concurrent delete freed: that is correct.)
                earlier = None if op.key is None else bindings_before.get((op.author, op.key))
                assert earlier is None or earlier[0] != request, "a retry hit the limit"
                held = [
                    c
                    for c in {**before, **self.live}.values()
                    if c.author_id == self.author(op.author)
                    and c.product_id == self.pid(op.product)
                ]
                assert len(held) >= PER_PRODUCT, (op, held)
                return
            if isinstance(outcome, BaseException):
                raise outcome
            comment = outcome.comment
            if op.key is not None:
                if binding is None:
                    self.bindings[(op.author, op.key)] = (request, comment.comment_id)
                else:
                    assert binding == (request, comment.comment_id), (op, binding, comment)
            if outcome.created:
                assert comment.comment_id not in self.seen
                self.seen.append(comment.comment_id)
                self.live[comment.comment_id] = comment
                self.languages_used.add((comment.product_id, comment.language))
            else:
                assert op.key is not None, "only a key makes a create return an older result"
            return
        (_delete, cid) = op
        if isinstance(outcome, CommentNotFound):
            assert cid not in self.live, f"{cid} exists but its delete found nothing"
            return
        if isinstance(outcome, BaseException):
            raise outcome
        assert self.live.pop(cid) == outcome
        assert cid in before, "deleted a comment that was not there before the batch"

    async def _read(
        self, read: Read, stable: dict[str, Comment], before: dict[str, Comment]
    ) -> None:
        language, ratings = FILTERS[read.filter_no]
        product = self.pid(PRODUCTS[read.filter_no % len(PRODUCTS)])
        listing = ListingFilter(product, language, ratings)
        matching = oracle(stable.values(), listing)
        position = None
        if read.start_pick is not None and matching:
            position = matching[read.start_pick % len(matching)].sort_key
            position = decode_cursor(encode_cursor(position))
        page = await list_comments(
            self.tables[0], listing, PageRequest(read.size, read.direction, position)
        )
        got = [c.sort_key for c in page.comments]
        assert got == sorted(got, reverse=True), "a page out of order"
        assert len(got) <= read.size
        assert len(set(got)) == len(got)
        forward = read.direction is Direction.FORWARD
        # The stable comments this page must hold: beyond the position, up to the page's
        # far edge (or everything, when the page says nothing more exists).
        owed = [
            c.sort_key
            for c in matching
            if position is None or (c.sort_key < position if forward else c.sort_key > position)
        ]
        if page.has_more:
            if read.size == 0:
                return  # an empty page that says more exists: nothing is owed
            assert got, "has_more with an empty page"
            edge = got[-1] if forward else got[0]
            owed = [k for k in owed if (k >= edge if forward else k <= edge)]
        missing = [k for k in owed if k not in got]
        assert not missing, f"page dropped comments that existed throughout: {missing}"

    @invariant()
    def storage_equals_the_model(self) -> None:
        self.run(self._check())

    async def _check(self) -> None:
        table = self.tables[0]
        for product in PRODUCTS:
            pid = self.pid(product)
            mine = [c for c in self.live.values() if c.product_id == pid]
            counts = await get_counts(table, pid, None)
            expected = tuple(sum(1 for c in mine if c.rating == r) for r in rules.RATINGS)
            assert counts.by_rating == expected, (pid, counts, expected)
            for _, used in {s for s in self.languages_used if s[0] == pid}:
                counts = await get_counts(table, pid, used)
                expected = tuple(
                    sum(1 for c in mine if c.rating == r and c.language == used)
                    for r in rules.RATINGS
                )
                assert counts.by_rating == expected, (pid, used, counts, expected)
            for language, ratings in FILTERS:
                listing = ListingFilter(pid, language, ratings)
                found, _ = await walk(table, listing, 2, Direction.FORWARD)
                assert found == oracle(mine, listing), (listing, found)
        report = await verify(table)
        assert report.exact, report.describe()
        held: dict[tuple[str, str], int] = {}
        for c in self.live.values():
            held[(c.author_id, c.product_id)] = held.get((c.author_id, c.product_id), 0) + 1
        assert max(held.values(), default=0) <= PER_PRODUCT


def _nobody() -> Comment:
    return Comment("0" * 32, "x", "en", 1, None, "x", "nobody", "2000-01-01T00:00:00.000Z")


@pytest.fixture(scope="module")
def harness(engine: LocalEngine) -> Iterator[LoopHarness]:
    global HARNESS
    HARNESS = LoopHarness(engine.endpoint_url, "races")
    HARNESS.start()
    assert HARNESS.tables is not None
    # A leaderboard of three shards: every first 5-star comment of a product checks the
    # layout, and verify checks every entry is in its product's shard.
    HARNESS.run(reshard_leaders(HARNESS.tables[0], 3))
    try:
        yield HARNESS
    finally:
        HARNESS.close()
        HARNESS = None


@pytest.mark.slow
def test_writes_and_reads_race_and_stay_exact(harness: LoopHarness) -> None:
    # Concurrency makes a failure hard to replay exactly, so shrinking is short: the first
    # failure, with its steps, is what matters.
    WriteRaces.TestCase.settings = settings(
        settings.default,
        max_examples=25,
        stateful_step_count=8,
        phases=[Phase.explicit, Phase.reuse, Phase.generate],
        report_multiple_bugs=False,
    )
    WriteRaces.TestCase().runTest()
