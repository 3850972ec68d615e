"""Whether the table answers: one cheap call, for health checks."""

from __future__ import annotations

from storage.table import TableRef


async def ping(table: TableRef) -> None:
    """Return once the table answers one DescribeTable; StorageUnavailable (from the seam,
    the engine's error as its cause) if it does not."""
    await table.client.describe_table(TableName=table.name)
