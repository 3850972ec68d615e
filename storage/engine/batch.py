"""The batch calls, with what storage leaves unprocessed retried: BatchGetItem (items by key,
in chunks of ``BATCH_GET_MAX``), BatchWriteItem (puts and deletes that condition on
nothing: loads of new products, the tidy-up of a deleted comment's children), and
TransactGetItems (items as of one moment, when a number is made from several of them)."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

from storage.base.errors import StorageUnavailable, TransactionCancelled
from storage.base.expressions import Placeholders
from storage.base.types import Item
from storage.engine.retry import DEFAULT_BACKOFF, Backoff
from storage.engine.table import TableRef

# DynamoDB's limits of keys per BatchGetItem and of requests per BatchWriteItem.
BATCH_GET_MAX = 100
BATCH_WRITE_MAX = 25
TRANSACT_GET_MAX = 100


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


async def batch_get_items(
    table: TableRef,
    item_keys: list[Item],
    backoff: Backoff = DEFAULT_BACKOFF,
    *,
    projection: Sequence[str] = (),
    consistent: bool = False,
) -> list[Item]:
    """The items of these keys that exist, in no particular order (only ``projection``'s
    attributes when given): BatchGetItem in chunks of 100, retrying unprocessed keys with
    backoff."""
    chunks = [item_keys[i : i + BATCH_GET_MAX] for i in range(0, len(item_keys), BATCH_GET_MAX)]
    requests = [_batch_request(c, projection, consistent) for c in chunks]
    results = await asyncio.gather(*(_batch_chunk(table, r, backoff) for r in requests))
    return [item for chunk in results for item in chunk]


def _batch_request(
    keys_: list[Item], projection: Sequence[str], consistent: bool
) -> dict[str, Any]:
    request: dict[str, Any] = {"Keys": keys_}
    if projection:
        p = Placeholders()
        request = p.into({**request, "ProjectionExpression": ", ".join(map(p.name, projection))})
    if consistent:
        request["ConsistentRead"] = True
    return request


async def _batch_chunk(table: TableRef, request: dict[str, Any], backoff: Backoff) -> list[Item]:
    found: list[Item] = []
    pending: dict[str, Any] = {table.name: request}
    for attempt in range(1, backoff.attempts + 1):
        response = await table.client.batch_get_item(RequestItems=pending)
        found.extend(response.get("Responses", {}).get(table.name, []))
        pending = response.get("UnprocessedKeys") or {}
        if not pending:
            return found
        await backoff.sleep(attempt)
    raise StorageUnavailable("storage kept some keys unprocessed")


async def get_together(
    table: TableRef, item_keys: Sequence[Item], backoff: Backoff = DEFAULT_BACKOFF
) -> list[Item | None]:
    """The items of these keys as of one moment, in the order asked (None: no item): no
    transaction lands between two of them, so a number made from several is exact. A read
    cancelled by a transaction in progress on one of them is tried again with backoff."""
    if len(item_keys) > TRANSACT_GET_MAX:
        raise ValueError(f"at most {TRANSACT_GET_MAX} items are read together")
    request = [{"Get": {"TableName": table.name, "Key": key}} for key in item_keys]
    for attempt in range(1, backoff.attempts + 1):
        try:
            response = await table.client.transact_get_items(TransactItems=request)
        except TransactionCancelled:
            await backoff.sleep(attempt)
            continue
        return [entry.get("Item") for entry in response.get("Responses", [])]
    raise StorageUnavailable("storage kept cancelling a read of items together")
