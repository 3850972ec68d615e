"""The single table's layout: key schema, the indexes, TTL. Pure description, no I/O,
so the planner and the key functions can import it without loading the engine's client."""

from __future__ import annotations

import enum
import re
from typing import Any

SORT_KEY = "GSISK"
_TABLE_NAME = re.compile(r"[A-Za-z0-9_.-]{3,255}")


def validate_table_name(name: str) -> str:
    """DynamoDB's own rule for table names, checked before any call."""
    if not _TABLE_NAME.fullmatch(name):
        raise ValueError(
            f"table name {name!r} must be 3-255 characters of letters, digits, '_', '-' and '.'"
        )
    return name


class Index(enum.Enum):
    """The GSIs; each value is the index name, ``partition_attr`` its partition key and
    ``sort_attr`` its sort key.

    A comment's keys of the six listing indexes exist only while it is PUBLISHED (and those
    of the two verified ones only for verified purchases), so leaving PUBLISHED removes it
    from every listing without a filter. ``moderationQueue`` holds PENDING comments only.
    ``byAuthor`` holds every comment in every status: its partition key is the comment's
    ``author`` attribute, which every comment has always carried, so the index needs no
    backfill on an existing table.

    Each listing index has a *helpful twin*: the same partitions, sorted by ``HSK`` (the
    zero-padded helpful count, then the GSISK) instead of the GSISK, for the most helpful
    order. A published comment carries ``HSK``, so it is in the twins of the listings it is
    in; the twins cost no key of their own.
    """

    BY_LANG_AND_RATING = "byLangAndRating"
    BY_LANG = "byLang"
    BY_RATING = "byRating"
    ALL = "all"
    VERIFIED_BY_RATING = "verifiedByRating"
    VERIFIED_BY_LANG_AND_RATING = "verifiedByLangAndRating"
    BY_AUTHOR = "byAuthor"
    MODERATION_QUEUE = "moderationQueue"
    HELPFUL_BY_LANG_AND_RATING = "helpfulByLangAndRating"
    HELPFUL_BY_LANG = "helpfulByLang"
    HELPFUL_BY_RATING = "helpfulByRating"
    HELPFUL_ALL = "helpfulAll"
    HELPFUL_VERIFIED_BY_RATING = "helpfulVerifiedByRating"
    HELPFUL_VERIFIED_BY_LANG_AND_RATING = "helpfulVerifiedByLangAndRating"
    # The two generic facet indexes (storage.model.facets): every facet kind's entries.
    FACET_BY_RATING = "facetByRating"
    FACET_BY_LANG_AND_RATING = "facetByLangAndRating"

    @property
    def partition_attr(self) -> str:
        return _PARTITION_ATTRS[_TWIN_OF.get(self, self)]

    @property
    def sort_attr(self) -> str:
        if self is Index.MODERATION_QUEUE:
            return QUEUE_SORT_KEY
        return HELPFUL_SORT_KEY if self in _TWIN_OF else SORT_KEY

    @property
    def helpful_twin(self) -> Index:
        """The index with the same partitions in the most helpful order."""
        return _TWINS[self]


QUEUE_SORT_KEY = "QSK"
HELPFUL_SORT_KEY = "HSK"
_PARTITION_ATTRS = {
    Index.BY_LANG_AND_RATING: "GSIPK",
    Index.BY_LANG: "GSI2PK",
    Index.BY_RATING: "GSI3PK",
    Index.ALL: "GSI4PK",
    Index.VERIFIED_BY_RATING: "GSI5PK",
    Index.VERIFIED_BY_LANG_AND_RATING: "GSI6PK",
    Index.BY_AUTHOR: "author",
    Index.MODERATION_QUEUE: "QPK",
    Index.FACET_BY_RATING: "FPK",
    Index.FACET_BY_LANG_AND_RATING: "FLPK",
}
# The indexes of a published comment's listings (their keys are removed when it leaves).
LISTING_INDEXES = (
    Index.BY_LANG_AND_RATING,
    Index.BY_LANG,
    Index.BY_RATING,
    Index.ALL,
    Index.VERIFIED_BY_RATING,
    Index.VERIFIED_BY_LANG_AND_RATING,
)
_TWINS = {
    Index.BY_LANG_AND_RATING: Index.HELPFUL_BY_LANG_AND_RATING,
    Index.BY_LANG: Index.HELPFUL_BY_LANG,
    Index.BY_RATING: Index.HELPFUL_BY_RATING,
    Index.ALL: Index.HELPFUL_ALL,
    Index.VERIFIED_BY_RATING: Index.HELPFUL_VERIFIED_BY_RATING,
    Index.VERIFIED_BY_LANG_AND_RATING: Index.HELPFUL_VERIFIED_BY_LANG_AND_RATING,
}
_TWIN_OF = {twin: index for index, twin in _TWINS.items()}


def index_definition(index: Index) -> dict[str, Any]:
    """One GSI as CreateTable and UpdateTable take it."""
    return {
        "IndexName": index.value,
        "KeySchema": [
            {"AttributeName": index.partition_attr, "KeyType": "HASH"},
            {"AttributeName": index.sort_attr, "KeyType": "RANGE"},
        ],
        "Projection": {"ProjectionType": "ALL"},
    }


def key_attributes(indexes: list[Index] | tuple[Index, ...]) -> list[dict[str, str]]:
    """AttributeDefinitions for the table's keys and those of ``indexes`` (all strings)."""
    names = ["PK", "SK"]
    for index in indexes:
        for attr in (index.partition_attr, index.sort_attr):
            if attr not in names:
                names.append(attr)
    return [{"AttributeName": a, "AttributeType": "S"} for a in names]


def index_attributes(index: Index) -> list[dict[str, str]]:
    """AttributeDefinitions for ``index``'s own keys, which UpdateTable needs to add it."""
    return [
        {"AttributeName": attr, "AttributeType": "S"}
        for attr in (index.partition_attr, index.sort_attr)
    ]


# Every process reads the table's stream (new and old images: what changed, and from what)
# for live updates and to refresh what it keeps per process; see storage.live.stream and
# storage.live.feed.
STREAM_SPECIFICATION: dict[str, Any] = {
    "StreamEnabled": True,
    "StreamViewType": "NEW_AND_OLD_IMAGES",
}


def table_definition(name: str, *, stream: bool = True) -> dict[str, Any]:
    """The CreateTable request for the model in DESIGN.md (on-demand billing, the stream on
    unless ``stream`` is False: a table nothing follows, such as most test tables, need not
    pay the engine for one)."""
    definition: dict[str, Any] = {
        "TableName": name,
        "BillingMode": "PAY_PER_REQUEST",
        "KeySchema": [
            {"AttributeName": "PK", "KeyType": "HASH"},
            {"AttributeName": "SK", "KeyType": "RANGE"},
        ],
        "AttributeDefinitions": key_attributes(tuple(Index)),
        "GlobalSecondaryIndexes": [index_definition(index) for index in Index],
    }
    if stream:
        definition["StreamSpecification"] = dict(STREAM_SPECIFICATION)
    return definition


# Items that may expire carry this attribute (epoch seconds); see storage.model.items.EXPIRES_ATTR.
TTL_ATTR = "expiresAt"
