"""The author edits a comment: text, rating, language, answers. A published comment's
counters move between rating buckets and languages (and the leaderboard) in the same
transaction; under PRE moderation, and for a rejected comment in any mode, the edit waits
for a moderator. Answers replace the stored ones, checked against the product's
definitions; a change of title, body or language tags the topics again
(``storage.writes.comment_facets``). Whether the comment is incentivized is not editable."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timedelta

from storage.base.clock import utc_now
from storage.base.errors import CommentNotFound, NotAuthor
from storage.engine.retry import DEFAULT_BACKOFF, Backoff
from storage.engine.table import TableRef
from storage.model import keys, rules
from storage.model.attributes import DefinitionSet
from storage.model.comments import Comment, ModerationMode, Status
from storage.model.rules import clean_body, clean_title
from storage.writes.answers import definitions_for
from storage.writes.comment_facets import edited_facets
from storage.writes.state import Stored, read_stored
from storage.writes.tagging import FreshTagger, FreshTaxonomy, TaggerAged, TaxonomySource
from storage.writes.transaction import CallBudget
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
    # Replaces every answer ([{"key", "value"}] or Answer); () clears them. Checked against
    # the definitions when the edit is applied (InvalidFields, every problem with its path).
    attributes: Sequence[object] | None = None

    def __post_init__(self) -> None:
        if isinstance(self.attributes, list):
            object.__setattr__(self, "attributes", tuple(self.attributes))
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

    @property
    def retags(self) -> bool:
        """Whether it may change what topics are tagged from (title, body, language)."""
        fields = (self.title, self.body, self.language)
        return self.remove_title or any(f is not None for f in fields)


def edited(c: Comment, edit: Edit, mode: ModerationMode, now: str) -> Comment:
    """The comment after the edit (its answers and topics aside), or ``c`` itself when the
    edit changes nothing."""
    return revision(c, edit.applied_to(c), mode, now)


def revision(c: Comment, content: Comment, mode: ModerationMode, now: str) -> Comment:
    """The comment with the edited ``content``, or ``c`` itself when nothing changed.

    A PUBLISHED comment stays published under POST moderation and waits again under PRE; a
    REJECTED one waits for a moderator in both (an edit must not undo a rejection); a
    PENDING one keeps its place in the queue.
    """
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
    taxonomy: TaxonomySource | None = None,
) -> Comment:
    """Apply the author's edit; ``NotAuthor`` for anyone else's comment, ``CommentNotFound``
    when it does not exist, ``InvalidFields`` for answers the definitions refuse. Returns
    the comment as it now is. ``taxonomy``: where the tagger comes from when the edit
    changes what topics are tagged from (the process's cache; else read each time)."""
    now = keys.format_timestamp(clock())
    budget = CallBudget()
    tags = FreshTagger(table, taxonomy or FreshTaxonomy())
    if edit.retags:
        await tags.get()
    definitions = DefinitionSet()
    if edit.attributes:
        # The definitions are the product's, which a comment never changes: one read of
        # the comment to learn it, then the definitions as stored now.
        first = await read_stored(table, comment_id, budget)
        if first is None:
            raise CommentNotFound(f"comment {comment_id} does not exist")
        definitions = await definitions_for(table, first.comment.product_id, budget=budget)

    def decide(stored: Stored) -> Change:
        c = stored.comment
        if c.author_id != author_id:
            if not c.published:
                # Unpublished comments exist for their author and moderators only.
                raise CommentNotFound(f"comment {comment_id} does not exist")
            raise NotAuthor("only the author may edit a comment")
        content = edited_facets(
            c,
            edit.applied_to(c),
            answers=edit.attributes,
            definitions=definitions,
            tagger=tags.current,
        )
        return Change(revision(c, content, moderation, now))

    while True:
        try:
            applied = await apply(table, comment_id, decide, backoff=backoff, budget=budget)
            break
        except TaggerAged:  # retries took long: a tagger taken again, then decided again
            await tags.get()
    assert applied.after is not None
    return applied.after
