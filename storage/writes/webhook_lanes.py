"""Claiming and moving a webhook lane (one endpoint, one scope): who delivers it now, how
far it got, when it tries again, what it gave up on.

A lane is delivered by one process at a time: ``claim_lane`` is a conditional update (no
owner, an owner whose lease ran out, or the claimer itself) that returns the lane as
stored; every later move is conditioned on still owning it and on the cursor it read, so
a process that lost its lease (stalled, or presumed dead) moves nothing. A process killed
mid-delivery leaves its lease to run out; the next owner delivers the event again: at
most one duplicate per lease run out, never a loss.
"""

from __future__ import annotations

import time
from contextlib import suppress
from dataclasses import dataclass

from storage.base.errors import ConditionFailed, TransactionCancelled
from storage.base.types import Item
from storage.engine.table import TableRef
from storage.model.webhooks import due_key, failed_key, lane_key


@dataclass(frozen=True, slots=True)
class Lane:
    """A lane as its owner read it: delivered (or given up) up to ``cursor``; the last
    event sent or given up (``last_sent``: what receivers see as previousSequence);
    failures of the event after the cursor so far, the first at ``first_fail_at``."""

    endpoint_id: str
    scope: str
    cursor: int
    last_sent: int | None
    attempt: int
    first_fail_at: float | None


class LaneLost(Exception):
    """The lane's lease ran out and another process may own it: stop delivering it."""


def _ms(seconds: float) -> str:
    return str(int(seconds * 1000))


async def claim_lane(
    table: TableRef,
    endpoint_id: str,
    scope: str,
    *,
    owner: str,
    lease_seconds: float,
    start: int,
) -> Lane | None:
    """The lane, now owned by ``owner`` for ``lease_seconds``; None when another owns it.
    A lane never delivered starts after ``start - 1``."""
    now = time.time()
    try:
        answer = await table.client.update_item(
            TableName=table.name,
            Key=lane_key(endpoint_id, scope),
            UpdateExpression="SET #owner = :me, #until = :until, "
            "#cursor = if_not_exists(#cursor, :start)",
            ConditionExpression="attribute_not_exists(#owner) OR #until < :now OR #owner = :me",
            ExpressionAttributeNames={"#owner": "owner", "#until": "until", "#cursor": "cursor"},
            ExpressionAttributeValues={
                ":me": {"S": owner},
                ":now": {"N": _ms(now)},
                ":until": {"N": _ms(now + lease_seconds)},
                ":start": {"N": str(start - 1)},
            },
            ReturnValues="ALL_NEW",
        )
    except ConditionFailed:
        return None
    item = answer["Attributes"]
    return _lane(endpoint_id, scope, item)


def _lane(endpoint_id: str, scope: str, item: Item) -> Lane:
    last = item.get("lastSent", {}).get("N")
    first = item.get("firstFailAt", {}).get("N")
    return Lane(
        endpoint_id,
        scope,
        int(item["cursor"]["N"]),
        None if last is None else int(last),
        int(item.get("attempt", {}).get("N", "0")),
        None if first is None else float(first),
    )


def _owned(owner: str, lane: Lane) -> tuple[str, dict[str, str], Item]:
    condition = "#owner = :me AND #cursor = :cursor"
    names = {"#owner": "owner", "#cursor": "cursor"}
    values: Item = {":me": {"S": owner}, ":cursor": {"N": str(lane.cursor)}}
    return condition, names, values


async def advance(
    table: TableRef,
    lane: Lane,
    *,
    owner: str,
    lease_seconds: float,
    to: int,
    sent: int | None,
) -> Lane:
    """Move the cursor to ``to`` (``sent``: the number of the event delivered there, if
    one was) and renew the lease; LaneLost when the lane is no longer ours."""
    condition, names, values = _owned(owner, lane)
    names |= {"#until": "until"}
    values |= {":to": {"N": str(to)}, ":until": {"N": _ms(time.time() + lease_seconds)}}
    update = "SET #cursor = :to, #until = :until, attempt = :zero REMOVE firstFailAt"
    values[":zero"] = {"N": "0"}
    last_sent = lane.last_sent
    if sent is not None:
        update = update.replace("SET ", "SET lastSent = :sent, ", 1)
        values[":sent"] = {"N": str(sent)}
        last_sent = sent
    try:
        await table.client.update_item(
            TableName=table.name,
            Key=lane_key(lane.endpoint_id, lane.scope),
            UpdateExpression=update,
            ConditionExpression=condition,
            ExpressionAttributeNames=names,
            ExpressionAttributeValues=values,
        )
    except ConditionFailed as exc:
        raise LaneLost(f"lane {lane.endpoint_id}/{lane.scope}") from exc
    return Lane(lane.endpoint_id, lane.scope, to, last_sent, 0, None)


async def back_off(table: TableRef, lane: Lane, *, owner: str, next_at: float, now: float) -> None:
    """Count a failed attempt at the event after the cursor, due again at ``next_at``,
    and give the lane up (another process may take it then)."""
    condition, names, values = _owned(owner, lane)
    names |= {"#until": "until", "#owner": "owner"}
    values |= {
        ":attempt": {"N": str(lane.attempt + 1)},
        ":first": {"N": repr(lane.first_fail_at if lane.first_fail_at is not None else now)},
        ":zero": {"N": "0"},
    }
    try:
        await table.client.update_item(
            TableName=table.name,
            Key=lane_key(lane.endpoint_id, lane.scope),
            UpdateExpression="SET attempt = :attempt, firstFailAt = :first, #until = :zero "
            "REMOVE #owner",
            ConditionExpression=condition,
            ExpressionAttributeNames=names,
            ExpressionAttributeValues=values,
        )
    except ConditionFailed as exc:
        raise LaneLost(f"lane {lane.endpoint_id}/{lane.scope}") from exc
    with suppress(ConditionFailed):  # cleared meanwhile: nothing is due
        await table.client.update_item(
            TableName=table.name,
            Key=due_key(lane.endpoint_id, lane.scope),
            UpdateExpression="SET nextAt = :at",
            ConditionExpression="attribute_exists(PK)",
            ExpressionAttributeValues={":at": {"N": repr(next_at)}},
        )


async def give_up(
    table: TableRef,
    lane: Lane,
    *,
    owner: str,
    lease_seconds: float,
    sequence: int,
    reason: str,
) -> Lane:
    """Keep the event after the cursor as failed (replayable) and move past it, in one
    transaction; LaneLost when the lane is no longer ours."""
    condition, names, values = _owned(owner, lane)
    now = time.time()
    names |= {"#until": "until"}
    values |= {
        ":to": {"N": str(sequence)},
        ":until": {"N": _ms(now + lease_seconds)},
        ":zero": {"N": "0"},
    }
    try:
        await table.client.transact_write_items(
            TransactItems=[
                {
                    "Update": {
                        "TableName": table.name,
                        "Key": lane_key(lane.endpoint_id, lane.scope),
                        "UpdateExpression": "SET #cursor = :to, lastSent = :to, #until = :until,"
                        " attempt = :zero REMOVE firstFailAt",
                        "ConditionExpression": condition,
                        "ExpressionAttributeNames": names,
                        "ExpressionAttributeValues": values,
                    }
                },
                {
                    "Put": {
                        "TableName": table.name,
                        "Item": {
                            **failed_key(lane.endpoint_id, lane.scope, sequence),
                            "scope": {"S": lane.scope},
                            "seq": {"N": str(sequence)},
                            "failedAt": {"N": repr(now)},
                            "reason": {"S": reason[:200]},
                        },
                    }
                },
            ]
        )
    except TransactionCancelled as exc:
        raise LaneLost(f"lane {lane.endpoint_id}/{lane.scope}") from exc
    return Lane(lane.endpoint_id, lane.scope, sequence, sequence, 0, None)


async def release(table: TableRef, lane: Lane, *, owner: str) -> None:
    """Give the lane up now (its lease ends), if it is still ours."""
    with suppress(ConditionFailed):
        await table.client.update_item(
            TableName=table.name,
            Key=lane_key(lane.endpoint_id, lane.scope),
            UpdateExpression="SET #until = :zero REMOVE #owner",
            ConditionExpression="#owner = :me",
            ExpressionAttributeNames={"#owner": "owner", "#until": "until"},
            ExpressionAttributeValues={":me": {"S": owner}, ":zero": {"N": "0"}},
        )


async def clear_due(table: TableRef, endpoint_id: str, scope: str, head: int) -> bool:
    """Remove the lane's due item if no event was added since ``head`` was read (an
    event's transaction raises ``head``, so a later one keeps it); whether it was."""
    try:
        await table.client.delete_item(
            TableName=table.name,
            Key=due_key(endpoint_id, scope),
            ConditionExpression="head = :head",
            ExpressionAttributeValues={":head": {"N": str(head)}},
        )
    except ConditionFailed:
        return False
    return True


async def forget_failed(table: TableRef, endpoint_id: str, scope: str, sequence: int) -> None:
    """Drop a failed delivery once it was replayed."""
    await table.client.delete_item(
        TableName=table.name, Key=failed_key(endpoint_id, scope, sequence)
    )
