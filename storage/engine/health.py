"""Whether the table answers: one cheap call, for health checks."""

from __future__ import annotations

from storage.engine.table import TableRef

# A key no item has: reading it proves the table answers, at the cost of any missing item.
PING_KEY = {"PK": {"S": "HEALTH"}, "SK": {"S": "HEALTH"}}


async def ping(table: TableRef) -> None:
    """Return once the table answers one GetItem of a key no item has; StorageUnavailable
    (from the seam, the engine's error as its cause) if it does not, ResourceNotFound
    included.

    Not DescribeTable: DynamoDB Local counts every item of the table and of each index to
    describe it, which on a table of 60,000 comments and fourteen indexes took longer than
    the storage timeout on a busy machine, so a healthy server was reported down.
    """
    await table.client.get_item(TableName=table.name, Key=PING_KEY)
