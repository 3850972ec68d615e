"""The author edits a comment: text, rating, language. A published comment's counters move
between rating buckets and languages (and the leaderboard) in the same transaction; under
PRE moderation, and for a rejected comment in any mode, the edit waits for a moderator."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import datetime, timedelta

from storage.base.clock import utc_now
from storage.base.errors import CommentNotFound, NotAuthor
from storage.engine.retry import DEFAULT_BACKOFF, Backoff
from storage.engine.table import TableRef
from storage.model import keys, rules
from storage.model.comments import Comment, ModerationMode, Status
from storage.model.rules import clean_body, clean_title
from storage.writes.state import Stored
from storage.writes.transition import Change, apply


@dataclass(frozen=True, slots=True)
class Edit:
    """What the author changes; None leaves a field as it is (``remove_title`` drops the
    title). Values are validated (and normalised) on creation."""

    rating: int | None = None
    language: str | None = None
    title: str | None = None
    body: str | None = None
    remove_title: bool = False

    def __post_init__(self) -> None:
        if self.rating is not None:
            rules.validate_rating(self.rating)
        if self.language is not None:
            object.__setattr__(self, "language", rules.validate_language(self.language))
        if self.title is not None:
            cleaned = clean_title(self.title)
            object.__setattr__(self, "title", cleaned)
            if cleaned is None:
                # A blank title is no title, as when a comment is created.
                object.__setattr__(self, "remove_title", True)
        if self.body is not None:
            object.__setattr__(self, "body", clean_body(self.body))

    def applied_to(self, c: Comment) -> Comment:
        """The comment's content with this edit (status and times unchanged)."""
        title = None if self.remove_title else (self.title or c.title)
        return replace(
            c,
            rating=c.rating if self.rating is None else self.rating,
            language=c.language if self.language is None else self.language,
            title=title,
            body=c.body if self.body is None else self.body,
        )


def edited(c: Comment, edit: Edit, mode: ModerationMode, now: str) -> Comment:
    """The comment after the edit, or ``c`` itself when the edit changes nothing.

    A PUBLISHED comment stays published under POST moderation and waits again under PRE; a
    REJECTED one waits for a moderator in both (an edit must not undo a rejection); a
    PENDING one keeps its place in the queue.
    """
    content = edit.applied_to(c)
    if content == c:
        return c
    status = c.status
    submitted = c.submitted_at
    if c.status is Status.REJECTED or (c.published and mode is ModerationMode.PRE):
        status, submitted = Status.PENDING, now
    return replace(content, status=status, submitted_at=submitted, edited_at=revised(c, now))


def revised(c: Comment, now: str) -> str:
    """The new revision's time: now, or a millisecond after the last revision when the
    clock has not passed it (two edits within a millisecond, or a clock behind), so a
    moderator who names a revision names exactly one."""
    if now > c.revised_at:
        return now
    return keys.format_timestamp(keys.parse_timestamp(c.revised_at) + timedelta(milliseconds=1))


async def edit_comment(
    table: TableRef,
    comment_id: str,
    edit: Edit,
    *,
    author_id: str,
    moderation: ModerationMode = ModerationMode.POST,
    backoff: Backoff = DEFAULT_BACKOFF,
    clock: Callable[[], datetime] = utc_now,
) -> Comment:
    """Apply the author's edit; ``NotAuthor`` for anyone else's comment, ``CommentNotFound``
    when it does not exist. Returns the comment as it now is."""
    now = keys.format_timestamp(clock())

    def decide(stored: Stored) -> Change:
        if stored.comment.author_id != author_id:
            if not stored.comment.published:
                # Unpublished comments exist for their author and moderators only.
                raise CommentNotFound(f"comment {comment_id} does not exist")
            raise NotAuthor("only the author may edit a comment")
        return Change(edited(stored.comment, edit, moderation, now))

    applied = await apply(table, comment_id, decide, backoff=backoff)
    assert applied.after is not None
    return applied.after
