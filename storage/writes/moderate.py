"""A moderator's decision: approve (PUBLISHED) or reject (REJECTED), with a note for the
author. Publishing counts the comment, unpublishing uncounts it, in the same transaction.
A decision starts a new round of reports: earlier reporters may report it again."""

from __future__ import annotations

import enum
from collections.abc import Callable
from dataclasses import replace
from datetime import datetime

from storage.base.clock import utc_now
from storage.base.errors import RevisedSinceReview
from storage.engine.retry import DEFAULT_BACKOFF, Backoff
from storage.engine.table import TableRef
from storage.model import keys
from storage.model.comments import Comment, Moderation, Status
from storage.model.rules import clean_note
from storage.writes.state import Stored
from storage.writes.transition import Change, apply


class Decision(enum.Enum):
    APPROVE = "APPROVE"
    REJECT = "REJECT"


def decided(c: Comment, decision: Decision, moderator: str, note: str | None, now: str) -> Comment:
    """The comment after the decision: its status, and a fresh round of reports."""
    status = Status.PUBLISHED if decision is Decision.APPROVE else Status.REJECTED
    moderation = Moderation(
        round=c.moderation.round + 1,
        decided_by=moderator,
        decided_at=now,
        note=note,
    )
    return replace(c, status=status, submitted_at=None, moderation=moderation)


async def moderate_comment(
    table: TableRef,
    comment_id: str,
    decision: Decision,
    *,
    moderator: str,
    note: str | None = None,
    reviewed: str | None = None,
    backoff: Backoff = DEFAULT_BACKOFF,
    clock: Callable[[], datetime] = utc_now,
) -> Comment:
    """Approve or reject a comment in any status (approving a published one dismisses its
    reports); ``CommentNotFound`` when it does not exist. Returns it as it now is.

    ``reviewed``: the revision (``Comment.revised_at``) the moderator decided on; if the
    author has edited since, nothing is decided (``RevisedSinceReview``). The check and
    the decision commit together, under the condition that the comment is as read."""
    note = clean_note(note)
    now = keys.format_timestamp(clock())

    def decide(stored: Stored) -> Change:
        if reviewed is not None and stored.comment.revised_at != reviewed:
            raise RevisedSinceReview(
                f"comment {comment_id} was edited at {stored.comment.revised_at}, after the "
                f"revision of {reviewed} that was reviewed"
            )
        return Change(decided(stored.comment, decision, moderator, note, now))

    applied = await apply(table, comment_id, decide, backoff=backoff)
    assert applied.after is not None
    return applied.after
