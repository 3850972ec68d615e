"""A stateful model test of the facets, with real concurrency: every count, summary and
listing of every facet equals brute force after every step.

The world (``tests.storage.facet_model``): three products, two of them in group g1, two
groups, each product and group asking "fit" and "would you recommend", a taxonomy of three topics
tagged from the text in English and German, verified and incentivized comments. Each step
runs several writes at once through two "processes" (table refs with their own memories,
over one client that cancels overlapping writes of an item as DynamoDB does): creates
(answers or none, text with topics or without, incentivized or not, POST or PRE
moderation), the author's edits (answers replaced or cleared, text that changes the
topics, rating, language), approvals and rejections, deletes, helpful votes given, changed
and withdrawn, imports of a shop's reviews (a line imported again among them), and group
moves of a product between the groups or out of them. ``contend`` aims several of them
at one comment while its product moves.

After every step ``check_model`` scans the table and recounts from the comments as stored:
every counter item of every scope (products and groups) and value (answers, topics, ``*``,
``inc``) per language, rating, verified and incentivized; every entry, its keys and what
it copies (helpful counts once the votes' follow-ups ran); the counts groups hold; where
each comment counts and how it is tagged. Then, through the reads: each product's and
group's facet listing counts for every value under every filter, their summaries under a
few filters, facet listings (a group's own among them) in two orders both ways against
``tests.helpers.oracle``, and ``verify``. ``test_the_model_finds_a_move_left_out`` shows
that the check fails when a transition leaves one facet move out.

CI runs a short form (``EXAMPLES``, ``STEPS``); ``FACET_MODEL_EXAMPLES=500`` (and
``FACET_MODEL_STEPS``) runs the long one (docs/facets.md, "Model test").
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Awaitable, Callable, Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from hypothesis import Phase, event, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule

from server.dev.local_engine import LocalEngine
from storage.base.errors import (
    CommentNotFound,
    GroupMoveUnfinished,
    NotAuthor,
    NotPublished,
    OwnComment,
    WriteConflict,
)
from storage.engine.conflicts import AwsConflicts
from storage.engine.retry import Backoff
from storage.engine.table import TableRef
from storage.model import keys
from storage.model.comments import Comment, ModerationMode, NewComment, Status, Vote
from storage.ops.group_move import finish_move, move_product
from storage.ops.importer import import_comments
from storage.ops.verify import verify
from storage.writes import create_comment, delete_comment
from storage.writes.create import CreateResult
from storage.writes.edit import Edit as EditRequest
from storage.writes.edit import edit_comment
from storage.writes.facet_parts import COUNTER, ENTRY, facet_parts
from storage.writes.membership import read_membership
from storage.writes.moderate import Decision, moderate_comment
from storage.writes.tagging import FreshTaxonomy, TaxonomyCache
from storage.writes.transaction import Part
from storage.writes.votes import vote_helpful
from tests.helpers import LoopHarness, own_table
from tests.storage.facet_model import (
    ANSWERS,
    GROUPS,
    LANGUAGES,
    PRODUCTS,
    TEXTS,
    build_world,
    check_model,
    import_line,
)

# The CI form runs the same examples every time; a long run explores new ones.
LONG = "FACET_MODEL_EXAMPLES" in os.environ
EXAMPLES = int(os.environ.get("FACET_MODEL_EXAMPLES", "4"))
STEPS = int(os.environ.get("FACET_MODEL_STEPS", "6"))
# A file each step's writes and their answers are appended to (for reading a long run).
TRACE = os.environ.get("FACET_MODEL_TRACE")
AUTHORS = ("ann", "bob", "cy")
VOTERS = ("ann", "vic", "val")  # ann's votes on her own comments are refused
# Longer pauses than the suite's FAST: seven writes on one product's counters at once, each
# transaction tens of milliseconds on the local engine, would otherwise run out of tries.
BACKOFF = Backoff(attempts=10, base=0.005, cap=0.2)
EPOCH = datetime(2025, 1, 1, tzinfo=UTC)
FRESH = FreshTaxonomy()
# What a write may answer when the comment it aims at is gone, unpublished or the voter's
# own, or when contention outlasted its retries (nothing was written then).
REFUSALS = (CommentNotFound, NotAuthor, NotPublished, OwnComment, WriteConflict)


@dataclass(frozen=True)
class Create:
    product: int
    language: str
    rating: int
    text: int
    answers: int
    verified: bool
    incentivized: bool
    mode: ModerationMode


@dataclass(frozen=True)
class Edit:
    rating: int | None
    language: str | None
    text: int | None
    answers: int | None  # None keeps the stored answers; 0 clears them
    mode: ModerationMode


@dataclass(frozen=True)
class Moderate:
    decision: Decision


@dataclass(frozen=True)
class Delete:
    pass


@dataclass(frozen=True)
class Cast:
    voter: str
    vote: Vote | None  # None withdraws


@dataclass(frozen=True)
class Import:
    product: int
    language: str
    rating: int
    text: int
    verified: bool
    status: Status
    again: bool  # a line imported before, sent again


@dataclass(frozen=True)
class Move:
    product: int
    group: str | None


Change = Edit | Moderate | Delete | Cast


@dataclass(frozen=True)
class At:
    pick: int  # into every id seen so far (deleted ones too)
    change: Change


Op = Create | At | Import | Move

ratings = st.sampled_from([1, 2, 3, 4, 5, 5])
languages = st.sampled_from(LANGUAGES)
texts = st.integers(0, len(TEXTS) - 1)
modes = st.sampled_from([ModerationMode.POST, ModerationMode.POST, ModerationMode.PRE])
creates = st.builds(
    Create,
    st.integers(0, len(PRODUCTS) - 1),
    languages,
    ratings,
    texts,
    st.integers(0, len(ANSWERS) - 1),
    st.booleans(),
    st.booleans(),
    modes,
)
edits = st.builds(
    Edit,
    st.none() | ratings,
    st.none() | languages,
    st.none() | texts,
    st.none() | st.integers(0, len(ANSWERS) - 1),
    st.sampled_from([ModerationMode.POST, ModerationMode.POST, ModerationMode.PRE]),
)
moderates = st.builds(Moderate, st.sampled_from(Decision))
casts = st.builds(Cast, st.sampled_from(VOTERS), st.sampled_from([*Vote, None]))
changes = st.one_of(edits, edits, moderates, st.just(Delete()), casts, casts)
at_ops = st.builds(At, st.integers(0, 10_000), changes)
imports = st.builds(
    Import,
    st.integers(0, len(PRODUCTS) - 1),
    languages,
    ratings,
    texts,
    st.booleans(),
    st.sampled_from([Status.PUBLISHED, Status.PUBLISHED, Status.PENDING, Status.REJECTED]),
    st.booleans(),
)
moves = st.builds(Move, st.integers(0, len(PRODUCTS) - 1), st.sampled_from([*GROUPS, None]))
ops = st.one_of(creates, creates, at_ops, at_ops, at_ops, imports, moves)

HARNESS: LoopHarness | None = None


class FacetModel(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        assert HARNESS is not None
        self.run = HARNESS.run
        # A table per example (verify scans it whole), as two processes over one client
        # that fails overlapping writes of an item as AWS does.
        base, _ = HARNESS.new_tables("facetmodel")
        self.base = base
        aws = AwsConflicts(base.client)
        self.aws = aws
        self.tables = (TableRef(aws, base.name), TableRef(aws, base.name))
        # Each process keeps its tagger compiled, checking the taxonomy's head every time.
        self.taggers = {id(t): TaxonomyCache(check_seconds=0) for t in self.tables}
        self.seen: list[str] = []  # every comment id made so far, deleted ones too
        self.author_of: dict[str, str] = {}
        self.imported: set[str] = set()
        self.lines: list[bytes] = []  # every import line sent, for sending again
        self.steps = 0
        self.run(build_world(base))

    def teardown(self) -> None:
        assert HARNESS is not None
        HARNESS.drop(self.base)

    @initialize(batch=st.lists(creates, min_size=4, max_size=7))
    def populate(self, batch: list[Create]) -> None:
        self._run_step(batch)

    @rule(batch=st.lists(ops, min_size=3, max_size=7))
    def step(self, batch: list[Op]) -> None:
        self._run_step(batch)

    # No preconditions: which comments live depends on how the races went.
    @rule(
        pick=st.integers(0, 10_000),
        contenders=st.lists(changes, min_size=2, max_size=4),
        group=st.sampled_from([*GROUPS, None]),
    )
    def contend(self, pick: int, contenders: list[Change], group: str | None) -> None:
        """Several writes to one comment at once, while its product moves."""
        if not self.seen:
            return
        target = pick % len(self.seen)
        product = PRODUCTS.index(self._product_of(self.seen[target]))
        self._run_step([*(At(target, c) for c in contenders), Move(product, group)])

    def _product_of(self, cid: str) -> str:
        return self.author_of[cid].split("@")[1]

    def _run_step(self, batch: Sequence[Op]) -> None:
        outcomes = self.run(self._step(batch))
        for outcome in outcomes:
            event(f"answered {outcome.split('(')[0]}: {outcome.rsplit(': ', 1)[1]}")
        if TRACE:
            with open(TRACE, "a") as f:
                print(self.steps, f"conflicts so far {self.aws.conflicts}", outcomes, file=f)

    async def _step(self, batch: Sequence[Op]) -> list[str]:
        self.steps += 1
        moment = EPOCH + timedelta(minutes=self.steps)
        stamp = keys.format_timestamp(moment)

        def clock() -> datetime:
            return moment

        jobs: list[tuple[Op, Awaitable[Any]]] = []
        for n, op in enumerate(batch):
            table = self.tables[n % 2]
            if isinstance(op, Create):
                jobs.append((op, self._create(table, op, clock)))
            elif isinstance(op, Import):
                jobs.append((op, self._import(table, op, stamp)))
            elif isinstance(op, Move):
                pid = PRODUCTS[op.product]
                jobs.append((op, move_product(table, pid, op.group, pause=0.01, backoff=BACKOFF)))
            elif self.seen:
                cid = self.seen[op.pick % len(self.seen)]
                jobs.append((op, self._change(table, cid, op.change, clock)))
        answers = await asyncio.gather(*(job for _, job in jobs), return_exceptions=True)
        outcomes = []
        cut_short: set[str] = set()  # products an import may have left unplaced
        for (op, _), answer in zip(jobs, answers, strict=True):
            if isinstance(answer, BaseException):
                if not isinstance(answer, (*REFUSALS, GroupMoveUnfinished)):
                    raise answer
                outcomes.append(f"{op}: {type(answer).__name__}")
                if isinstance(op, Import):
                    cut_short.add(PRODUCTS[op.product])
                continue
            outcomes.append(f"{op}: done")
            if isinstance(op, Create):
                assert isinstance(answer, CreateResult)
                self._made(answer.comment)
        # A move cut short (contention, or a move of the same product racing it), or an
        # import's placing of its comments, is finished, as running the command again
        # does; the model holds only of finished moves.
        for pid in PRODUCTS:
            if pid in cut_short or (await read_membership(self.tables[0], pid)).moving:
                await finish_move(self.tables[0], pid, pause=0.01, backoff=BACKOFF)
        return outcomes

    def _made(self, c: Comment) -> None:
        if c.comment_id not in self.author_of:
            self.seen.append(c.comment_id)
            # The product travels with the author, for ``contend``.
            self.author_of[c.comment_id] = f"{c.author_id}@{c.product_id}"

    async def _create(
        self, table: TableRef, op: Create, clock: Callable[[], datetime]
    ) -> CreateResult:
        new = NewComment(
            PRODUCTS[op.product],
            op.language,
            op.rating,
            TEXTS[op.text][0],
            AUTHORS[(op.product + op.text) % len(AUTHORS)],
            verified=op.verified,
            incentivized=op.incentivized,
        )
        return await create_comment(
            table,
            new,
            moderation=op.mode,
            backoff=BACKOFF,
            clock=clock,
            answers=list(ANSWERS[op.answers]),
            taxonomy=self.taggers[id(table)],
        )

    async def _import(self, table: TableRef, op: Import, stamp: str) -> None:
        if op.again and self.lines:
            line = self.lines[op.product % len(self.lines)]
        else:
            external = f"ext-{len(self.lines)}"
            pid = PRODUCTS[op.product]
            body = TEXTS[op.text][0]
            line = import_line(
                external, pid, op.language, op.rating, body, op.verified, op.status, stamp
            )
            self.lines.append(line)
            cid = keys.imported_comment_id(external)
            self.imported.add(cid)
            self.seen.append(cid)
            self.author_of[cid] = f"shopper-{external}@{pid}"
        summary = await import_comments(table, [line], backoff=BACKOFF)
        assert summary.imported + summary.already_imported == 1, summary

    def _change(
        self, table: TableRef, cid: str, change: Change, clock: Callable[[], datetime]
    ) -> Awaitable[Any]:
        author = self.author_of[cid].split("@")[0]
        if isinstance(change, Edit):
            request = EditRequest(
                rating=change.rating,
                language=change.language,
                body=None if change.text is None else TEXTS[change.text][0],
                attributes=None if change.answers is None else list(ANSWERS[change.answers]),
            )
            return edit_comment(
                table,
                cid,
                request,
                author_id=author,
                moderation=change.mode,
                backoff=BACKOFF,
                clock=clock,
                taxonomy=self.taggers[id(table)],
            )
        if isinstance(change, Moderate):
            return moderate_comment(
                table, cid, change.decision, moderator="mod", backoff=BACKOFF, clock=clock
            )
        if isinstance(change, Cast):
            return vote_helpful(
                table, cid, voter=change.voter, vote=change.vote, backoff=BACKOFF, clock=clock
            )
        return delete_comment(table, cid, author_id=author, backoff=BACKOFF)

    @invariant()
    def facets_equal_brute_force(self) -> None:
        self.run(check_model(self.base, self.imported, self.steps))


@pytest.fixture(scope="module")
def harness(engine: LocalEngine) -> Iterator[LoopHarness]:
    global HARNESS
    HARNESS = LoopHarness(engine.endpoint_url, "facetmodel")
    HARNESS.start()
    try:
        yield HARNESS
    finally:
        HARNESS.close()
        HARNESS = None


@pytest.mark.slow
def test_every_facet_stays_exact_under_racing_transitions(harness: LoopHarness) -> None:
    # Concurrency makes a failure hard to replay exactly, so shrinking is short: the first
    # failure, with its steps, is what matters.
    FacetModel.TestCase.settings = settings(
        settings.default,
        max_examples=EXAMPLES,
        stateful_step_count=STEPS,
        deadline=None,
        derandomize=not LONG,
        phases=[Phase.explicit, Phase.reuse, Phase.generate],
        report_multiple_bugs=False,
    )
    FacetModel.TestCase().runTest()


# The model must fail when a transition leaves one facet move out. Each mutation stands
# for such a bug: the comment's own transaction commits without one of its parts.
Mutation = Callable[[Comment | None, Comment | None, list[Part]], list[Part]]


def _no_counters_on_rating_change(
    before: Comment | None, after: Comment | None, parts: list[Part]
) -> list[Part]:
    """An edit of a published comment's rating that moves no facet counter."""
    if before is None or after is None or not (before.published and after.published):
        return parts
    if before.rating == after.rating:
        return parts
    return [p for p in parts if not p.name.startswith(COUNTER)]


def _no_group_scope_on_publishing(
    before: Comment | None, after: Comment | None, parts: list[Part]
) -> list[Part]:
    """An approval that lists and counts the comment in its product but not its group."""
    if after and after.published and not (before and before.published):
        return [p for p in parts if not (p.name.startswith((COUNTER, ENTRY)) and _grouped(p))]
    return parts


def _no_incentivized_on_group_move(
    before: Comment | None, after: Comment | None, parts: list[Part]
) -> list[Part]:
    """A group move that leaves the incentivized counter in the old group."""
    if before is None or after is None or not (before.published and after.published):
        return parts
    if before.group_id == after.group_id:
        return parts
    return [p for p in parts if not (p.name.startswith(COUNTER) and _key(p)[1] == "F#inc")]


def _grouped(part: Part) -> bool:
    pk, sk = _key(part)
    return pk.startswith("GROUP#") or sk.startswith("FACET#G:")


def _key(part: Part) -> tuple[str, str]:
    ((_, request),) = part.action.items()
    key = request.get("Key") or request["Item"]
    return key["PK"]["S"], key["SK"]["S"]


# Each mutation, and the phase of the script below whose transition it breaks.
MUTATIONS: dict[str, tuple[Mutation | None, str | None]] = {
    "none": (None, None),
    "rating edit moves no counter": (_no_counters_on_rating_change, "edit"),
    "approval leaves out the group": (_no_group_scope_on_publishing, "approve"),
    "group move leaves the incentivized count": (_no_incentivized_on_group_move, "move"),
}


@pytest.mark.parametrize("name", MUTATIONS)
async def test_the_model_finds_a_move_left_out(
    table: TableRef, monkeypatch: pytest.MonkeyPatch, name: str
) -> None:
    own = await own_table(table, "facetmutant")
    mutation, breaks = MUTATIONS[name]
    if mutation is not None:
        chosen = mutation

        def mutated(
            table: TableRef, before: Comment | None, after: Comment | None, *, version: int
        ) -> list[Part]:
            return chosen(before, after, facet_parts(table, before, after, version=version))

        # Edits, moderation, deletes and group moves take their parts here
        # (storage.writes.transition).
        monkeypatch.setattr("storage.writes.transition.facet_parts", mutated)
    await build_world(own)
    battery, answers = TEXTS[1][0], list(ANSWERS[2])
    new = NewComment("p1", "en", 4, battery, "ann", verified=True, incentivized=True)
    made = await create_comment(own, new, answers=answers, taxonomy=FRESH, backoff=BACKOFF)
    pending = NewComment("p2", "en", 2, battery, "bob", incentivized=True)
    waiting = await create_comment(
        own, pending, moderation=ModerationMode.PRE, answers=answers, taxonomy=FRESH
    )
    await check_model(own, set())
    phases: dict[str, Callable[[], Awaitable[object]]] = {
        "edit": lambda: edit_comment(
            own, made.comment.comment_id, EditRequest(rating=3), author_id="ann"
        ),
        "approve": lambda: moderate_comment(
            own, waiting.comment.comment_id, Decision.APPROVE, moderator="mod"
        ),
        "move": lambda: move_product(own, "p2", "g2", backoff=BACKOFF),
    }
    for phase, transition in phases.items():
        await transition()
        if phase != breaks:
            await check_model(own, set())  # exact until the broken transition
            continue
        # The recount finds it at once, on its own (and verify, which shares the code's
        # moves, too).
        with pytest.raises(AssertionError):
            await check_model(own, set(), with_verify=False)
        assert not (await verify(own)).exact
        return
    assert mutation is None
