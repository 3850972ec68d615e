"""Helpful votes: one per viewer and comment, changeable and withdrawable.

A vote is an item under the comment (``VOTE#<digest of the voter>``). Casting, changing
or withdrawing it commits in one transaction with the comment's counts, and depends only
on that viewer's vote item: the item must be as read (absent, or the vote we read), and
the counts move by ``ADD`` of the difference, with no condition on the comment's version.

This is the one exception to the rule of ``storage.writes`` (STYLE rule 11): a
commutative count that no other state is computed from (helpful votes) may move by
``ADD``, conditioned only on the voter's own item. It holds because the counts equal the
vote items at every commit: a vote item is only written with its count's move, on the
condition that it still is the vote the move was computed from, so votes of different
viewers commute and no voter waits for another. The comment is conditioned only on what
other voters never change: it exists, is published, is not the voter's own, and (always
true while counts are exact) holds at least the votes being withdrawn.

The comment's version still moves (``ADD version 1``, commutative too): processes of the
previous release write the whole comment computed from the version they read, on the
condition of that version, and must read again rather than overwrite these counts.

Votes of one process on one comment go through one lane, one transaction at a time with
the votes that arrived meanwhile (``storage.writes.ballots``), which also keeps the
helpful order's key (HSK) up with the count and states how far it may lag.
A vote item changed under a request (another request of the same viewer) is read again
and the move recomputed, so a repeated request changes nothing.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime

from storage.base.clock import utc_now
from storage.base.errors import CommentNotFound, NotPublished, OwnComment, WriteConflict
from storage.base.expressions import get_request
from storage.engine.batch import batch_get_items
from storage.engine.retry import DEFAULT_BACKOFF, Backoff
from storage.engine.table import TableRef
from storage.model import keys, rules
from storage.model.comments import Comment, Vote
from storage.model.items import VOTE_ATTR, comment_key
from storage.writes.ballots import Ballot, Moved, cast, vote_key
from storage.writes.state import Stored
from storage.writes.transaction import CallBudget

# Rounds of "the vote changed under us": each one means another request of the same
# viewer on the same comment committed in between, so a handful is plenty.
ATTEMPTS = 8


@dataclass(frozen=True, slots=True)
class VoteResult:
    comment: Comment  # as it now is
    vote: Vote | None  # the viewer's vote now
    changed: bool  # False: it already was that vote


async def read_vote(table: TableRef, comment_id: str, voter: str) -> Vote | None:
    """The viewer's vote on the comment, read consistently (what a write conditions on)."""
    response = await table.client.get_item(
        **get_request(
            table.name, vote_key(comment_id, voter), projection=[VOTE_ATTR], consistent=True
        )
    )
    item = response.get("Item")
    return None if item is None else Vote(item[VOTE_ATTR]["S"])


async def votes_of(table: TableRef, voter: str, comment_ids: Sequence[str]) -> dict[str, Vote]:
    """The viewer's votes on these comments (those they voted on), in one batched read."""
    found = await batch_get_items(table, [vote_key(cid, voter) for cid in comment_ids])
    by_pk = {item["PK"]["S"]: Vote(item[VOTE_ATTR]["S"]) for item in found}
    return {cid: by_pk[pk] for cid in comment_ids if (pk := keys.comment_pk(cid)) in by_pk}


async def vote_helpful(
    table: TableRef,
    comment_id: str,
    *,
    voter: str,
    vote: Vote | None,
    backoff: Backoff = DEFAULT_BACKOFF,
    clock: Callable[[], datetime] = utc_now,
    shared: TableRef | None = None,
) -> VoteResult:
    """Set the viewer's vote (None withdraws it) on a published comment of someone else's.
    ``NotPublished``, ``OwnComment`` and ``CommentNotFound`` refuse; asking for the vote
    one already has changes nothing. ``shared``: the table the lane's transactions go
    through, which several voters' requests share (not one request's metered view, whose
    budget and figures are that request's own); ``table`` by default."""
    rules.validate_comment_id(comment_id)
    now = keys.format_timestamp(clock())
    # One budget for every read and attempt: a vote makes no more calls than any write.
    budget = CallBudget()
    for _ in range(ATTEMPTS):
        budget.spend()
        current, stored = await _read(table, comment_id, voter)
        if stored is None:
            raise CommentNotFound(f"comment {comment_id} does not exist")
        comment = stored.comment
        # Refused here from what was read; the transaction's conditions refuse the same
        # when the comment changed since.
        if comment.author_id == voter:
            raise OwnComment("authors cannot vote on their own comment")
        if not comment.published:
            raise NotPublished("only published comments can be voted on")
        if current is vote:
            return VoteResult(comment, vote, False)
        ballot = Ballot(shared or table, voter, current, vote, now, budget, backoff, stored)
        try:
            return VoteResult(await cast(table, comment_id, ballot), vote, True)
        except Moved:
            continue
    raise WriteConflict("the vote kept changing under this request; retry")


async def _read(table: TableRef, comment_id: str, voter: str) -> tuple[Vote | None, Stored | None]:
    """The viewer's vote and the comment, both strongly consistent, in one call."""
    comment, vote = comment_key(comment_id), vote_key(comment_id, voter)
    found = await batch_get_items(table, [comment, vote], consistent=True)
    by_sk = {item["SK"]["S"]: item for item in found}
    stored = by_sk.get(comment["SK"]["S"])
    voted = by_sk.get(vote["SK"]["S"])
    return (
        None if voted is None else Vote(voted[VOTE_ATTR]["S"]),
        None if stored is None else Stored.of(stored),
    )
