"""What a change of the table means to a product page: comment events and fresh counters.

From the stream's changes (``storage.live.stream``), a pure translation:

- ``comment_change`` keeps a change of a comment item as the comment before and after
  (either may be absent: created, deleted);
- ``classify`` says what it means to one listing (a product or a product group, optionally
  a language, a set of ratings, verified purchases, facet values, incentivized reviews left
  out), from what the listing showed before and shows after:

  - a comment that enters the listing (created published, approved, restored, edited into
    its language, ratings or facet values, or moved into its group) is PUBLISHED;
  - a comment that stays in it and whose text, title, rating, language, merchant reply,
    answers or topics changed is EDITED (helpful counts move with every vote and are not
    an edit);
  - a comment that leaves it for any reason (deleted, rejected, sent back to the queue by
    reports, edited out of its ratings or facet values, moved out of its group) is REMOVED;

- a stats item's new image is the product's (or language's) fresh counters.

Everything else (votes, reports, slots, the queue's count) means nothing to a listing. Only
published comments are ever in a listing, so a comment no one but its author and the
moderators may see never makes an event.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from storage.base.types import Item
from storage.live.stream import Change
from storage.model import rules
from storage.model.comments import Comment, ListingFilter, RatingCounts
from storage.model.facets import GROUP_PREFIX, FacetValue
from storage.model.items import is_comment_item, item_to_comment
from storage.model.stats import is_stats_item, item_to_counts, scope_of

# What a group's watchers are keyed by, before its id: a product id never holds '#'.
GROUP_WATCH_PREFIX = GROUP_PREFIX


class EventKind(enum.Enum):
    PUBLISHED = "PUBLISHED"
    EDITED = "EDITED"
    REMOVED = "REMOVED"


@dataclass(frozen=True, slots=True)
class CommentChange:
    """A change of one comment item: the comment before and after it (None: absent)."""

    before: Comment | None
    after: Comment | None
    sequence: str
    # When DynamoDB wrote the change (epoch seconds, the stream's approximate time).
    written_at: float | None = None

    @property
    def product_id(self) -> str:
        either = self.after or self.before
        assert either is not None  # comment_change makes none without a comment
        return either.product_id

    @property
    def comment_id(self) -> str:
        either = self.after or self.before
        assert either is not None
        return either.comment_id

    @property
    def watched(self) -> frozenset[str]:
        """The keys (``Listing.watch_key``) of every listing the change may mean something
        to: its product's, and the groups it counted in before and counts in after."""
        keys = {self.product_id}
        for comment in (self.before, self.after):
            if comment is not None and comment.group_id is not None:
                keys.add(GROUP_WATCH_PREFIX + comment.group_id)
        return frozenset(keys)


@dataclass(frozen=True, slots=True)
class Listing:
    """What one subscriber watches: a product's published comments (or a group's:
    ``of_group``, and ``product_id`` is the group's id: the comments counted in it),
    optionally in one language (lower case, as ``rules.validate_language`` gives it), some
    ratings, verified purchases only, having every one of some facet values, and without
    incentivized reviews: what ``ListingFilter`` lists, the same fields."""

    product_id: str
    language: str | None = None
    ratings: frozenset[int] | None = None
    verified_only: bool = False
    facets: frozenset[FacetValue] = frozenset()
    exclude_incentivized: bool = False
    of_group: bool = False

    @property
    def watch_key(self) -> str:
        """Which changes may concern it (``CommentChange.watched``): a product id, or the
        group's id after a prefix no product id has."""
        return GROUP_WATCH_PREFIX + self.product_id if self.of_group else self.product_id

    def as_filter(self) -> ListingFilter:
        """The listing as storage's reads take it (its counters are read by it)."""
        return ListingFilter(
            self.product_id,
            self.language,
            self.ratings,
            self.verified_only,
            self.facets,
            self.exclude_incentivized,
            self.of_group,
        )

    def shows(self, comment: Comment | None) -> bool:
        if comment is None or not comment.published:
            return False
        where = comment.group_id if self.of_group else comment.product_id
        return (
            where == self.product_id
            and self.facets <= comment.facets
            and not (self.exclude_incentivized and comment.incentivized)
            and (
                self.language is None or rules.validate_language(comment.language) == self.language
            )
            and (self.ratings is None or comment.rating in self.ratings)
            and (not self.verified_only or comment.verified)
        )


def comment_change(change: Change) -> CommentChange | None:
    """The change of a comment item, None for any other item."""
    before = _comment(change.old)
    after = _comment(change.new)
    if before is None and after is None:
        return None
    return CommentChange(before, after, change.sequence, change.written_at)


def classify(change: CommentChange, listing: Listing) -> EventKind | None:
    """What the change means to ``listing``; None: nothing it shows changed."""
    was = listing.shows(change.before)
    now = listing.shows(change.after)
    if now and not was:
        return EventKind.PUBLISHED
    if was and not now:
        return EventKind.REMOVED
    if was and now and change.before is not None and change.after is not None:
        return EventKind.EDITED if _edited(change.before, change.after) else None
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
        or before.facets != after.facets
    )
