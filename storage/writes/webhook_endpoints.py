"""Registering webhook endpoints: create (counted, at most ``ENDPOINTS_MAX``), change,
delete and rotate the secret, each conditioned on the version its author read."""

from __future__ import annotations

import dataclasses
import time

from storage.base.errors import (
    ConditionFailed,
    CounterInvariantBroken,
    StorageError,
    TransactionCancelled,
    WriteConflict,
)
from storage.base.types import Item
from storage.engine.table import TableRef
from storage.model.webhooks import (
    ENDPOINTS_MAX,
    Endpoint,
    SecretEntry,
    endpoint_count_key,
    endpoint_key,
    endpoint_to_item,
    item_to_endpoint,
    new_secret,
)

ATTEMPTS = 5


class EndpointNotFound(StorageError):
    """No endpoint has this id."""


class EndpointChanged(StorageError):
    """The endpoint changed since the version its author read."""


class TooManyEndpoints(StorageError):
    """The shop has as many endpoints as it may."""


async def create_endpoint(table: TableRef, endpoint: Endpoint) -> Endpoint:
    """Store a new endpoint, counted: TooManyEndpoints at ``ENDPOINTS_MAX``."""
    for _ in range(ATTEMPTS):
        found = await table.client.get_item(
            TableName=table.name, Key=endpoint_count_key(), ConsistentRead=True
        )
        count = int(found.get("Item", {}).get("n", {}).get("N", "0"))
        if count >= ENDPOINTS_MAX:
            raise TooManyEndpoints(f"a shop has at most {ENDPOINTS_MAX} webhook endpoints")
        try:
            await table.client.transact_write_items(
                TransactItems=[
                    {
                        "Put": {
                            "TableName": table.name,
                            "Item": endpoint_to_item(endpoint),
                            "ConditionExpression": "attribute_not_exists(PK)",
                        }
                    },
                    _count_move(table, count, +1),
                ]
            )
        except TransactionCancelled:
            continue
        return endpoint
    raise WriteConflict("the endpoints' count kept changing")


def _count_move(table: TableRef, count: int, by: int) -> dict[str, object]:
    condition = "attribute_not_exists(PK) OR n = :read" if count == 0 else "n = :read"
    return {
        "Update": {
            "TableName": table.name,
            "Key": endpoint_count_key(),
            "UpdateExpression": "SET n = :next",
            "ConditionExpression": condition,
            "ExpressionAttributeValues": {
                ":read": {"N": str(count)},
                ":next": {"N": str(count + by)},
            },
        }
    }


async def _read(table: TableRef, endpoint_id: str, version: int) -> Endpoint:
    found = await table.client.get_item(
        TableName=table.name, Key=endpoint_key(endpoint_id), ConsistentRead=True
    )
    item = found.get("Item")
    if item is None:
        raise EndpointNotFound("no webhook endpoint has this id")
    stored = item_to_endpoint(item)
    if stored.version != version:
        raise EndpointChanged(
            f"the endpoint is at version {stored.version}; read it again and retry"
        )
    return stored


async def _replace(table: TableRef, stored: Endpoint, new: Endpoint) -> Endpoint:
    new = dataclasses.replace(new, version=stored.version + 1)
    try:
        await table.client.put_item(
            TableName=table.name,
            Item=endpoint_to_item(new),
            ConditionExpression="version = :v",
            ExpressionAttributeValues={":v": {"N": str(stored.version)}},
        )
    except ConditionFailed as exc:
        raise EndpointChanged("the endpoint changed meanwhile; read it again and retry") from exc
    return new


async def update_endpoint(
    table: TableRef, endpoint_id: str, version: int, changed: dict[str, object]
) -> Endpoint:
    """Change some of an endpoint's fields (``Endpoint`` field names), from ``version``."""
    stored = await _read(table, endpoint_id, version)
    new = dataclasses.replace(stored, **changed)  # type: ignore[arg-type]
    if new.enabled:
        new = dataclasses.replace(new, disabled_reason=None)
    return await _replace(table, stored, new)


async def disable_endpoint(table: TableRef, endpoint_id: str, reason: str) -> None:
    """Turn an endpoint off for ``reason`` (it answered 410 Gone), whatever its version."""
    for _ in range(ATTEMPTS):
        found = await table.client.get_item(
            TableName=table.name, Key=endpoint_key(endpoint_id), ConsistentRead=True
        )
        item = found.get("Item")
        if item is None:
            return
        stored = item_to_endpoint(item)
        new = dataclasses.replace(stored, enabled=False, disabled_reason=reason)
        try:
            await _replace(table, stored, new)
        except EndpointChanged:
            continue
        return


async def rotate_secret(
    table: TableRef, endpoint_id: str, version: int, *, grace_seconds: float
) -> tuple[Endpoint, str]:
    """A new secret for the endpoint; the present one signs too for ``grace_seconds``."""
    stored = await _read(table, endpoint_id, version)
    now = time.time()
    secret = new_secret()
    kept = tuple(
        SecretEntry(
            s.secret, now + grace_seconds if s.until is None else min(s.until, now + grace_seconds)
        )
        for s in stored.secrets
        if s.until is None or s.until > now
    )
    new = dataclasses.replace(stored, secrets=(SecretEntry(secret), *kept))
    return await _replace(table, stored, new), secret


async def delete_endpoint(table: TableRef, endpoint_id: str, version: int) -> None:
    """Delete the endpoint (from ``version``) and uncount it; its lanes' items are left
    to run dry (delivery skips an endpoint that is gone)."""
    for _ in range(ATTEMPTS):
        await _read(table, endpoint_id, version)
        found = await table.client.get_item(
            TableName=table.name, Key=endpoint_count_key(), ConsistentRead=True
        )
        count = int(found.get("Item", {}).get("n", {}).get("N", "0"))
        if count <= 0:  # an endpoint exists, so its count is at least one
            raise CounterInvariantBroken("the endpoints' count is below the endpoints")
        delete: Item = {":v": {"N": str(version)}}
        try:
            await table.client.transact_write_items(
                TransactItems=[
                    {
                        "Delete": {
                            "TableName": table.name,
                            "Key": endpoint_key(endpoint_id),
                            "ConditionExpression": "version = :v",
                            "ExpressionAttributeValues": delete,
                        }
                    },
                    _count_move(table, count, -1),
                ]
            )
        except TransactionCancelled as exc:
            if exc.reasons and exc.reasons[0].get("Code") == "ConditionalCheckFailed":
                raise EndpointChanged("the endpoint changed meanwhile") from exc
            continue
        return
    raise WriteConflict("the endpoints' count kept changing")
