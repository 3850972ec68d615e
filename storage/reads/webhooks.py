"""Reading webhook items: the shop's endpoints, the lanes that are due, a scope's events
after a lane's cursor, and the deliveries given up on (``storage.model.webhooks``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from storage.base.types import Item
from storage.engine.table import TableRef
from storage.model.webhooks import (
    DUE_PK,
    ENDPOINTS_MAX,
    ENDPOINTS_PK,
    FAILED_PREFIX,
    LOG_PREFIX,
    Endpoint,
    Event,
    due_lane,
    endpoint_key,
    is_endpoint_item,
    item_to_endpoint,
    log_item_to_event,
    seq_key,
)


async def list_endpoints(table: TableRef) -> list[Endpoint]:
    """Every endpoint of the shop (at most ``ENDPOINTS_MAX``), in id order; one Query."""
    page = await table.client.query(
        TableName=table.name,
        KeyConditionExpression="PK = :pk AND begins_with(SK, :ep)",
        ExpressionAttributeValues={":pk": {"S": ENDPOINTS_PK}, ":ep": {"S": "EP#"}},
        ConsistentRead=True,
        Limit=ENDPOINTS_MAX + 1,
    )
    return [item_to_endpoint(i) for i in page.get("Items", []) if is_endpoint_item(i)]


async def get_endpoint(table: TableRef, endpoint_id: str) -> Endpoint | None:
    """The endpoint as stored now (strongly consistent), None when there is none."""
    found = await table.client.get_item(
        TableName=table.name, Key=endpoint_key(endpoint_id), ConsistentRead=True
    )
    item = found.get("Item")
    return None if item is None else item_to_endpoint(item)


@dataclass(frozen=True, slots=True)
class DueLane:
    """A lane with events it has not delivered: up to ``head``, from ``start`` when it
    has no lane item yet; not before ``next_at`` (epoch seconds) after a failure."""

    endpoint_id: str
    scope: str
    head: int
    start: int
    next_at: float


async def due_lanes(
    table: TableRef, *, limit: int, after: Item | None = None
) -> tuple[list[DueLane], Item | None]:
    """Up to ``limit`` lanes that have work, due or backing off, after ``after`` (where
    the previous call stopped: callers go round the partition, so lanes past the first
    ``limit`` are reached too); and where this call stopped (None: at the end). One Query
    of one partition that holds only lanes with work."""
    request: dict[str, Any] = {
        "TableName": table.name,
        "KeyConditionExpression": "PK = :pk",
        "ExpressionAttributeValues": {":pk": {"S": DUE_PK}},
        "ConsistentRead": True,
        "Limit": limit,
    }
    if after is not None:
        request["ExclusiveStartKey"] = after
    page = await table.client.query(**request)
    return [_due(item) for item in page.get("Items", [])], page.get("LastEvaluatedKey")


def _due(item: Item) -> DueLane:
    endpoint_id, scope = due_lane(item)
    return DueLane(
        endpoint_id,
        scope,
        int(item["head"]["N"]),
        int(item.get("start", item["head"])["N"]),
        float(item.get("nextAt", {}).get("N", "0")),
    )


async def events_after(
    table: TableRef, scope: str, after: int, upto: int, *, limit: int
) -> list[Event]:
    """A scope's events numbered after ``after`` and up to ``upto``, in order."""
    if upto <= after:
        return []
    page = await table.client.query(
        TableName=table.name,
        KeyConditionExpression="PK = :pk AND SK BETWEEN :lo AND :hi",
        ExpressionAttributeValues={
            ":pk": {"S": LOG_PREFIX + scope},
            ":lo": {"S": seq_key(after + 1)},
            ":hi": {"S": seq_key(upto)},
        },
        ConsistentRead=True,
        Limit=limit,
    )
    return [log_item_to_event(i) for i in page.get("Items", [])]


async def get_event(table: TableRef, scope: str, sequence: int) -> Event | None:
    found = await table.client.get_item(
        TableName=table.name,
        Key={"PK": {"S": LOG_PREFIX + scope}, "SK": {"S": seq_key(sequence)}},
        ConsistentRead=True,
    )
    item = found.get("Item")
    return None if item is None else log_item_to_event(item)


@dataclass(frozen=True, slots=True)
class FailedDelivery:
    endpoint_id: str
    scope: str
    sequence: int
    failed_at: float
    reason: str


async def failed_deliveries(
    table: TableRef, endpoint_id: str, *, since: float = 0.0, limit: int = 1000
) -> list[FailedDelivery]:
    """The events given up on for an endpoint, failed at or after ``since``."""
    out: list[FailedDelivery] = []
    request: dict[str, Any] = {
        "TableName": table.name,
        "KeyConditionExpression": "PK = :pk",
        "ExpressionAttributeValues": {":pk": {"S": FAILED_PREFIX + endpoint_id}},
        "ConsistentRead": True,
    }
    while len(out) < limit:
        page = await table.client.query(**request)
        for item in page.get("Items", []):
            failed = FailedDelivery(
                endpoint_id,
                item["scope"]["S"],
                int(item["seq"]["N"]),
                float(item["failedAt"]["N"]),
                item.get("reason", {}).get("S", ""),
            )
            if failed.failed_at >= since:
                out.append(failed)
        last = page.get("LastEvaluatedKey")
        if not last:
            break
        request["ExclusiveStartKey"] = last
    return out[:limit]
