"""Votes on one comment committed together, and its helpful order's key kept up with them.

A vote transaction writes the voter's own vote item (on the condition that it is still as
the voter read it) and moves the comment's counts by ``ADD``, with no condition on the
comment's version (see ``storage.writes.votes``). On AWS two transactions on the same
item at once still cancel each other (``TransactionConflict``), whatever their
conditions. So the votes of one process on one comment go through one lane
(``storage.base.lanes``): one transaction in flight per comment and process, and the votes that
arrive meanwhile go together in the next one, each vote item with its own condition and
the comment with one ``ADD`` of their summed moves (at most ``MAX_BALLOTS`` votes a
transaction, as DynamoDB takes 100 actions).

A cancellation says, action by action, what failed:

- a vote item's own condition: that viewer's vote changed meanwhile; that vote alone is
  read again and decided again (``Moved``), the others go again without it, at once. Its
  voter is then *contested* for ``CONTESTED_SECONDS``: their votes go in transactions of
  their own, so that one viewer whose votes race each other (from this process or
  another) cancels other viewers' transactions at most once, not round after round;
- the comment's condition (it exists, is published, is not the voter's own, and holds at
  least the votes being withdrawn): the item as it is (ALL_OLD) says which refusal
  applies, and to whom;
- a conflict or throttling: all go again after a jittered pause, up to
  ``backoff.attempts`` transactions each, then ``WriteConflict``.

The helpful order's key (HSK: the padded helpful count, then GSISK) cannot be computed by
an update expression, and conditioning on the count would make voters contend again. So
the transaction leaves it, and after a commit the lane reads the comment (strongly
consistent): that is every voter's answer, and it checks HSK against the count read. When
they differ, the lane sets it with one UpdateItem conditioned on that count (and on the
comment existing and being published), never on the version: before answering the batch
when no vote waits, else at least every ``KEY_LAG_SECONDS`` while votes keep coming. A
failed condition means a later write moved the count, and that write sets the key itself
(an edit or a moderation puts the whole item) or has a read and follow-up of its own (a
vote, in this process or another). So the key only ever takes the value of a count the
comment really had, in the order the counts came (a key set from an older count fails
its condition): it lags the count, it never runs ahead of it or back past it. (A key
predicted in the transaction, from what the lane last read, would be set back below the
count when another process voted in between, and a walk of the most helpful order would
meet the comment twice.)

A comment's facet entries (``storage.model.facets``) are copies of it that show its counts
too. A transition writes them from the comment as it commits; a vote, which moves the
counts by ``ADD`` without reading the comment, leaves them to the same follow-up: each
entry's counts are set from the read after the commit, on the condition that the entry
copies an older version of the comment (votes move the version too), so they follow the
counts with the key's lag and never move back.

The staleness bound: HSK differs from the count from a vote's commit until the follow-up
after it completes: at most ``KEY_LAG_SECONDS`` plus one read and one UpdateItem while
votes on the comment keep coming to this process, and one read and one UpdateItem after
the last. A voter is answered once the key matches the count read, unless more votes on
the comment wait in this process. A process that stops between a commit and that check,
or a follow-up that kept conflicting with other processes' transactions, leaves the key
stale until the next vote on that comment, or until ``verify``/``repair``, which check HSK
against the count.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field

from storage.base.errors import (
    CommentNotFound,
    ConditionFailed,
    CounterInvariantBroken,
    NotPublished,
    OwnComment,
    StorageError,
    Throttled,
    WriteConflict,
)
from storage.base.expressions import Attr, Condition, Update, delete_request, put_request
from storage.base.lanes import Lane, Lanes
from storage.base.types import Item
from storage.engine.retry import Backoff
from storage.engine.table import TableRef
from storage.model import keys
from storage.model.comments import Comment, Status, Vote
from storage.model.facets import facet_moves
from storage.model.indexes import HELPFUL_SORT_KEY
from storage.model.items import (
    ENTRY_VERSION_ATTR,
    HELPFUL_ATTR,
    NOT_HELPFUL_ATTR,
    STATUS_ATTR,
    VERSION_ATTR,
    VOTE_ATTR,
    comment_key,
    entry_key,
    item_to_comment,
    item_version,
)
from storage.writes.facet_parts import listed
from storage.writes.state import Stored
from storage.writes.transaction import CallBudget, Cancellation, Part, transact

COMMENT = "comment"
# Vote items a transaction carries: DynamoDB takes 100 actions, one is the comment.
MAX_BALLOTS = 99
# UpdateItems that bring the key up before leaving it to the next vote or repair. A
# failed condition ends them (a later write moved the count and follows up itself); a
# conflict with a transaction in flight is retried with the voters' backoff: the last
# follow-up on a comment has no later one to leave the key to.
FOLLOW_UP_ATTEMPTS = 8
# While votes keep coming, the key is brought up at least this often.
KEY_LAG_SECONDS = 1.0
# How long a voter whose vote item changed under a batch votes in transactions of their
# own (see the module doc).
CONTESTED_SECONDS = 5.0


class Moved(StorageError):
    """The voter's vote item is not what they read: read it again and decide again."""


@dataclass(eq=False, slots=True)
class Ballot:
    """One viewer's vote moving from ``before`` to ``after``, waiting for its transaction."""

    # The table the lane's calls go through: shared by the voters of a batch, so no one
    # request's budget or figures carry the others' (``vote_helpful``'s ``shared``).
    table: TableRef
    voter: str
    before: Vote | None
    after: Vote | None
    now: str
    budget: CallBudget
    backoff: Backoff
    seen: Stored  # the comment as the voter read it
    done: asyncio.Future[Comment] = field(
        default_factory=lambda: asyncio.get_running_loop().create_future()
    )
    conflicts: int = 0  # transactions of this vote cancelled by contention
    # Its request gave up while it was in a transaction: if that one does not commit, the
    # vote is not tried again.
    abandoned: bool = False

    def delta(self, vote: Vote) -> int:
        return int(self.after is vote) - int(self.before is vote)

    def settle(self, result: Comment | BaseException) -> None:
        if self.done.done():  # its request gave up; the outcome stands regardless
            return
        if isinstance(result, BaseException):
            self.done.set_exception(result)
        else:
            self.done.set_result(result)


async def cast(table: TableRef, comment_id: str, ballot: Ballot) -> Comment:
    """Commit the vote with the others of this process on the same comment; the comment
    as read right after its transaction committed. ``Moved``: read the vote again."""

    async def serve(lane: Lane[Ballot]) -> None:
        await _serve(comment_id, lane)

    table.memory(VoteLanes).join(comment_id, ballot, serve)
    try:
        return await asyncio.shield(ballot.done)
    except asyncio.CancelledError:
        # Given up before its turn: it is never written. Once taken, the transaction
        # under way may commit (nobody waits for the outcome), but it is not tried again.
        if not table.memory(VoteLanes).leave(comment_id, ballot):
            ballot.abandoned = True
            ballot.done.add_done_callback(_ignored)
        raise


def _ignored(done: asyncio.Future[Comment]) -> None:
    if not done.cancelled():
        done.exception()


class VoteLanes(Lanes[Ballot]):
    """The process's ballots waiting for their comment's next transaction (kept in the
    table's memories: ``TableRef.memory``)."""


@dataclass(slots=True)
class _Served:
    """What a lane's task knows of its comment between rounds."""

    # The read after the last commit, when its HSK was behind its count (with the table
    # and backoff to set it with), and since when (loop time) the key has lagged.
    stale: tuple[TableRef, Item, Backoff] | None = None
    stale_since: float = 0.0
    # Voters whose vote item changed under a batch, until when (loop time) they vote in
    # transactions of their own. Only voters of this lane, and dropped with it.
    contested: dict[str, float] = field(default_factory=dict)

    def lagging(self, now: float) -> bool:
        return self.stale is not None and now - self.stale_since >= KEY_LAG_SECONDS


async def _serve(comment_id: str, lane: Lane[Ballot]) -> None:
    served = _Served()
    batch: list[Ballot] = []
    loop = asyncio.get_running_loop()
    try:
        while lane.waiting:
            batch = _take(lane, served, loop.time())
            await _round(comment_id, lane, batch, served)
            if served.stale is not None and (not lane.waiting or served.lagging(loop.time())):
                # Batches committed and the key lags their count: brought up now, as no
                # vote waits (or it has lagged long enough).
                await follow_up(*served.stale)
                served.stale = None
    except BaseException as exc:
        # A bug or the loop shutting down: no voter may hang (settling is idempotent).
        for ballot in [*batch, *lane.waiting]:
            ballot.settle(exc if isinstance(exc, Exception) else WriteConflict("stopped"))
        lane.waiting.clear()
        raise


def _take(lane: Lane[Ballot], served: _Served, now: float) -> list[Ballot]:
    """The oldest waiting votes, at most one per viewer (two actions on one item make an
    invalid transaction) and ``MAX_BALLOTS``; a contested voter's vote goes alone."""
    for voter, until in list(served.contested.items()):
        if until <= now:
            del served.contested[voter]
    batch: list[Ballot] = []
    voters: set[str] = set()
    for ballot in lane.waiting:
        if len(batch) == MAX_BALLOTS or ballot.done.done():
            continue
        contested = ballot.voter in served.contested
        if contested and not batch:
            batch.append(ballot)  # first in line: alone
            break
        if not contested and ballot.voter not in voters:
            voters.add(ballot.voter)
            batch.append(ballot)
    lane.waiting[:] = [b for b in lane.waiting if b not in batch and not b.done.done()]
    return batch


async def _round(comment_id: str, lane: Lane[Ballot], batch: list[Ballot], served: _Served) -> None:
    """One transaction of ``batch``: each vote settled or put back in front of the lane.

    When no vote waits, the HSK is brought up before the voters are answered: a viewer
    who reloads the helpful order after their answer sees the comment in its place."""
    going = []
    for ballot in batch:
        try:
            ballot.budget.spend()
        except WriteConflict as exc:
            ballot.settle(exc)
        else:
            going.append(ballot)
    if not going:
        return
    table = going[0].table
    loop = asyncio.get_running_loop()
    try:
        parts = _parts(table, comment_id, going)
        cancel = await transact(table, parts, CallBudget())
        if cancel is None:
            response = await table.client.get_item(
                TableName=table.name, Key=comment_key(comment_id), ConsistentRead=True
            )
            item = response.get("Item")
            if item and _lags(item):
                if served.stale is None:
                    served.stale_since = loop.time()
                served.stale = (table, item, going[0].backoff)
                if not lane.waiting or served.lagging(loop.time()):
                    # Before answering: a voter who reloads the helpful order sees the
                    # comment in its place (else the follow-up after the next batch).
                    await follow_up(*served.stale)
                    served.stale = None
            else:
                served.stale = None
            for ballot in going:
                ballot.settle(
                    item_to_comment(item)
                    if item
                    else CommentNotFound(f"comment {comment_id} was deleted just after the vote")
                )
            return
    except StorageError as exc:
        for ballot in going:
            ballot.settle(exc)
        return
    for n, ballot in enumerate(going):
        if cancel.failed(_name(n)):
            served.contested[ballot.voter] = loop.time() + CONTESTED_SECONDS
    again = _refused(comment_id, going, cancel)
    if again and not cancel.any_condition_failed:  # contention: pause, then all again
        for ballot in again:
            ballot.conflicts += 1
        worn = [b for b in again if b.conflicts >= b.backoff.attempts or b.abandoned]
        for ballot in worn:
            ballot.settle(WriteConflict("the comment kept meeting concurrent votes; retry"))
        again = [b for b in again if b not in worn]
        # Back in the lane before the pause: a request that gives up meanwhile takes its
        # vote back (``Lanes.leave``), and it is never written.
        lane.waiting[:0] = [b for b in again if not b.abandoned]
        if again:
            await again[0].backoff.sleep(max(b.conflicts for b in again))
        return
    for ballot in again:
        if ballot.abandoned:
            ballot.settle(WriteConflict("given up by its request"))
    lane.waiting[:0] = [b for b in again if not b.abandoned]


def _refused(comment_id: str, going: list[Ballot], cancel: Cancellation) -> list[Ballot]:
    """Settle the votes a cancellation refuses; the others, to go again."""
    again = []
    for n, ballot in enumerate(going):
        if cancel.failed(_name(n)):
            ballot.settle(Moved("the viewer's vote changed meanwhile"))
        else:
            again.append(ballot)
    if not cancel.failed(COMMENT):
        return again
    old = cancel.item(COMMENT)
    if not old:
        error: StorageError = CommentNotFound(f"comment {comment_id} does not exist")
        return _settle_all(again, error)
    comment = item_to_comment(old)
    if not comment.published:
        return _settle_all(again, NotPublished("only published comments can be voted on"))
    for ballot in [b for b in again if b.voter == comment.author_id]:
        ballot.settle(OwnComment("authors cannot vote on their own comment"))
    again = [b for b in again if b.voter != comment.author_id]
    held = {Vote.HELPFUL: comment.helpful, Vote.NOT_HELPFUL: comment.not_helpful}
    for vote, count in held.items():
        if count < sum(b.before is vote for b in again):
            # The count holds fewer votes than the vote items: counts drifted, which no
            # retry mends (``repair`` does).
            broken = CounterInvariantBroken(f"comment {comment_id}: {vote.value} below its votes")
            return _settle_all([b for b in again if b.before is vote], broken) + [
                b for b in again if b.before is not vote
            ]
    return again


def _settle_all(ballots: list[Ballot], error: StorageError) -> list[Ballot]:
    for ballot in ballots:
        ballot.settle(error)
    return []


def _name(n: int) -> str:
    return f"vote {n}"


def _parts(table: TableRef, comment_id: str, going: list[Ballot]) -> list[Part]:
    """Each vote item on its own condition, and the comment's counts moved by their sum
    (HSK follows after the commit, from the count read then)."""
    parts = [_vote_part(table, comment_id, n, b) for n, b in enumerate(going)]
    u = Update()
    for attr, vote in ((HELPFUL_ATTR, Vote.HELPFUL), (NOT_HELPFUL_ATTR, Vote.NOT_HELPFUL)):
        delta = sum(b.delta(vote) for b in going)
        if delta:
            u.add(attr, delta)
        withdrawn = sum(b.before is vote for b in going)
        if withdrawn:
            # Always true while counts equal the vote items (the withdrawn ones are in
            # it): a count never goes below zero, even a drifted one.
            u.condition(Attr(attr).ge(withdrawn))
    # Old processes write the whole comment on the condition of the version they read:
    # moving it makes them read again rather than overwrite these counts.
    u.add(VERSION_ATTR, 1)
    u.condition(Attr("PK").exists())
    u.condition(_published())
    u.condition(~Attr("author").is_in([b.voter for b in going]))
    request = u.request(table.name, comment_key(comment_id), return_old=True)
    return [*parts, Part(COMMENT, {"Update": request})]


def _published() -> Condition:
    # Comments written before statuses existed were all published.
    status = Attr(STATUS_ATTR)
    return status.eq(Status.PUBLISHED.value) | status.not_exists()


def _vote_part(table: TableRef, comment_id: str, n: int, ballot: Ballot) -> Part:
    """The vote item's write, on the condition that it is still ``before``."""
    before = ballot.before
    as_read = Attr("PK").not_exists() if before is None else Attr(VOTE_ATTR).eq(before.value)
    key = vote_key(comment_id, ballot.voter)
    if ballot.after is None:
        return Part(_name(n), {"Delete": delete_request(table.name, key, as_read)})
    item: Item = {**key, VOTE_ATTR: {"S": ballot.after.value}, "votedAt": {"S": ballot.now}}
    return Part(_name(n), {"Put": put_request(table.name, item, as_read)})


def vote_key(comment_id: str, voter: str) -> Item:
    return {"PK": {"S": keys.comment_pk(comment_id)}, "SK": {"S": keys.vote_sk(voter)}}


def helpful_key(item: Item) -> str | None:
    """The HSK a comment item should carry: None unless it is published."""
    comment = item_to_comment(item)
    if not comment.published:
        return None
    return keys.helpful_sort_key(comment.helpful, comment.sort_key)


def _key_is_stale(item: Item) -> bool:
    want = helpful_key(item)
    return want is not None and item.get(HELPFUL_SORT_KEY, {}).get("S") != want


def _entry_keys(item: Item) -> list[Item]:
    """The keys of the comment's facet entries (copies of it that show its counts)."""
    comment = item_to_comment(item)
    moves = facet_moves(None, listed(comment))
    pairs = sorted(moves.put, key=lambda p: (p[0].token, p[1].token))
    return [entry_key(comment.comment_id, scope, value) for scope, value in pairs]


def _lags(item: Item) -> bool:
    """Whether a commit leaves a follow-up to do: the helpful order's key behind the count,
    or entries whose counts the votes moved."""
    return _key_is_stale(item) or bool(_entry_keys(item))


async def follow_up(table: TableRef, item: Item, backoff: Backoff) -> None:
    """After a commit: the helpful order's key and the entries' counts brought up to
    ``item`` (as read, strongly consistent), each on its own condition."""
    if _key_is_stale(item):
        await bring_key_up(table, item, backoff)
    await bring_entries_up(table, item, backoff)


async def bring_entries_up(table: TableRef, item: Item, backoff: Backoff) -> int:
    """Set the helpful counts of the comment's entries from ``item`` on the condition that
    each entry copies an older version of the comment (and still exists); how many were
    set. An entry a later transition rewrote copies a newer version and is left as it
    is, so counts only ever move forward, as the key does. What fails here is left to the
    next vote on the comment, or to ``verify``/``repair``, which compare the counts."""
    version = item_version(item)
    comment = item_to_comment(item)
    u = Update()
    u.set(HELPFUL_ATTR, comment.helpful)
    u.set(NOT_HELPFUL_ATTR, comment.not_helpful)
    u.set(ENTRY_VERSION_ATTR, version)
    u.condition(Attr("PK").exists())
    copied = Attr(ENTRY_VERSION_ATTR)
    u.condition(copied.not_exists() | copied.lt(version))

    keys_ = _entry_keys(item)
    if not keys_:
        return 0
    request = u.request(table.name, keys_[0])  # rendered once: the same for every entry

    async def one(key: Item) -> bool:
        for attempt in range(1, FOLLOW_UP_ATTEMPTS + 1):
            try:
                await table.client.update_item(**{**request, "Key": key})
                return True
            except ConditionFailed:
                return False
            except Throttled:
                await backoff.sleep(attempt)
            except StorageError:
                return False
        return False

    done = await asyncio.gather(*(one(key) for key in keys_))
    return sum(done)


async def bring_key_up(table: TableRef, item: Item, backoff: Backoff) -> bool:
    """Set the comment's HSK from ``item`` (as read, strongly consistent) on the condition
    that its helpful count is still the one read and it is still published; True when it
    was set. Contention with a transaction on the comment is retried a few times; a failed
    condition means a later write moved the count and sets the key after it."""
    want = helpful_key(item)
    if want is None:
        return False
    count = item_to_comment(item).helpful
    helpful = Attr(HELPFUL_ATTR)
    u = Update()
    u.set(HELPFUL_SORT_KEY, want)
    u.condition(Attr("PK").exists())  # a deleted comment is not made again
    u.condition(helpful.eq(count) if count else helpful.not_exists() | helpful.eq(0))
    u.condition(_published())
    for attempt in range(1, FOLLOW_UP_ATTEMPTS + 1):
        try:
            await table.client.update_item(
                **u.request(table.name, comment_key(item_to_comment(item).comment_id))
            )
            return True
        except ConditionFailed:
            return False
        except Throttled:
            await backoff.sleep(attempt)
        except StorageError:
            return False  # left for the next vote on the comment, or repair
    return False
