"""Writing a webhook event once: the outbox (``storage.model.webhooks`` has the items).

``record_event`` is what the claimed stream reader calls for each event; it may be called
again for the same event (a shard re-read after its holder died) and then writes nothing.
"""

from __future__ import annotations

import time
from collections.abc import Sequence

from storage.base.errors import TransactionCancelled, WriteConflict
from storage.engine.table import TableRef
from storage.model.webhooks import (
    LOG_DAYS,
    Endpoint,
    Event,
    counter_key,
    due_key,
    event_to_log_item,
    marker_key,
)

# Attempts at numbering one event while other events of its scope take the numbers.
ATTEMPTS = 20


async def record_event(table: TableRef, event: Event, endpoints: Sequence[Endpoint]) -> int | None:
    """Put ``event`` in its scope's log with the scope's next number, and make its lane
    due for every endpoint that wants it, all or nothing; the number, or None when the
    event was recorded before (nothing written)."""
    wanting = [e for e in endpoints if e.wants(event)]
    expires = int(time.time()) + LOG_DAYS * 86400
    for _ in range(ATTEMPTS):
        found = await table.client.get_item(
            TableName=table.name, Key=counter_key(event.scope), ConsistentRead=True
        )
        read = int(found.get("Item", {}).get("n", {}).get("N", "0"))
        number = read + 1
        numbered = Event(
            event.event_id, event.type, event.scope, event.timestamp, event.data, number
        )
        actions: list[dict[str, object]] = [
            {
                "Put": {
                    "TableName": table.name,
                    "Item": {
                        **marker_key(event.event_id),
                        "scope": {"S": event.scope},
                        "seq": {"N": str(number)},
                        "expiresAt": {"N": str(expires)},
                    },
                    "ConditionExpression": "attribute_not_exists(PK)",
                }
            },
            {
                # Moved from the value read (STYLE rule 11): two events of a scope never
                # take one number, and numbers have no gaps.
                "Update": {
                    "TableName": table.name,
                    "Key": counter_key(event.scope),
                    "UpdateExpression": "SET n = :next",
                    "ConditionExpression": "attribute_not_exists(PK) OR n = :read"
                    if read == 0
                    else "n = :read",
                    "ExpressionAttributeValues": {
                        ":next": {"N": str(number)},
                        ":read": {"N": str(read)},
                    },
                }
            },
            {
                "Put": {
                    "TableName": table.name,
                    "Item": event_to_log_item(numbered, expires),
                    "ConditionExpression": "attribute_not_exists(PK)",
                }
            },
        ]
        for endpoint in wanting:
            actions.append(
                {
                    "Update": {
                        "TableName": table.name,
                        "Key": due_key(endpoint.endpoint_id, event.scope),
                        "UpdateExpression": "SET head = :n, #start = if_not_exists(#start, :n)",
                        "ExpressionAttributeNames": {"#start": "start"},
                        "ExpressionAttributeValues": {":n": {"N": str(number)}},
                    }
                }
            )
        try:
            await table.client.transact_write_items(TransactItems=actions)
        except TransactionCancelled as exc:
            if _failed(exc, 0):
                return None  # recorded before, by this process or another
            continue  # the scope's number moved: read it again
        return number
    raise WriteConflict(f"event {event.event_id} could not take a number")


def _failed(exc: TransactionCancelled, index: int) -> bool:
    reasons = exc.reasons
    return len(reasons) > index and reasons[index].get("Code") == "ConditionalCheckFailed"
