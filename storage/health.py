"""Whether the table answers: one cheap call, for health checks."""

from __future__ import annotations

from storage.errors import StorageUnavailable
from storage.retry import ENGINE_ERRORS
from storage.table import TableRef


async def ping(table: TableRef) -> None:
    """Return once the table answers one DescribeTable; StorageUnavailable if it does not."""
    try:
        await table.client.describe_table(TableName=table.name)
    except ENGINE_ERRORS as exc:
        raise StorageUnavailable("the table did not answer") from exc
