"""AWS's transaction conflicts (storage.engine.conflicts) over an engine that has none: overlapping
writes of one item fail as on AWS, the others pass, and attempts are counted per item."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from storage.base import errors
from storage.base.types import Item, Response
from storage.engine.conflicts import AwsConflicts, item_key
from storage.engine.table import TableRef

TABLE = "t"


def _key(pk: str) -> Item:
    return {"PK": {"S": pk}, "SK": {"S": pk}}


def _put(pk: str) -> dict[str, Any]:
    return {"Put": {"TableName": TABLE, "Item": {**_key(pk), "n": {"N": "1"}}}}


def _update(pk: str) -> dict[str, Any]:
    return {"Update": {"TableName": TABLE, "Key": _key(pk), "UpdateExpression": "ADD n :1"}}


class _Slow:
    """An engine whose writes wait for ``release``; it answers every call with nothing."""

    def __init__(self) -> None:
        self.release = asyncio.Event()
        self.calls: list[str] = []

    def __getattr__(self, operation: str) -> Any:
        async def call(**kwargs: Any) -> Response:
            self.calls.append(operation)
            if operation != "get_item":
                await self.release.wait()
            return {}

        return call


async def _started(task: asyncio.Task[Any]) -> None:
    for _ in range(3):  # let it reach the engine
        await asyncio.sleep(0)
    assert not task.done()


async def test_an_overlapping_transaction_is_cancelled_for_the_shared_item_only() -> None:
    engine = _Slow()
    conflicts = AwsConflicts(engine)
    table = TableRef(conflicts, TABLE)
    first = asyncio.create_task(
        table.client.transact_write_items(TransactItems=[_put("a"), _update("b")])
    )
    await _started(first)
    with pytest.raises(errors.TransactionCancelled) as cancelled:
        await table.client.transact_write_items(TransactItems=[_put("c"), _update("b")])
    assert [r["Code"] for r in cancelled.value.reasons] == ["None", "TransactionConflict"]
    # Another item passes; a single write of an item in a transaction fails as on AWS.
    other = asyncio.create_task(table.client.transact_write_items(TransactItems=[_put("d")]))
    await _started(other)
    with pytest.raises(errors.Throttled) as single:
        await table.client.update_item(TableName=TABLE, Key=_key("a"), UpdateExpression="x")
    assert single.value.code == "TransactionConflictException"
    await table.client.get_item(TableName=TABLE, Key=_key("a"))  # reads never conflict
    engine.release.set()
    await asyncio.gather(first, other)
    assert engine.calls.count("transact_write_items") == 2
    assert "update_item" not in engine.calls
    # Once they finished, the same items are free again.
    await table.client.transact_write_items(TransactItems=[_update("b")])
    assert (conflicts.transactions, conflicts.conflicts) == (4, 2)
    assert conflicts.attempts[item_key(TABLE, _key("b"))] == 3
    assert conflicts.attempts[item_key(TABLE, _key("c"))] == 1


async def test_a_transaction_over_an_item_a_single_write_holds_is_cancelled() -> None:
    engine = _Slow()
    table = TableRef(AwsConflicts(engine), TABLE)
    single = asyncio.create_task(
        table.client.update_item(TableName=TABLE, Key=_key("a"), UpdateExpression="x")
    )
    await _started(single)
    with pytest.raises(errors.TransactionCancelled) as cancelled:
        await table.client.transact_write_items(TransactItems=[_update("a")])
    assert [r["Code"] for r in cancelled.value.reasons] == ["TransactionConflict"]
    # Two single writes of one item do not conflict (DynamoDB serialises them).
    again = asyncio.create_task(
        table.client.put_item(TableName=TABLE, Item={**_key("a"), "n": {"N": "2"}})
    )
    await _started(again)
    engine.release.set()
    await asyncio.gather(single, again)


async def test_failed_conditions_are_counted_per_item(table: TableRef) -> None:
    conflicts = AwsConflicts(table.client)
    aws = TableRef(conflicts, table.name)
    key = {"PK": {"S": "CONFLICTS#one"}, "SK": {"S": "CONFLICTS#one"}}
    put = {"TableName": table.name, "Item": key, "ConditionExpression": "attribute_not_exists(PK)"}
    await aws.client.transact_write_items(TransactItems=[{"Put": put}])
    with pytest.raises(errors.TransactionCancelled):
        await aws.client.transact_write_items(TransactItems=[{"Put": put}])
    with pytest.raises(errors.ConditionFailed):
        await aws.client.put_item(**put)
    assert conflicts.condition_failures[item_key(table.name, key)] == 2
    assert conflicts.attempts[item_key(table.name, key)] == 2
    assert conflicts.conflicts == 0
