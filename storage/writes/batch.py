"""BatchWriteItem with its unprocessed items retried: puts and deletes that condition on
nothing (loads of new products, the tidy-up of a deleted comment's children)."""

from __future__ import annotations

from typing import Any

from storage.errors import StorageUnavailable
from storage.retry import Backoff
from storage.table import TableRef

# DynamoDB's limit of requests per BatchWriteItem.
BATCH_WRITE_MAX = 25


async def batch_write(table: TableRef, requests: list[dict[str, Any]], backoff: Backoff) -> None:
    """Run up to BATCH_WRITE_MAX put or delete requests, retrying what storage leaves
    unprocessed with backoff; StorageUnavailable when it keeps leaving some."""
    if len(requests) > BATCH_WRITE_MAX:
        raise ValueError(f"a batch holds at most {BATCH_WRITE_MAX} requests")
    pending: dict[str, Any] = {table.name: requests}
    for attempt in range(1, backoff.attempts + 1):
        response = await table.client.batch_write_item(RequestItems=pending)
        pending = response.get("UnprocessedItems") or {}
        if not pending:
            return
        await backoff.sleep(attempt)
    raise StorageUnavailable("storage kept some writes unprocessed")
