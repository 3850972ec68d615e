"""Where the comments live (``TableRef``: the client behind the seam and the table name), and
idempotent creation of the table described in ``storage.indexes``."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from storage.errors import StorageUnavailable, TableInUse
from storage.indexes import TTL_ATTR, Index, table_definition, validate_table_name
from storage.lanes import Lanes
from storage.layout import LayoutMemory
from storage.locks import KeyedLocks
from storage.seam import at_seam
from storage.snapshots import PlanMemory
from storage.types import DynamoClient

if TYPE_CHECKING:
    from storage.writes.ballots import Ballot


@dataclass(frozen=True, slots=True)
class TableRef:
    """Where the comments live: the client and the table name travel together.

    Made once per application lifespan, next to the client. ``five_star_locks`` lets the
    writes of one process that change the same product's 5-star count take turns instead
    of racing (the conditions in the transactions still guard against other processes).
    ``memory`` holds the process's snapshots of counters and page heads, by which pages are
    planned to take one storage round (``storage.snapshots``). ``leader_layout`` remembers
    the leaderboard's layout as last read (``storage.layout``): a hint that writes condition
    on and reads check, never trusted alone. ``vote_lanes`` holds the process's votes
    waiting for their comment's next transaction (``storage.writes.ballots``).

    The client is put behind the seam (``storage.seam``) on creation: every call storage
    makes goes through ``table.client``, so every engine failure leaves as a storage error.
    """

    client: DynamoClient
    name: str
    five_star_locks: KeyedLocks = field(default_factory=KeyedLocks, compare=False, repr=False)
    memory: PlanMemory = field(default_factory=PlanMemory, compare=False, repr=False)
    leader_layout: LayoutMemory = field(default_factory=LayoutMemory, compare=False, repr=False)
    vote_lanes: Lanes[Ballot] = field(default_factory=Lanes, compare=False, repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "client", at_seam(self.client))


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


async def create_table(
    client: DynamoClient, name: str, *, wait_seconds: float = 60, stream: bool = True
) -> bool:
    """Create the table if it does not exist and wait until it is ACTIVE.

    Returns True when this call created it. An existing table with other indexes is an
    error rather than something to paper over; one without the stream is left as it is
    (``migrate-table`` turns it on). ``stream=False`` makes a table without one.
    """
    validate_table_name(name)
    table = TableRef(client, name)
    created = False
    try:
        await table.client.create_table(**table_definition(name, stream=stream))
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
            raise StorageUnavailable(
                f"table {name!r} exists without the indexes {sorted(missing)}; "
                "add them with: comments migrate-table"
            )
        statuses = [described["TableStatus"], *(g["IndexStatus"] for g in indexes.values())]
        if all(s == "ACTIVE" for s in statuses):
            await ensure_ttl(table)
            return created
        if loop.time() > deadline:
            raise StorageUnavailable(f"table {name!r} did not become ACTIVE in time")
        await asyncio.sleep(0.2)
