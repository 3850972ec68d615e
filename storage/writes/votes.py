"""Helpful votes: one per viewer and comment, changeable and withdrawable.

A vote is an item under the comment (``VOTE#<digest of the voter>``). Casting, changing
or withdrawing it commits in one transaction with the comment's counts, on two
conditions: the comment is as read (its version), and the vote item is as read (absent,
or the vote we read). Either failing means someone got there first: the vote is read
again and the move recomputed, so the counts equal the vote items whatever the order of
racing requests, and a repeated request changes nothing.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from datetime import datetime

from storage import keys
from storage.errors import (
    CommentNotFound,
    NotPublished,
    OwnComment,
    StorageError,
    WriteConflict,
)
from storage.expressions import Attr, delete_request, get_request, put_request
from storage.items import VOTE_ATTR
from storage.model import Comment, Vote
from storage.reads import batch_get_items
from storage.retry import DEFAULT_BACKOFF, Backoff
from storage.table import TableRef
from storage.types import Item
from storage.writes.create import utc_now
from storage.writes.state import Stored, read_stored
from storage.writes.transaction import CallBudget, Part
from storage.writes.transition import Change, apply

PART = "vote"
# Rounds of "the vote changed under us": each one means another request of the same
# viewer on the same comment committed in between, so a handful is plenty.
ATTEMPTS = 8


class _VoteMoved(StorageError):
    """The vote item is not what this attempt read: read it again."""


class _Unchanged(StorageError):
    """The viewer's vote already is what they ask for: nothing to write."""


@dataclass(frozen=True, slots=True)
class VoteResult:
    comment: Comment  # as it now is
    vote: Vote | None  # the viewer's vote now
    changed: bool  # False: it already was that vote


def counted(c: Comment, before: Vote | None, after: Vote | None) -> Comment:
    """The comment's counts with one viewer's vote moved from ``before`` to ``after``."""

    def delta(vote: Vote) -> int:
        return int(after is vote) - int(before is vote)

    return replace(
        c,
        helpful=c.helpful + delta(Vote.HELPFUL),
        not_helpful=c.not_helpful + delta(Vote.NOT_HELPFUL),
    )


async def read_vote(table: TableRef, comment_id: str, voter: str) -> Vote | None:
    """The viewer's vote on the comment, read consistently (what a write conditions on)."""
    response = await table.client.get_item(
        **get_request(
            table.name, _vote_key(comment_id, voter), projection=[VOTE_ATTR], consistent=True
        )
    )
    item = response.get("Item")
    return None if item is None else Vote(item[VOTE_ATTR]["S"])


async def votes_of(table: TableRef, voter: str, comment_ids: Sequence[str]) -> dict[str, Vote]:
    """The viewer's votes on these comments (those they voted on), in one batched read."""
    found = await batch_get_items(table, [_vote_key(cid, voter) for cid in comment_ids])
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
) -> VoteResult:
    """Set the viewer's vote (None withdraws it) on a published comment of someone else's.
    ``NotPublished``, ``OwnComment`` and ``CommentNotFound`` refuse; asking for the vote
    one already has changes nothing."""
    now = keys.format_timestamp(clock())
    # One budget for every read and attempt: a vote makes no more calls than any write.
    budget = CallBudget()
    for _ in range(ATTEMPTS):
        budget.spend()
        current = await read_vote(table, comment_id, voter)

        def decide(stored: Stored, current: Vote | None = current) -> Change:
            c = stored.comment
            if c.author_id == voter:
                raise OwnComment("authors cannot vote on their own comment")
            if not c.published:
                raise NotPublished("only published comments can be voted on")
            if current is vote:
                raise _Unchanged("the vote is already this one")
            after = counted(c, current, vote)
            if after.helpful < 0 or after.not_helpful < 0:
                # The vote was read before the comment, and changed in between: the
                # counts no longer hold it. Read the vote again.
                raise _VoteMoved("the vote changed between the two reads")
            return Change(
                after,
                parts=(_vote_part(table, comment_id, voter, current, vote, now),),
                refusals=((PART, lambda: _VoteMoved("the vote changed meanwhile")),),
            )

        try:
            applied = await apply(table, comment_id, decide, backoff=backoff, budget=budget)
        except _VoteMoved:
            continue
        except _Unchanged:
            stored = await read_stored(table, comment_id, budget)
            if stored is None:  # deleted since the decision
                raise CommentNotFound(f"comment {comment_id} does not exist") from None
            return VoteResult(stored.comment, vote, False)
        assert applied.after is not None
        return VoteResult(applied.after, vote, True)
    raise WriteConflict("the vote kept changing under this request; retry")


def _vote_key(comment_id: str, voter: str) -> Item:
    return {"PK": {"S": keys.comment_pk(comment_id)}, "SK": {"S": keys.vote_sk(voter)}}


def _vote_part(
    table: TableRef,
    comment_id: str,
    voter: str,
    before: Vote | None,
    after: Vote | None,
    now: str,
) -> Part:
    """The vote item's write, on the condition that it is still ``before``."""
    as_read = Attr("PK").not_exists() if before is None else Attr(VOTE_ATTR).eq(before.value)
    key = _vote_key(comment_id, voter)
    if after is None:
        return Part(PART, {"Delete": delete_request(table.name, key, as_read)})
    item: Item = {**key, VOTE_ATTR: {"S": after.value}, "votedAt": {"S": now}}
    return Part(PART, {"Put": put_request(table.name, item, as_read)})
