"""Idempotent creation of the table described in ``storage.model.indexes``, and its TTL.

An operations module: ``comments create-table`` runs it with the operations role, and the
development server with the embedded engine. A production process never creates its table
(the production posture refuses ``CREATE_TABLE=true``), so the runtime role has no
``CreateTable`` or ``UpdateTimeToLive`` (``deploy/iam/``).
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

from storage.base.errors import ConditionFailed, StorageUnavailable, TableInUse
from storage.base.expressions import Attr, put_request
from storage.base.types import DynamoClient
from storage.engine.table import TableRef
from storage.model.indexes import TTL_ATTR, Index, table_definition, validate_table_name
from storage.model.layout_version import REVISION_ATTR, TableLayout


async def ensure_ttl(table: TableRef) -> bool:
    """Turn on TTL on ``TTL_ATTR`` unless it is on (also for tables made before it existed,
    and tables restored from a backup, which come without it); True if this call did.

    Readers never rely on TTL having run: an expired item is treated as absent.
    """
    described = await table.client.describe_time_to_live(TableName=table.name)
    status = described.get("TimeToLiveDescription", {}).get("TimeToLiveStatus")
    if status in ("ENABLED", "ENABLING"):
        return False
    await table.client.update_time_to_live(
        TableName=table.name,
        TimeToLiveSpecification={"Enabled": True, "AttributeName": TTL_ATTR},
    )
    return True


async def create_table(
    client: DynamoClient,
    name: str,
    *,
    wait_seconds: float = 60,
    stream: bool = True,
    missing_ok: bool = False,
) -> bool:
    """Create the table if it does not exist and wait until it is ACTIVE.

    Returns True when this call created it; a table it created records this code's layout
    (``storage.model.layout_version``), whole: nothing to expand, fence or backfill. An
    existing table with other indexes is an error rather than something to paper over; one
    without the stream is left as it is (``migrate-table`` turns it on). ``stream=False``
    makes a table without one. ``missing_ok``: an existing table without some indexes is
    returned as it is, for a caller that migrates it next (the development server).
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
        missing = sorted(i.value for i in missing_from(described))
        if missing and missing_ok:
            return created  # the caller brings it up to date (migrate-table's work)
        if missing:
            raise StorageUnavailable(
                f"table {name!r} exists without the indexes {missing}; "
                "add them with: comments migrate-table"
            )
        statuses = [described["TableStatus"], *(g["IndexStatus"] for g in indexes.values())]
        if all(s == "ACTIVE" for s in statuses):
            await ensure_ttl(table)
            if created:
                await record_new_layout(table)
            return created
        if loop.time() > deadline:
            raise StorageUnavailable(f"table {name!r} did not become ACTIVE in time")
        await asyncio.sleep(0.2)


def missing_from(described: dict[str, Any]) -> list[Index]:
    """The indexes of the layout a described table lacks (being built counts as having)."""
    have = {g["IndexName"] for g in described.get("GlobalSecondaryIndexes", [])}
    return [i for i in Index if i.value not in have]


async def missing_indexes(table: TableRef) -> list[Index]:
    """The indexes of the layout the table lacks, as DynamoDB describes it now."""
    return missing_from((await table.client.describe_table(TableName=table.name))["Table"])


async def record_new_layout(table: TableRef) -> None:
    """Record a new table's layout, unless a layout item is there already."""
    item = TableLayout.new_table().to_item()
    # A concurrent create-table may have recorded it first: the same layout.
    with contextlib.suppress(ConditionFailed):
        await table.client.put_item(
            **put_request(table.name, item, Attr(REVISION_ATTR).not_exists())
        )
