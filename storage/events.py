"""What a change of the table means to a product page: comment events and fresh counters.

From the stream's changes (``storage.stream``), a pure translation:

- a comment that becomes PUBLISHED (created published, approved, restored) is PUBLISHED;
- a published comment whose text, title, rating, language or merchant reply changed is
  EDITED (helpful counts move with every vote and are not an edit);
- a comment that leaves PUBLISHED for any reason (deleted, rejected, sent back to the
  queue by reports) is REMOVED;
- a stats item's new image is the product's (or language's) fresh counters.

Everything else (votes, reports, slots, the queue's count) means nothing to a listing.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from storage.items import is_comment_item, item_to_comment
from storage.model import Comment, RatingCounts
from storage.stats import is_stats_item, item_to_counts, scope_of
from storage.stream import Change
from storage.types import Item


class EventKind(enum.Enum):
    PUBLISHED = "PUBLISHED"
    EDITED = "EDITED"
    REMOVED = "REMOVED"


@dataclass(frozen=True, slots=True)
class CommentEvent:
    kind: EventKind
    # The comment as it is now; as it was before, for REMOVED (a deleted one is gone).
    comment: Comment
    sequence: str


def comment_event(change: Change) -> CommentEvent | None:
    """The event a change of a comment item makes, None for any other change."""
    before = _comment(change.old)
    after = _comment(change.new)
    was = before is not None and before.published
    now = after is not None and after.published
    if now and after is not None and not was:
        return CommentEvent(EventKind.PUBLISHED, after, change.sequence)
    if was and before is not None and not now:
        return CommentEvent(EventKind.REMOVED, after or before, change.sequence)
    if was and now and before is not None and after is not None and _edited(before, after):
        return CommentEvent(EventKind.EDITED, after, change.sequence)
    return None


def fresh_counts(change: Change) -> RatingCounts | None:
    """A stats item's counters after the change (zeros when it was removed); None for
    other items."""
    image = change.new if change.new is not None else change.old
    if image is None or not is_stats_item(image):
        return None
    product_id, language = scope_of(image)
    return item_to_counts(product_id, language, change.new)


def _comment(image: Item | None) -> Comment | None:
    if image is None or not is_comment_item(image):
        return None
    return item_to_comment(image)


def _edited(before: Comment, after: Comment) -> bool:
    return (
        before.body != after.body
        or before.title != after.title
        or before.rating != after.rating
        or before.language != after.language
        or before.reply != after.reply
    )
