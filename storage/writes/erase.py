"""One item of an author's erasure at a time: a comment anonymized or deleted, a vote
withdrawn, a report taken back. Each is a transition (``storage.writes.transition``): one
transaction conditioned on the comment exactly as read, with its counter, histogram,
leaderboard, facet, group and queue moves, so every count stays exact however the erasure
races other writes, and running a step again changes nothing (it finds nothing to do).

A vote is withdrawn by a transition, not through the voters' lane
(``storage.writes.ballots``): the lane refuses comments that are not published, and an
erasure must take the vote back from a comment moderated since. The transition moves the
helpful counts from the version read, rewrites the helpful order's key and the facet
entries' copies with them, and deletes the vote item on the condition that it is still
the vote read, so the counts equal the vote items at its commit as after a voter's own
withdrawal.
"""

from __future__ import annotations

from dataclasses import replace

from storage.base.errors import (
    CommentNotFound,
    ConditionFailed,
    CounterInvariantBroken,
    NotAuthor,
    StorageError,
)
from storage.base.expressions import Attr, Condition, delete_request, get_request
from storage.base.types import Item
from storage.engine.retry import DEFAULT_BACKOFF, Backoff
from storage.engine.table import TableRef
from storage.model import keys
from storage.model.comments import Comment, Vote
from storage.model.erasure import ANONYMOUS, anonymous_author_id
from storage.model.items import VOTE_ATTR
from storage.writes import limits
from storage.writes.ballots import vote_key
from storage.writes.delete import delete_comment
from storage.writes.state import Stored
from storage.writes.transaction import Part
from storage.writes.transition import Change, Decide, apply

ITEM = "erased item"
_ROUND = "round"
# Rounds of "the vote or report changed under us" (only the subject's own writes change
# it, and the erasure runs while they are refused or rare).
ATTEMPTS = 8


class _Changed(StorageError):
    """The vote or report item is not as read: read it again."""


async def anonymize_comment(
    table: TableRef, comment_id: str, subject: str, *, backoff: Backoff = DEFAULT_BACKOFF
) -> bool:
    """Keep the comment's text under ``ANONYMOUS``, with a fresh random author id and no
    slot of the subject's; True when this call changed it (False: not the subject's, or
    gone). Its place, counts and status stay as they are."""

    def decide(stored: Stored) -> Change:
        c = stored.comment
        if c.author_id != subject:
            return Change(c)  # anonymized already (or never the subject's): nothing to do
        after = replace(c, author_id=anonymous_author_id(), author_name=ANONYMOUS)
        slot: tuple[Part, ...] = ()
        if stored.holds_slot:
            # The slot item is in the subject's partition, removed with it: give it back
            # here so that it counts exactly what holds it until then.
            slot = (limits.product_part(table, subject, c.product_id, -1, None),)
        return Change(after, parts=slot, holds_slot=False)

    try:
        applied = await apply(table, comment_id, decide, backoff=backoff)
    except CommentNotFound:
        return False
    # A transition committed only when it was computed from the subject's comment.
    return applied.before.comment.author_id == subject


async def delete_authored(
    table: TableRef, comment_id: str, subject: str, *, backoff: Backoff = DEFAULT_BACKOFF
) -> bool:
    """Delete the subject's comment through the delete path (every count moves with it,
    its slot is given back, its reports and votes removed); True when this call did."""
    try:
        await delete_comment(table, comment_id, author_id=subject, backoff=backoff)
    except (CommentNotFound, NotAuthor):
        return False
    return True


async def withdraw_vote(
    table: TableRef, comment_id: str, voter: str, *, backoff: Backoff = DEFAULT_BACKOFF
) -> bool:
    """Take the voter's vote off the comment, whatever its status; True when this call
    did. A vote left under a deleted comment (its tidy-up failed) is deleted alone: no
    count holds it."""
    key = vote_key(comment_id, voter)
    for _ in range(ATTEMPTS):
        found = await _read(table, key)
        if found is None:
            return False
        vote = Vote(found[VOTE_ATTR]["S"])
        still = Attr(VOTE_ATTR).eq(vote.value)

        def decide(stored: Stored, vote: Vote = vote, still: Condition = still) -> Change:
            c = stored.comment
            after = replace(
                c,
                helpful=c.helpful - (vote is Vote.HELPFUL),
                not_helpful=c.not_helpful - (vote is Vote.NOT_HELPFUL),
            )
            if min(after.helpful, after.not_helpful) < 0:
                raise CounterInvariantBroken(f"comment {comment_id}: votes below their items")
            return _with_removal(table, after, key, still)

        if not await _transition_or_orphan(table, comment_id, decide, key, still, backoff):
            continue
        return True
    raise _Changed("the vote kept changing under the erasure")


async def remove_report(
    table: TableRef, comment_id: str, reporter: str, *, backoff: Backoff = DEFAULT_BACKOFF
) -> bool:
    """Take the reporter's report back: the item deleted and, when it counts in the
    comment's current round, the round's report count moved down with it (the reasons
    listed stay: other reports may share them). True when this call did."""
    key = {"PK": {"S": keys.comment_pk(comment_id)}, "SK": {"S": keys.report_sk(reporter)}}
    for _ in range(ATTEMPTS):
        found = await _read(table, key)
        if found is None:
            return False
        round_ = int(found.get(_ROUND, {}).get("N", "0"))
        still = Attr(_ROUND).eq(round_)

        def decide(stored: Stored, round_: int = round_, still: Condition = still) -> Change:
            c = stored.comment
            m = c.moderation
            after = c
            if m.round == round_ and m.report_count > 0:
                after = replace(c, moderation=replace(m, report_count=m.report_count - 1))
            return _with_removal(table, after, key, still)

        if not await _transition_or_orphan(table, comment_id, decide, key, still, backoff):
            continue
        return True
    raise _Changed("the report kept changing under the erasure")


def _with_removal(table: TableRef, after: Comment, key: Item, still: Condition) -> Change:
    part = Part(ITEM, {"Delete": delete_request(table.name, key, still)})
    return Change(after, parts=(part,), refusals=((ITEM, lambda: _Changed("changed")),))


async def _transition_or_orphan(
    table: TableRef,
    comment_id: str,
    decide: Decide,
    key: Item,
    still: Condition,
    backoff: Backoff,
) -> bool:
    """Run the transition; False when the item changed under it (read it again)."""
    try:
        await apply(table, comment_id, decide, backoff=backoff)
        return True
    except _Changed:
        return False
    except CommentNotFound:
        try:
            await table.client.delete_item(**delete_request(table.name, key, still))
        except ConditionFailed:
            return False
        return True


async def _read(table: TableRef, key: Item) -> Item | None:
    response = await table.client.get_item(**get_request(table.name, key, consistent=True))
    item: Item | None = response.get("Item")
    return item
