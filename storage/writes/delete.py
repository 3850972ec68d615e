"""Deleting a comment: the delete and the counter moves commit together, conditioned on the
comment being exactly as read."""

from __future__ import annotations

from storage import keys
from storage.errors import CommentNotFound, NotAuthor, WriteConflict
from storage.expressions import delete_request
from storage.items import comment_key
from storage.model import Comment
from storage.retry import DEFAULT_BACKOFF, Backoff
from storage.table import TableRef
from storage.writes import counters, limits
from storage.writes.create import five_star_turn
from storage.writes.state import Stored, read_stored
from storage.writes.transaction import CallBudget, Part, transact

COMMENT = "comment"


async def delete_comment(
    table: TableRef,
    comment_id: str,
    *,
    author_id: str | None = None,
    backoff: Backoff = DEFAULT_BACKOFF,
) -> Comment:
    """Delete a comment and uncount it; deleting an absent comment changes nothing.

    With ``author_id`` the delete only happens if the comment is that author's (``NotAuthor``).
    The counters move by what the comment was when the delete committed: if it changed
    after our read, the delete reads it again and recomputes.
    """
    keys.validate_comment_id(comment_id)
    budget = CallBudget()
    transient = 0
    while True:
        stored = await read_stored(table, comment_id, budget)
        if stored is None:
            raise CommentNotFound(f"comment {comment_id} does not exist")
        if author_id is not None and stored.comment.author_id != author_id:
            raise NotAuthor("the comment belongs to another author")
        async with five_star_turn(table, stored.comment):
            outcome = await _delete_as_read(table, stored, budget, backoff)
        if outcome == "deleted":
            return stored.comment
        if outcome == "transient":
            transient += 1
            if transient >= backoff.attempts:
                raise WriteConflict("storage kept rejecting the write; retry later")
            await backoff.sleep(transient)
        # "changed": the comment is not what we read; read it again.


async def _delete_as_read(
    table: TableRef, stored: Stored, budget: CallBudget, backoff: Backoff
) -> str:
    five = counters.FiveStars()
    if stored.comment.rating == 5:
        await counters.learn_five(table, stored.comment.product_id, budget, five)
    stale = 0
    while True:
        cancel = await transact(table, _parts(table, stored, five), budget)
        if cancel is None:
            return "deleted"
        if cancel.failed(COMMENT):
            return "changed"
        if counters.lost_five_star_race(cancel, five):
            stale += 1
            if stale > 2:
                await backoff.sleep(min(stale - 2, 3))
            continue
        counters.check_no_drift(cancel, stored.comment.product_id)
        if cancel.any_condition_failed:
            # The author's slot count is below what this comment holds: drift too.
            counters.raise_drift(stored.comment.product_id)
        return "transient"


def _parts(table: TableRef, stored: Stored, five: counters.FiveStars) -> list[Part]:
    delete = delete_request(table.name, comment_key(stored.comment.comment_id), stored.unchanged())
    parts = [Part(COMMENT, {"Delete": delete})]
    parts += counters.parts(table, [counters.Move(stored.comment, -1)], five)
    if stored.holds_slot:
        parts.append(
            limits.product_part(
                table, stored.comment.author_id, stored.comment.product_id, -1, None
            )
        )
    return parts
