"""A stateful model test of every transition of a comment's life, with real concurrency.

Each step runs several writes at once against DynamoDB Local, through two "processes"
(table refs with their own locks): creates under POST and PRE moderation by verified and
unverified authors, the author's edits of rating, language and text (and others' edits,
refused), approvals and rejections, reports by several viewers up to the threshold (the
author's own refused), merchant replies and their removal, deletes by the author, by
someone else (refused) or by a moderator. The ``contend`` rule aims several of them at one
comment at once (edits against deletes, approvals against edits against reports), and
``mob`` has several viewers, some twice, report one published comment at once while other
writes to it race with them.

The model says what each transition does, written here from DESIGN.md ("The life of a
comment"), not from the code. Writes to one comment may commit in any order, so after
every step the stored comment, its reports, and every write's answer must be those of
some order of that step's writes to it (a vote answers with the comment as read after it
committed: a state at or after its place in that order). Then the counters per language and overall
(verified ones too), the leaderboard, lastCommentedAt, every listing (languages, rating
sets, verified only; the unfiltered ones in both directions), the moderation queue and the
author index must equal what the model says of the comments as stored, and verify must
find the table exact.
"""

from __future__ import annotations

import asyncio
import enum
from collections.abc import Awaitable, Callable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from functools import partial
from typing import Any

import pytest
from hypothesis import Phase, event, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule

from server.dev.local_engine import LocalEngine
from storage.base.errors import (
    CommentNotFound,
    NoReply,
    NotAuthor,
    NotPublished,
    OwnComment,
    StorageError,
)
from storage.engine.retry import Backoff
from storage.engine.table import TableRef
from storage.model import keys, rules
from storage.model.comments import (
    REPORT_REASONS,
    Comment,
    Direction,
    ListingFilter,
    Moderation,
    ModerationMode,
    NewComment,
    PageRequest,
    Reply,
    Status,
    Vote,
)
from storage.model.items import VOTE_ATTR, is_comment_item, item_to_comment
from storage.ops.verify import scan_pages, verify
from storage.reads.executor import Page
from storage.reads.leaders import leaderboard
from storage.reads.reader import author_comments, get_counts, last_commented_at, moderation_queue
from storage.writes import create_comment, delete_comment
from storage.writes.create import CreateResult
from storage.writes.edit import Edit as EditRequest
from storage.writes.edit import edit_comment
from storage.writes.moderate import Decision, moderate_comment
from storage.writes.reply import delete_reply, reply_to_comment
from storage.writes.reports import ReportResult, report_comment
from storage.writes.votes import VoteResult, vote_helpful
from tests.helpers import LoopHarness, oracle, walk

PRODUCTS = ("a", "b")
AUTHORS = ("ann", "bob")
# Viewers who report: the authors themselves (refused on their own comments) and two more.
REPORTERS = (*AUTHORS, "rita", "ravi")
STRANGER = "zed"  # writes nothing; edits and deletes as them are refused
MODERATOR = "mod"
MERCHANT = "Shop"
LANGUAGES = ("en", "de")
THRESHOLD = 2
# Examples, and steps in each (the first batch of creates is one of them). The suite must
# stay well under a minute: every step checks every listing, counter and index.
EXAMPLES = 10
STEPS = 8
BACKOFF = Backoff(attempts=8, base=0.002, cap=0.05)
EPOCH = datetime(2025, 1, 1, tzinfo=UTC)
# Listings checked after every step: (language, ratings, verified only).
FILTERS: tuple[tuple[str | None, frozenset[int] | None, bool], ...] = (
    (None, None, False),
    ("en", None, False),
    ("de", None, False),
    (None, frozenset({5}), False),
    (None, frozenset({1, 5}), False),
    ("de", frozenset({2, 4, 5}), False),
    (None, None, True),
    ("en", None, True),
    (None, frozenset({4, 5}), True),
    ("de", frozenset({5}), True),
)
# Errors a write may answer with when the model says it must be refused.
REFUSALS = (CommentNotFound, NotAuthor, NotPublished, OwnComment, NoReply)


class Who(enum.Enum):
    AUTHOR = "author"
    STRANGER = "stranger"
    MODERATOR = "moderator"


@dataclass(frozen=True)
class Create:
    author: str
    product: str
    rating: int
    language: str
    verified: bool
    mode: ModerationMode


@dataclass(frozen=True)
class Edit:
    who: Who  # AUTHOR or STRANGER
    rating: int | None
    language: str | None
    title: str | None
    body: str | None
    mode: ModerationMode


@dataclass(frozen=True)
class Moderate:
    decision: Decision
    note: str | None


@dataclass(frozen=True)
class Report:
    reporter: str
    reason: str


@dataclass(frozen=True)
class Answer:
    body: str | None  # None: the merchant removes the reply


@dataclass(frozen=True)
class Delete:
    who: Who


@dataclass(frozen=True)
class Cast:
    voter: str
    vote: Vote | None  # None withdraws


Change = Edit | Moderate | Report | Answer | Delete | Cast


@dataclass(frozen=True)
class At:
    pick: int  # index into every id seen so far (deleted ones too)
    change: Change


ratings = st.sampled_from([1, 2, 3, 4, 5, 5])
creates = st.builds(
    Create,
    st.sampled_from(AUTHORS),
    st.sampled_from(PRODUCTS),
    ratings,
    st.sampled_from(LANGUAGES),
    st.booleans(),
    st.sampled_from([ModerationMode.POST, ModerationMode.POST, ModerationMode.PRE]),
)
edits = st.builds(
    Edit,
    st.sampled_from([Who.AUTHOR, Who.AUTHOR, Who.AUTHOR, Who.STRANGER]),
    st.none() | ratings,
    st.none() | st.sampled_from(LANGUAGES),
    st.sampled_from([None, None, "new title"]),
    st.sampled_from([None, "edited", "edited again"]),
    st.sampled_from([ModerationMode.POST, ModerationMode.POST, ModerationMode.PRE]),
)
moderates = st.builds(Moderate, st.sampled_from(Decision), st.sampled_from([None, "ok"]))
reports = st.builds(Report, st.sampled_from(REPORTERS), st.sampled_from(REPORT_REASONS[:3]))
answers = st.builds(Answer, st.sampled_from([None, "Thanks!", "Thanks!", "Sorry."]))
deletes = st.builds(Delete, st.sampled_from(Who))
casts = st.builds(Cast, st.sampled_from(REPORTERS), st.sampled_from([*Vote, None]))
# Repeated strategies weigh the draw: deletes are rarer, or every comment would be gone.
changes = st.one_of(
    edits, edits, moderates, moderates, reports, reports, reports, answers, deletes, casts, casts
)
at_ops = st.builds(At, st.integers(0, 10_000), changes)


@dataclass(frozen=True)
class Life:
    """One comment as the model knows it: what is stored (None once deleted), and each
    reporter's report as the round it was filed in."""

    comment: Comment | None
    reports: tuple[tuple[str, int], ...] = ()
    votes: tuple[tuple[str, Vote], ...] = ()  # each voter's vote, by voter

    @property
    def published(self) -> bool:
        return self.comment is not None and self.comment.status is Status.PUBLISHED

    def reported_in(self, reporter: str) -> int | None:
        return dict(self.reports).get(reporter)

    def vote_of(self, voter: str) -> Vote | None:
        return dict(self.votes).get(voter)


@dataclass(frozen=True)
class Expect:
    """What a write must answer: a refusal, the comment (as it now is; as it was for a
    delete), for a report whether it counted, for a vote whether it changed."""

    error: type[StorageError] | None = None
    comment: Comment | None = None
    counted: bool | None = None
    voted: bool | None = None


Outcome = tuple[Expect, Life]


def simulate(change: Change, life: Life, now: str) -> Outcome:
    """One write to one comment, as DESIGN.md describes it."""
    c = life.comment
    if c is None:
        return Expect(CommentNotFound), life
    if isinstance(change, Edit):
        return _edit(change, c, life, now)
    if isinstance(change, Moderate):
        return _moderate(change, c, life, now)
    if isinstance(change, Report):
        return _report(change, c, life, now)
    if isinstance(change, Answer):
        return _answer(change, c, life, now)
    if isinstance(change, Cast):
        return _cast(change, c, life)
    if change.who is Who.STRANGER:
        return _refused_stranger(c), life
    return Expect(comment=c), Life(None)  # its reports go with it


def _refused_stranger(c: Comment) -> Expect:
    # To anyone but its author and moderators an unpublished comment does not exist.
    return Expect(NotAuthor if c.published else CommentNotFound)


def _edit(change: Edit, c: Comment, life: Life, now: str) -> Outcome:
    if change.who is not Who.AUTHOR:
        return _refused_stranger(c), life
    content = replace(
        c,
        rating=change.rating or c.rating,
        language=change.language or c.language,
        title=change.title or c.title,
        body=change.body or c.body,
    )
    if content == c:
        return Expect(comment=c), life  # nothing changes, nothing is written
    # Rejected comments wait for a moderator again whatever the mode, published ones under
    # PRE; a pending one keeps its place in the queue.
    waits = c.status is Status.REJECTED or (
        c.status is Status.PUBLISHED and change.mode is ModerationMode.PRE
    )
    # Each revision is later than the last, by a millisecond when the clock has not moved
    # (every write of a step shares one moment).
    last = c.edited_at or c.created_at
    later = keys.format_timestamp(keys.parse_timestamp(last) + timedelta(milliseconds=1))
    after = replace(
        content,
        edited_at=now if now > last else later,
        status=Status.PENDING if waits else c.status,
        submitted_at=now if waits else c.submitted_at,
    )
    return Expect(comment=after), replace(life, comment=after)


def _moderate(change: Moderate, c: Comment, life: Life, now: str) -> Outcome:
    after = replace(
        c,
        status=Status.PUBLISHED if change.decision is Decision.APPROVE else Status.REJECTED,
        submitted_at=None,
        # A decision opens a new round of reports.
        moderation=Moderation(
            round=c.moderation.round + 1,
            decided_by=MODERATOR,
            decided_at=now,
            note=change.note,
        ),
    )
    return Expect(comment=after), replace(life, comment=after)


def _report(change: Report, c: Comment, life: Life, now: str) -> Outcome:
    if change.reporter == c.author_id:
        return Expect(OwnComment), life
    if c.status is not Status.PUBLISHED:
        return Expect(NotPublished), life
    m = c.moderation
    earlier = life.reported_in(change.reporter)
    if earlier is not None and earlier >= m.round:
        return Expect(counted=False), life  # once per viewer per round
    count = m.report_count + 1
    reasons = tuple(r for r in REPORT_REASONS if r in m.reasons or r == change.reason)
    after = replace(c, moderation=replace(m, report_count=count, reasons=reasons))
    if count >= THRESHOLD:
        after = replace(after, status=Status.PENDING, submitted_at=now)
    filed = dict(life.reports)
    filed[change.reporter] = m.round
    reports = tuple(sorted(filed.items()))
    return Expect(comment=after, counted=True), replace(life, comment=after, reports=reports)


def _answer(change: Answer, c: Comment, life: Life, now: str) -> Outcome:
    if change.body is None:
        if c.reply is None:
            return Expect(NoReply), life
        after = replace(c, reply=None)
        return Expect(comment=after), replace(life, comment=after)
    if c.status is not Status.PUBLISHED:
        return Expect(NotPublished), life
    if c.reply is None:
        reply = Reply(change.body, MERCHANT, now)
    elif c.reply.body == change.body:
        return Expect(comment=c), life  # the same reply again
    else:
        reply = Reply(change.body, MERCHANT, c.reply.created_at, edited_at=now)
    after = replace(c, reply=reply)
    return Expect(comment=after), replace(life, comment=after)


def _cast(change: Cast, c: Comment, life: Life) -> Outcome:
    if change.voter == c.author_id:
        return Expect(OwnComment), life
    if c.status is not Status.PUBLISHED:
        return Expect(NotPublished), life
    before = life.vote_of(change.voter)
    if before is change.vote:
        return Expect(voted=False), life
    moved = {v: int(change.vote is v) - int(before is v) for v in Vote}
    after = replace(
        c,
        helpful=c.helpful + moved[Vote.HELPFUL],
        not_helpful=c.not_helpful + moved[Vote.NOT_HELPFUL],
    )
    votes = dict(life.votes)
    if change.vote is None:
        del votes[change.voter]
    else:
        votes[change.voter] = change.vote
    return Expect(comment=after, voted=True), replace(
        life, comment=after, votes=tuple(sorted(votes.items()))
    )


def agrees(expect: Expect, actual: object, deleted_in_batch: bool) -> bool:
    """Whether a write's answer is the one the model expects at its place in an order."""
    if expect.error is not None:
        return type(actual) is expect.error
    if expect.counted is False:
        # A repeated report answers with the comment as it reads it afterwards, or finds
        # it gone when a delete of the same step came after it.
        return (isinstance(actual, ReportResult) and not actual.counted) or (
            deleted_in_batch and type(actual) is CommentNotFound
        )
    if expect.counted:
        return (
            isinstance(actual, ReportResult) and actual.counted and actual.comment == expect.comment
        )
    if expect.voted is False:
        # As a repeated report: the comment as read afterwards, or gone.
        return (isinstance(actual, VoteResult) and not actual.changed) or (
            deleted_in_batch and type(actual) is CommentNotFound
        )
    if expect.voted:
        # The comment it answers with is checked by ``serialise``: a vote answers with the
        # comment as read after it committed, which later writes may have changed too.
        return (isinstance(actual, VoteResult) and actual.changed) or (
            deleted_in_batch and type(actual) is CommentNotFound
        )
    return actual == expect.comment


Job = tuple[Change, object]  # a write and its answer


def serialise(
    life: Life,
    jobs: Sequence[Job],
    now: str,
    stored: Life,
    deleted: bool,
    owed: tuple[Comment, ...] = (),
) -> list[Change] | None:
    """An order of the writes to one comment that gives every write its answer and ends in
    the state stored; None when there is none.

    Votes move the counts by ADD, not conditioned on the comment's version, and answer
    with the comment as read once they committed (``storage.writes.ballots``): not the
    state right after the vote but one at or after it in the order. ``owed`` holds those
    answers until the comment is in that state."""
    owed = tuple(c for c in owed if c != life.comment)
    if not jobs:
        return [] if life == stored and not owed else None
    for i, (change, actual) in enumerate(jobs):
        expect, after = simulate(change, life, now)
        if agrees(expect, actual, deleted):
            answered = owed
            if expect.voted and isinstance(actual, VoteResult):
                answered = (*owed, actual.comment)
            rest = serialise(after, [*jobs[:i], *jobs[i + 1 :]], now, stored, deleted, answered)
            if rest is not None:
                return [change, *rest]
    return None


def created(op: Create, comment_id: str, now: str) -> Comment:
    pending = op.mode is ModerationMode.PRE
    return Comment(
        comment_id=comment_id,
        product_id=op.product,
        language=op.language,
        rating=op.rating,
        title=None,
        body=f"{op.rating} stars in {op.language}",
        author_id=op.author,
        created_at=now,
        status=Status.PENDING if pending else Status.PUBLISHED,
        verified=op.verified,
        submitted_at=now if pending else None,
    )


@dataclass
class Stored:
    """The table as a strongly consistent scan finds it."""

    comments: dict[str, Comment] = field(default_factory=dict)
    reports: dict[str, dict[str, int]] = field(default_factory=dict)  # id -> report SK -> round
    votes: dict[str, dict[str, Vote]] = field(default_factory=dict)  # id -> vote SK -> vote

    def life(self, comment_id: str, viewers: Sequence[str]) -> Life:
        """The stored state in the model's terms (viewers are known by their key only)."""
        by_key = {keys.report_sk(r): r for r in viewers}
        filed = self.reports.get(comment_id, {})
        assert set(filed) <= set(by_key), f"reports by unknown viewers under {comment_id}"
        named = tuple(sorted((by_key[sk], n) for sk, n in filed.items()))
        voters = {keys.vote_sk(v): v for v in viewers}
        cast = self.votes.get(comment_id, {})
        assert set(cast) <= set(voters), f"votes by unknown viewers under {comment_id}"
        votes = tuple(sorted((voters[sk], vote) for sk, vote in cast.items()))
        return Life(self.comments.get(comment_id), named, votes)


async def scan(table: TableRef) -> Stored:
    """Every comment and every report in the table."""
    found = Stored()
    async for response in scan_pages(table):
        for item in response.get("Items", []):
            pk, sk = item["PK"]["S"], item["SK"]["S"]
            if is_comment_item(item):
                c = item_to_comment(item)
                found.comments[c.comment_id] = c
            elif pk.startswith(keys.COMMENT_PREFIX) and sk.startswith(keys.REPORT_PREFIX):
                cid = pk.removeprefix(keys.COMMENT_PREFIX)
                found.reports.setdefault(cid, {})[sk] = int(item["round"]["N"])
            elif pk.startswith(keys.COMMENT_PREFIX) and sk.startswith(keys.VOTE_PREFIX):
                cid = pk.removeprefix(keys.COMMENT_PREFIX)
                found.votes.setdefault(cid, {})[sk] = Vote(item[VOTE_ATTR]["S"])
    return found


async def every_page(read: Callable[[PageRequest], Awaitable[Page]]) -> list[Comment]:
    """Every comment of a keyset-paged read, two at a time."""
    out: list[Comment] = []
    position = None
    for _ in range(1000):
        page = await read(PageRequest(2, position=position))
        out += page.comments
        if not page.has_more:
            return out
        assert page.comments, "has_more with an empty page"
        position = page.positions[-1]
    raise AssertionError("the pages never ended")


def tally(comments: Sequence[Comment]) -> tuple[int, int, int, int, int]:
    n = [sum(1 for c in comments if c.rating == r) for r in rules.RATINGS]
    return (n[0], n[1], n[2], n[3], n[4])


HARNESS: LoopHarness | None = None


class LifecycleRaces(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        assert HARNESS is not None
        self.run = HARNESS.run
        # A table per example: the moderation queue and the leaderboard are table-wide.
        self.tables = HARNESS.new_tables("life")
        self.lives: dict[str, Life] = {}  # every live comment
        self.seen: list[str] = []  # every id ever created, for writes to deleted ones
        self.author_of: dict[str, str] = {}
        self.steps = 0

    def teardown(self) -> None:
        assert HARNESS is not None
        HARNESS.drop(self.tables[0])

    def _now(self) -> datetime:
        self.steps += 1
        return EPOCH + timedelta(minutes=self.steps)

    @initialize(batch=st.lists(creates, min_size=3, max_size=6))
    def populate(self, batch: list[Create]) -> None:
        self._run_step(batch)

    @rule(batch=st.lists(st.one_of(creates, at_ops, at_ops), min_size=2, max_size=7))
    def step(self, batch: list[Create | At]) -> None:
        self._run_step(batch)

    # No preconditions: which comments are live depends on how races went, and Hypothesis
    # needs the same draws when it replays a failure. A rule without a target does nothing.
    @rule(
        pick=st.integers(0, 10_000),
        contenders=st.lists(changes, min_size=2, max_size=4),
        others=st.lists(creates, max_size=2),
    )
    def contend(self, pick: int, contenders: list[Change], others: list[Create]) -> None:
        live = [cid for cid in self.seen if cid in self.lives]  # in order of creation
        if not live:
            return
        target = live[pick % len(live)]
        target_pick = self.seen.index(target)
        self._run_step([*(At(target_pick, c) for c in contenders), *others])

    @rule(
        pick=st.integers(0, 10_000),
        reporters=st.lists(st.sampled_from(REPORTERS), min_size=2, max_size=4),
        rivals=st.lists(changes, max_size=2),
    )
    def mob(self, pick: int, reporters: list[str], rivals: list[Change]) -> None:
        """Several viewers (some twice) report one published comment at once, while other
        writes to it race with them."""
        published = [cid for cid in self.seen if cid in self.lives and self.lives[cid].published]
        if not published:
            return
        target = self.seen.index(published[pick % len(published)])
        reports = [Report(r, REPORT_REASONS[n % 3]) for n, r in enumerate(reporters)]
        self._run_step([At(target, c) for c in [*reports, *rivals]])

    @rule(
        pick=st.integers(0, 10_000),
        votes=st.lists(casts, min_size=2, max_size=5),
        rivals=st.lists(changes, max_size=2),
    )
    def crowd(self, pick: int, votes: list[Cast], rivals: list[Change]) -> None:
        """Several viewers (some twice, with different votes) vote on one published comment
        at once, while other writes to it race with them."""
        published = [cid for cid in self.seen if cid in self.lives and self.lives[cid].published]
        if not published:
            return
        target = self.seen.index(published[pick % len(published)])
        self._run_step([At(target, c) for c in [*votes, *rivals]])

    def _write(
        self, table: TableRef, cid: str, change: Change, clock: Callable[[], datetime]
    ) -> Awaitable[Any]:
        author = self.author_of[cid]
        if isinstance(change, Edit):
            request = EditRequest(change.rating, change.language, change.title, change.body)
            writer = author if change.who is Who.AUTHOR else STRANGER
            return edit_comment(
                table,
                cid,
                request,
                author_id=writer,
                moderation=change.mode,
                backoff=BACKOFF,
                clock=clock,
            )
        if isinstance(change, Moderate):
            return moderate_comment(
                table,
                cid,
                change.decision,
                moderator=MODERATOR,
                note=change.note,
                backoff=BACKOFF,
                clock=clock,
            )
        if isinstance(change, Report):
            return report_comment(
                table,
                cid,
                reporter=change.reporter,
                reason=change.reason,
                threshold=THRESHOLD,
                backoff=BACKOFF,
                clock=clock,
            )
        if isinstance(change, Answer):
            if change.body is None:
                return delete_reply(table, cid, backoff=BACKOFF)
            return reply_to_comment(
                table, cid, change.body, merchant_name=MERCHANT, backoff=BACKOFF, clock=clock
            )
        if isinstance(change, Cast):
            return vote_helpful(
                table, cid, voter=change.voter, vote=change.vote, backoff=BACKOFF, clock=clock
            )
        deleter = {Who.AUTHOR: author, Who.STRANGER: STRANGER, Who.MODERATOR: None}[change.who]
        return delete_comment(table, cid, author_id=deleter, backoff=BACKOFF)

    def _run_step(self, batch: Sequence[Create | At]) -> None:
        raced = self.run(self._step(batch))
        # (Events are recorded here: the step itself runs in the harness's thread.)
        event(f"most writes to one comment in a step: {max(raced, default=0)}")

    async def _step(self, batch: Sequence[Create | At]) -> list[int]:
        """Run the batch at once; the number of writes to each comment it touched."""
        moment = self._now()
        now = keys.format_timestamp(moment)

        def clock() -> datetime:
            return moment

        writes: list[tuple[Create | tuple[str, Change], Awaitable[Any]]] = []
        for n, op in enumerate(batch):
            table = self.tables[n % 2]
            if isinstance(op, Create):
                new = NewComment(
                    op.product,
                    op.language,
                    op.rating,
                    f"{op.rating} stars in {op.language}",
                    op.author,
                    verified=op.verified,
                )
                job = create_comment(table, new, moderation=op.mode, backoff=BACKOFF, clock=clock)
                writes.append((op, job))
            elif self.seen:
                cid = self.seen[op.pick % len(self.seen)]
                writes.append(((cid, op.change), self._write(table, cid, op.change, clock)))
        answers = await asyncio.gather(*(job for _, job in writes), return_exceptions=True)
        for answer in answers:
            if isinstance(answer, BaseException) and not isinstance(answer, REFUSALS):
                raise answer
        stored = await scan(self.tables[0])
        groups: dict[str, list[Job]] = {}
        for (what, _), answer in zip(writes, answers, strict=True):
            if isinstance(what, Create):
                assert isinstance(answer, CreateResult), (what, answer)
                assert answer.created
                cid = answer.comment.comment_id
                expected = created(what, cid, now)
                assert answer.comment == expected
                assert cid not in self.author_of
                self.seen.append(cid)
                self.author_of[cid] = what.author
                self.lives[cid] = Life(expected)
            else:
                groups.setdefault(what[0], []).append((what[1], answer))
        for cid, jobs in groups.items():
            before = self.lives.get(cid, Life(None))
            after = stored.life(cid, REPORTERS)
            deleted = any(isinstance(change, Delete) for change, _ in jobs)
            order = serialise(before, jobs, now, after, deleted)
            assert order is not None, (
                f"no order of the writes to {cid} explains what they answered and what is "
                f"stored:\n  before: {before}\n  writes: {jobs}\n  stored: {after}"
            )
            if after.comment is None:
                self.lives.pop(cid, None)
            else:
                self.lives[cid] = after
        # Comments no write of this step touched are exactly as they were.
        assert stored.comments.keys() == self.lives.keys()
        for cid, life in self.lives.items():
            assert stored.life(cid, REPORTERS) == life, cid
        assert stored.reports.keys() <= self.lives.keys(), "reports of a deleted comment"
        assert stored.votes.keys() <= self.lives.keys(), "votes of a deleted comment"
        return [len(jobs) for jobs in groups.values()]

    @invariant()
    def storage_agrees_with_the_model(self) -> None:
        self.run(self._check())

    async def _check(self) -> None:
        """Every read at once (nothing writes meanwhile), each against the model."""
        table = self.tables[1]
        comments = [life.comment for life in self.lives.values() if life.comment is not None]
        checks = [
            self._check_verify(table, comments),
            self._check_leaders(table, comments),
            self._check_queue(table, comments),
            *(self._check_author(table, author, comments) for author in AUTHORS),
        ]
        for pid in PRODUCTS:
            checks += [
                self._check_counts(table, pid, lang, comments) for lang in (None, *LANGUAGES)
            ]
            for language, rating_set, verified_only in FILTERS:
                listing = ListingFilter(pid, language, rating_set, verified_only)
                checks.append(self._check_listing(table, listing, 3, Direction.FORWARD, comments))
                if rating_set is None and language is None:
                    back = self._check_listing(table, listing, 2, Direction.BACKWARD, comments)
                    checks.append(back)
        await asyncio.gather(*checks)

    async def _check_verify(self, table: TableRef, comments: list[Comment]) -> None:
        report = await verify(table)
        assert report.exact, report.describe()
        assert report.comments == len(comments)

    async def _check_counts(
        self, table: TableRef, pid: str, language: str | None, comments: list[Comment]
    ) -> None:
        counted = [
            c
            for c in comments
            if c.status is Status.PUBLISHED
            and c.product_id == pid
            and language in (None, c.language)
        ]
        counts = await get_counts(table, pid, language)
        assert counts.by_rating == tally(counted), (pid, language, counts)
        verified = tally([c for c in counted if c.verified])
        assert counts.verified == verified, (pid, language, counts)
        assert counts.only_verified().total == sum(verified)

    async def _check_listing(
        self,
        table: TableRef,
        listing: ListingFilter,
        size: int,
        direction: Direction,
        comments: list[Comment],
    ) -> None:
        found, _ = await walk(table, listing, size, direction)
        assert found == oracle(comments, listing), (listing, direction)

    async def _check_leaders(self, table: TableRef, comments: list[Comment]) -> None:
        published = [c for c in comments if c.status is Status.PUBLISHED]
        fives = {pid: tally([c for c in published if c.product_id == pid])[4] for pid in PRODUCTS}
        board = await leaderboard(table, 100)
        assert {e.product_id: e.five_star_count for e in board} == {
            pid: n for pid, n in fives.items() if n
        }
        assert [e.five_star_count for e in board] == sorted(
            (e.five_star_count for e in board), reverse=True
        )
        newest = [
            max((c.created_at for c in published if c.product_id == pid), default=None)
            for pid in PRODUCTS
        ]
        assert await last_commented_at(table, PRODUCTS) == newest

    async def _check_queue(self, table: TableRef, comments: list[Comment]) -> None:
        queue = await every_page(partial(moderation_queue, table))
        pending = [c for c in comments if c.status is Status.PENDING]
        assert queue == sorted(pending, key=lambda c: (c.submitted_at, c.comment_id))

    async def _check_author(self, table: TableRef, author: str, comments: list[Comment]) -> None:
        mine = await every_page(partial(author_comments, table, author))
        theirs = [c for c in comments if c.author_id == author]
        assert mine == sorted(theirs, key=lambda c: (c.created_at, c.comment_id), reverse=True)


@pytest.fixture(scope="module")
def harness(engine: LocalEngine) -> Iterator[LoopHarness]:
    global HARNESS
    HARNESS = LoopHarness(engine.endpoint_url, "life")
    HARNESS.start()
    try:
        yield HARNESS
    finally:
        HARNESS.close()
        HARNESS = None


@pytest.mark.slow
def test_every_transition_races_and_stays_exact(harness: LoopHarness) -> None:
    # Concurrency makes a failure hard to replay exactly, so shrinking is short: the first
    # failure, with its steps, is what matters.
    LifecycleRaces.TestCase.settings = settings(
        settings.default,
        max_examples=EXAMPLES,
        stateful_step_count=STEPS,
        phases=[Phase.explicit, Phase.reuse, Phase.generate],
        report_multiple_bugs=False,
    )
    LifecycleRaces.TestCase().runTest()
