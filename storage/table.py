"""The single table and its four indexes, and idempotent creation of them."""

from __future__ import annotations

import asyncio
import enum
import re
from dataclasses import dataclass, field
from typing import Any

from storage.errors import StorageUnavailable, TableInUse
from storage.locks import KeyedLocks
from storage.seam import at_seam
from storage.types import DynamoClient

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


@dataclass(frozen=True, slots=True)
class TableRef:
    """Where the comments live: the client and the table name travel together.

    Made once per application lifespan, next to the client. ``five_star_locks`` lets the
    writes of one process that change the same product's 5-star count take turns instead
    of racing (the conditions in the transactions still guard against other processes).

    The client is put behind the seam (``storage.seam``) on creation: every call storage
    makes goes through ``table.client``, so every engine failure leaves as a storage error.
    """

    client: DynamoClient
    name: str
    five_star_locks: KeyedLocks = field(default_factory=KeyedLocks, compare=False, repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "client", at_seam(self.client))


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


async def ensure_ttl(table: TableRef) -> None:
    """Turn on TTL on ``TTL_ATTR`` unless it is on (also for tables made before it existed).

    Readers never rely on TTL having run: an expired item is treated as absent.
    """
    described = await table.client.describe_time_to_live(TableName=table.name)
    status = described.get("TimeToLiveDescription", {}).get("TimeToLiveStatus")
    if status in ("ENABLED", "ENABLING"):
        return
    await table.client.update_time_to_live(
        TableName=table.name,
        TimeToLiveSpecification={"Enabled": True, "AttributeName": TTL_ATTR},
    )


async def create_table(client: DynamoClient, name: str, *, wait_seconds: float = 60) -> bool:
    """Create the table if it does not exist and wait until it is ACTIVE.

    Returns True when this call created it. An existing table with other indexes is an
    error rather than something to paper over.
    """
    validate_table_name(name)
    table = TableRef(client, name)
    created = False
    try:
        await table.client.create_table(**table_definition(name))
        created = True
    except TableInUse:
        pass  # made before (by us or a concurrent create-table); its shape is checked below
    loop = asyncio.get_running_loop()
    deadline = loop.time() + wait_seconds
    while True:
        described = (await table.client.describe_table(TableName=name))["Table"]
        indexes = {g["IndexName"]: g for g in described.get("GlobalSecondaryIndexes", [])}
        missing = {i.value for i in Index} - indexes.keys()
        if missing:
            raise StorageUnavailable(f"table {name!r} exists without the indexes {sorted(missing)}")
        statuses = [described["TableStatus"], *(g["IndexStatus"] for g in indexes.values())]
        if all(s == "ACTIVE" for s in statuses):
            await ensure_ttl(table)
            return created
        if loop.time() > deadline:
            raise StorageUnavailable(f"table {name!r} did not become ACTIVE in time")
        await asyncio.sleep(0.2)
