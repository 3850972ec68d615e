"""The single table's layout: key schema, the four indexes, TTL. Pure description, no I/O,
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
    """The four GSIs; each value is the index name, ``partition_attr`` its partition key."""

    BY_LANG_AND_RATING = "byLangAndRating"
    BY_LANG = "byLang"
    BY_RATING = "byRating"
    ALL = "all"

    @property
    def partition_attr(self) -> str:
        return _PARTITION_ATTRS[self]


_PARTITION_ATTRS = {
    Index.BY_LANG_AND_RATING: "GSIPK",
    Index.BY_LANG: "GSI2PK",
    Index.BY_RATING: "GSI3PK",
    Index.ALL: "GSI4PK",
}


def table_definition(name: str) -> dict[str, Any]:
    """The CreateTable request for the model in DESIGN.md (on-demand billing)."""
    attrs = ["PK", "SK", SORT_KEY, *_PARTITION_ATTRS.values()]
    return {
        "TableName": name,
        "BillingMode": "PAY_PER_REQUEST",
        "KeySchema": [
            {"AttributeName": "PK", "KeyType": "HASH"},
            {"AttributeName": "SK", "KeyType": "RANGE"},
        ],
        "AttributeDefinitions": [{"AttributeName": a, "AttributeType": "S"} for a in attrs],
        "GlobalSecondaryIndexes": [
            {
                "IndexName": index.value,
                "KeySchema": [
                    {"AttributeName": index.partition_attr, "KeyType": "HASH"},
                    {"AttributeName": SORT_KEY, "KeyType": "RANGE"},
                ],
                "Projection": {"ProjectionType": "ALL"},
            }
            for index in Index
        ],
    }


# Items that may expire carry this attribute (epoch seconds); see storage.items.EXPIRES_ATTR.
TTL_ATTR = "expiresAt"
