"""Domain values of the storage layer: comments, counters and page requests.

All of them are frozen and validate themselves on creation, so a value that exists is valid.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field

from storage.base.errors import InvalidFacet, InvalidPageRequest
from storage.model import keys, rules
from storage.model.facets import MAX_FACET_VALUES, FacetKind, FacetValue, Scope
from storage.model.rules import (
    AUTHOR_MAX,
    _check_token,
    check_idempotency_key,
    clean_author_name,
    clean_body,
    clean_title,
)
from storage.model.tagging import TagRecord

# Shown for an author whose token carried no display name.
ANONYMOUS = "Anonymous"
PAGE_SIZE_MAX = 100
PAGE_SIZE_DEFAULT = 20


class Status(enum.Enum):
    """Where a comment is in its life. Only PUBLISHED comments are listed and counted."""

    PENDING = "PENDING"
    PUBLISHED = "PUBLISHED"
    REJECTED = "REJECTED"


class ModerationMode(enum.Enum):
    """POST publishes new comments at once (moderators act afterwards); PRE holds new and
    edited comments as PENDING until a moderator approves them."""

    POST = "post"
    PRE = "pre"

    @property
    def new_status(self) -> Status:
        """The status a new (or edited) comment gets."""
        return Status.PENDING if self is ModerationMode.PRE else Status.PUBLISHED


# Why a viewer reported a comment (the contract's ReportReason).
REPORT_REASONS: tuple[str, ...] = (
    "SPAM",
    "OFFENSIVE",
    "OFF_TOPIC",
    "PRIVATE_INFORMATION",
    "FAKE",
    "OTHER",
)


class Vote(enum.Enum):
    """A viewer's verdict on whether a comment helped."""

    HELPFUL = "HELPFUL"
    NOT_HELPFUL = "NOT_HELPFUL"


@dataclass(frozen=True, slots=True)
class Moderation:
    """Reports since the last decision, and that decision."""

    # Decisions taken so far: a report counts once per viewer per round.
    round: int = 0
    report_count: int = 0
    reasons: tuple[str, ...] = ()  # distinct, in REPORT_REASONS order
    decided_by: str | None = None
    decided_at: str | None = None
    note: str | None = None


@dataclass(frozen=True, slots=True)
class Reply:
    """The merchant's answer shown under a comment."""

    body: str
    author: str
    created_at: str
    edited_at: str | None = None


@dataclass(frozen=True, slots=True)
class Comment:
    """A stored comment."""

    comment_id: str
    product_id: str
    language: str
    rating: int
    title: str | None
    body: str
    author_id: str  # who wrote it (the token's sub): who may delete it; never shown as is
    created_at: str  # ISO-8601 UTC with milliseconds
    author_name: str | None = None  # display name at the time of writing; None: the id
    status: Status = Status.PUBLISHED
    # The author's token listed the product in its purchases claim when they wrote it.
    verified: bool = False
    edited_at: str | None = None  # when the author last changed text, rating or language
    # When it last entered PENDING: its place in the moderation queue (PENDING only).
    submitted_at: str | None = None
    moderation: Moderation = Moderation()
    reply: Reply | None = None
    # Viewers' helpful votes (one per viewer, kept as items under the comment).
    helpful: int = 0
    not_helpful: int = 0
    # Its facet values (answers to the shop's questions, topics; storage.model.facets):
    # while published, it is in each value's listings and counted in each value's counters.
    facets: frozenset[FacetValue] = frozenset()
    # The reviewer received something for it (disclosed; set on create, never edited).
    incentivized: bool = False
    # How its topics were tagged: the taxonomy's fingerprint and why (None: never tagged).
    tagging: TagRecord | None = None
    # The product group it counts in while published (storage.model.groups): set when it
    # becomes published, from its product's membership, and changed only by a group move.
    group_id: str | None = None

    @property
    def revised_at(self) -> str:
        """When its content (text, rating, language) last changed: its latest edit, or its
        creation. Edits keep it strictly increasing, so it names one revision."""
        return self.edited_at or self.created_at

    @property
    def published(self) -> bool:
        """Listed and counted (PENDING and REJECTED comments are neither)."""
        return self.status is Status.PUBLISHED

    @property
    def queue_key(self) -> str | None:
        """Its position in the moderation queue: submission time, then id (PENDING only)."""
        if self.status is not Status.PENDING:
            return None
        return keys.sort_key(self.submitted_at or self.created_at, self.comment_id)

    @property
    def display_author(self) -> str:
        """The name to show; never the author id, which may be an account number."""
        return self.author_name or ANONYMOUS

    @property
    def sort_key(self) -> str:
        return keys.sort_key(self.created_at, self.comment_id)


@dataclass(frozen=True, slots=True)
class NewComment:
    """What a caller asks to create; ``created_at`` is set by the writer unless given."""

    product_id: str
    language: str
    rating: int
    body: str
    author_id: str
    title: str | None = None
    idempotency_key: str | None = None
    created_at: str | None = None
    author_name: str | None = None
    # Derived by the API from the author's token, never taken from what a client sends.
    verified: bool = False
    facets: frozenset[FacetValue] = frozenset()
    incentivized: bool = False
    tagging: TagRecord | None = None  # how the topics among ``facets`` were tagged

    def __post_init__(self) -> None:
        rules.validate_product_id(self.product_id)
        object.__setattr__(self, "language", rules.validate_language(self.language))
        rules.validate_rating(self.rating)
        checked = {
            "body": clean_body(self.body),
            "title": clean_title(self.title),
            "author_name": clean_author_name(self.author_name),
        }
        for attribute, value in checked.items():
            object.__setattr__(self, attribute, value)
        # The author id and the key are compared, never shown: checked, not normalised.
        _check_token("author id", self.author_id, AUTHOR_MAX)
        check_idempotency_key(self.idempotency_key)
        if self.created_at is not None:
            keys.parse_timestamp(self.created_at)
        check_facets(self.facets)

    def stored_as(
        self,
        comment_id: str,
        created_at: str,
        author_name: str | None,
        status: Status = Status.PUBLISHED,
    ) -> Comment:
        """The comment this request makes (or made, replayed from its idempotency record,
        which keeps the id, the time and the display name the first request had)."""
        return Comment(
            comment_id=comment_id,
            product_id=self.product_id,
            language=self.language,
            rating=self.rating,
            title=self.title,
            body=self.body,
            author_id=self.author_id,
            created_at=created_at,
            author_name=author_name,
            status=status,
            verified=self.verified,
            submitted_at=created_at if status is Status.PENDING else None,
            facets=self.facets,
            incentivized=self.incentivized,
            tagging=self.tagging,
        )


@dataclass(frozen=True, slots=True)
class RatingCounts:
    """Exact counters of one stats item (all languages, or one language)."""

    product_id: str
    language: str | None
    by_rating: tuple[int, int, int, int, int] = (0, 0, 0, 0, 0)  # ratings 1..5
    # Of those, comments by verified purchasers, per rating.
    verified: tuple[int, int, int, int, int] = (0, 0, 0, 0, 0)

    def __post_init__(self) -> None:
        for counts in (self.by_rating, self.verified):
            if len(counts) != len(rules.RATINGS) or any(c < 0 for c in counts):
                raise ValueError(f"counts must be five non-negative numbers: {counts}")

    def only_verified(self) -> RatingCounts:
        """The counters of verified purchases only, as counts of their own."""
        return RatingCounts(self.product_id, self.language, self.verified, self.verified)

    def count(self, rating: int) -> int:
        return self.by_rating[rules.validate_rating(rating) - 1]

    @property
    def total(self) -> int:
        return sum(self.by_rating)

    @property
    def average(self) -> float | None:
        total = self.total
        if total == 0:
            return None
        return sum(r * c for r, c in zip(rules.RATINGS, self.by_rating, strict=True)) / total

    def matching(self, ratings: frozenset[int] | None) -> int:
        """How many comments a rating filter (None = all) matches."""
        if ratings is None:
            return self.total
        return sum(self.count(r) for r in ratings)


class Order(enum.Enum):
    """The orders of a product's comments; ties are broken by the GSISK everywhere (newest
    first), so each is a total order."""

    NEWEST = "NEWEST"
    OLDEST = "OLDEST"
    HIGHEST_RATING = "HIGHEST_RATING"  # 5 stars first, newest first within a rating
    LOWEST_RATING = "LOWEST_RATING"  # 1 star first, newest first within a rating
    MOST_HELPFUL = "MOST_HELPFUL"  # most helpful votes first, then newest first

    @property
    def by_rating(self) -> bool:
        return self in (Order.HIGHEST_RATING, Order.LOWEST_RATING)


class Direction(enum.Enum):
    """FORWARD walks from newest to oldest (first/after); BACKWARD the other way."""

    FORWARD = "forward"
    BACKWARD = "backward"


@dataclass(frozen=True, slots=True)
class PageRequest:
    """How many comments to return and from which keyset position (a GSISK, exclusive)."""

    size: int = PAGE_SIZE_DEFAULT
    direction: Direction = Direction.FORWARD
    position: str | None = None

    def __post_init__(self) -> None:
        if isinstance(self.size, bool) or not isinstance(self.size, int):
            raise InvalidPageRequest("page size must be an integer")
        if not 0 <= self.size <= PAGE_SIZE_MAX:
            raise InvalidPageRequest(f"page size must be between 0 and {PAGE_SIZE_MAX}")
        if self.position is not None:
            keys.validate_position(self.position)


@dataclass(frozen=True, slots=True)
class ListingFilter:
    """Which comments of a product (or of a group: ``of_group``, and ``product_id`` is the
    group's id) to list: an optional language and rating subset, whether only verified
    purchases, facet values, and whether incentivized reviews are left out."""

    product_id: str
    language: str | None = None
    ratings: frozenset[int] | None = field(default=None)
    verified_only: bool = False
    # Facet values every listed comment has (answers, a topic, photos): AND.
    facets: frozenset[FacetValue] = frozenset()
    # Leave out comments written in exchange for something.
    exclude_incentivized: bool = False
    # The listing of the group whose id ``product_id`` holds: every variant's comments
    # counted in it (its facet value ``*`` and its other values in the group's scope).
    of_group: bool = False

    def __post_init__(self) -> None:
        rules.validate_product_id(self.product_id)
        if self.language is not None:
            object.__setattr__(self, "language", rules.validate_language(self.language))
        object.__setattr__(self, "ratings", rules.validate_ratings(self.ratings))
        if len(self.facets) > MAX_FACET_VALUES:
            raise InvalidFacet(f"a listing takes at most {MAX_FACET_VALUES} facet values")
        if any(not f.kind.listed or f.kind is FacetKind.GROUP_ALL for f in self.facets):
            raise InvalidFacet("a listing filters by answers, topics and photos only")

    @property
    def faceted(self) -> bool:
        """Whether the listing is more than the product's own partitions give (a group's
        listing always is: its comments are the group's entries)."""
        return bool(self.facets) or self.exclude_incentivized or self.of_group

    @property
    def scope(self) -> Scope:
        """Where its comments are counted: the product's scope, or the group's."""
        if self.of_group:
            return Scope.group(self.product_id)
        return Scope.product(self.product_id)


def check_facets(facets: frozenset[FacetValue]) -> None:
    """A comment's own facet values: answers and topics, at most ``MAX_FACET_VALUES``, one
    answer per attribute (the group's listing value is the writer's, never the comment's)."""
    if len(facets) > MAX_FACET_VALUES:
        raise InvalidFacet(f"a comment has at most {MAX_FACET_VALUES} facet values")
    kinds = {f.kind for f in facets}
    if FacetKind.GROUP_ALL in kinds:
        raise InvalidFacet("the group's listing is not a value a comment names")
    if FacetKind.INCENTIVIZED in kinds:
        raise InvalidFacet("incentivized is the comment's own mark, not a value it names")
    answered = [f.key for f in facets if f.kind is FacetKind.ATTRIBUTE]
    if len(answered) != len(set(answered)):
        raise InvalidFacet("an attribute is answered once")
