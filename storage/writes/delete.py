"""Deleting a comment: the delete, its counter moves (when it was published) and the return
of its author's slot commit together, conditioned on the comment being exactly as read.
Reports of it are removed afterwards (they are keyed under the comment and never read
without it)."""

from __future__ import annotations

from contextlib import suppress

from storage.base.errors import CommentNotFound, NotAuthor, StorageError
from storage.engine.retry import DEFAULT_BACKOFF, Backoff
from storage.engine.table import TableRef
from storage.model.comments import Comment
from storage.writes import limits
from storage.writes.children import has_children, remove_children
from storage.writes.state import Stored
from storage.writes.transaction import Part
from storage.writes.transition import Change, apply


async def delete_comment(
    table: TableRef,
    comment_id: str,
    *,
    author_id: str | None = None,
    backoff: Backoff = DEFAULT_BACKOFF,
    clean_up: bool = True,
) -> Comment:
    """Delete a comment and uncount it; ``CommentNotFound`` when it does not exist.

    With ``author_id`` the delete only happens if the comment is that author's (``NotAuthor``).
    The counters move by what the comment was when the delete committed: if it changed
    after our read, the delete reads it again and recomputes.
    """

    def decide(stored: Stored) -> Change:
        if author_id is not None and stored.comment.author_id != author_id:
            if not stored.comment.published:
                # Unpublished comments exist for their author and moderators only.
                raise CommentNotFound(f"comment {comment_id} does not exist")
            raise NotAuthor("only the author or a moderator may delete this comment")
        slot: tuple[Part, ...] = ()
        if stored.holds_slot:
            c = stored.comment
            slot = (limits.product_part(table, c.author_id, c.product_id, -1, None),)
        return Change(None, parts=slot)

    applied = await apply(table, comment_id, decide, backoff=backoff)
    deleted = applied.before.comment
    if clean_up and has_children(deleted):
        # The delete has committed: a failure here leaves reports and votes that are never
        # read without their comment (reports also expire on their own).
        with suppress(StorageError):
            await remove_children(table, comment_id)
    return deleted
