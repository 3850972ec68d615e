"""AWS's transaction conflicts, for an engine that has none (DynamoDB Local).

DynamoDB cancels a ``TransactWriteItems`` whose items another transaction, or a single
write, is writing at that moment: ``TransactionCanceledException`` whose reason is
``TransactionConflict`` for each overlapping action (``None`` for the others). A single
write (PutItem, UpdateItem, DeleteItem) of an item that a transaction is writing fails with
``TransactionConflictException``. DynamoDB Local takes its requests one after another, so
writes that would contend on AWS pass unnoticed there.

``AwsConflicts`` wraps a client (below the seam: it raises the engine's errors, which the
seam translates) and does what AWS does: it remembers the items of every write in flight
and fails an overlapping one before it reaches the engine. ``hold`` keeps each write in
flight that much longer, as a transaction on AWS takes tens of milliseconds where the
local engine takes a few. It counts, per item, the transactions that tried to write it and
the conditions that failed on it, so a test or a benchmark can say how many attempts a
write took (``fail=False`` only counts).
"""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from botocore.exceptions import ClientError

from storage.base.errors import ConditionFailed, TransactionCancelled
from storage.base.types import DynamoClient, Item, Response
from storage.engine.wrapping import ClientWrapper

# An item, by table and key.
ItemKey = tuple[str, str, str]

_SINGLE_WRITES = {"put_item": "PutItem", "update_item": "UpdateItem", "delete_item": "DeleteItem"}
_CONDITION_FAILED = "ConditionalCheckFailed"


def item_key(table: str, key_or_item: Item) -> ItemKey:
    """An item's identity: its table, partition key and sort key."""
    return (table, str(key_or_item["PK"]["S"]), str(key_or_item["SK"]["S"]))


def action_item(action: dict[str, Any]) -> ItemKey:
    """The item one action of a transaction writes or checks."""
    ((_, request),) = action.items()
    return item_key(request["TableName"], request.get("Key") or request["Item"])


class AwsConflicts(ClientWrapper):
    """A client that fails overlapping writes of the same item as DynamoDB does, and counts
    transaction attempts and failed conditions per item."""

    def __init__(self, inner: DynamoClient, *, hold: float = 0.0, fail: bool = True) -> None:
        super().__init__(inner)
        self.hold = hold
        self.fail = fail  # False: only count, as the engine below behaves
        self._transacting: Counter[ItemKey] = Counter()  # items of transactions in flight
        self._writing: Counter[ItemKey] = Counter()  # items of single writes in flight
        self.transactions = 0  # TransactWriteItems calls, conflicting ones included
        self.conflicts = 0  # calls failed here for a conflict
        self.attempts: Counter[ItemKey] = Counter()  # transactions that included the item
        self.condition_failures: Counter[ItemKey] = Counter()

    @contextmanager
    def busy(self, key: ItemKey) -> Iterator[None]:
        """While the block runs, another transaction writes ``key``, as far as every write
        through this client can tell (a test's stand-in for one in another process)."""
        with _in_flight(self._transacting, [key]):
            yield

    async def _call(self, operation: str, kwargs: dict[str, Any]) -> Response:
        if operation == "transact_write_items":
            return await self._transact(kwargs)
        if operation in _SINGLE_WRITES:
            return await self._single(operation, kwargs)
        return await super()._call(operation, kwargs)

    async def _transact(self, kwargs: dict[str, Any]) -> Response:
        items = [action_item(a) for a in kwargs["TransactItems"]]
        self.transactions += 1
        self.attempts.update(items)
        busy = [k in self._transacting or k in self._writing for k in items]
        if self.fail and any(busy):
            self.conflicts += 1
            reasons = [{"Code": "TransactionConflict" if b else "None"} for b in busy]
            raise _error(
                "TransactionCanceledException",
                "TransactWriteItems",
                "Transaction cancelled, please refer cancellation reasons for specific reasons",
                CancellationReasons=reasons,
            )
        with _in_flight(self._transacting, items):
            if self.hold:
                await asyncio.sleep(self.hold)
            try:
                return await super()._call("transact_write_items", kwargs)
            except (ClientError, TransactionCancelled) as exc:
                reasons = (
                    exc.reasons
                    if isinstance(exc, TransactionCancelled)
                    else exc.response.get("CancellationReasons") or []
                )
                for key, reason in zip(items, reasons, strict=False):
                    if reason.get("Code") == _CONDITION_FAILED:
                        self.condition_failures[key] += 1
                raise

    async def _single(self, operation: str, kwargs: dict[str, Any]) -> Response:
        key = item_key(kwargs["TableName"], kwargs.get("Key") or kwargs["Item"])
        if self.fail and key in self._transacting:
            self.conflicts += 1
            raise _error(
                "TransactionConflictException",
                _SINGLE_WRITES[operation],
                "Transaction is ongoing for the item",
            )
        with _in_flight(self._writing, [key]):
            if self.hold:
                await asyncio.sleep(self.hold)
            try:
                return await super()._call(operation, kwargs)
            except ConditionFailed:
                self.condition_failures[key] += 1
                raise
            except ClientError as exc:
                if exc.response.get("Error", {}).get("Code") == "ConditionalCheckFailedException":
                    self.condition_failures[key] += 1
                raise


@contextmanager
def _in_flight(writing: Counter[ItemKey], items: list[ItemKey]) -> Iterator[None]:
    writing.update(items)
    try:
        yield
    finally:
        writing.subtract(items)
        for key in items:
            if writing[key] <= 0:
                del writing[key]


def _error(code: str, operation: str, message: str, **extra: Any) -> ClientError:
    return ClientError({"Error": {"Code": code, "Message": message}, **extra}, operation)
