"""A serving process's layout check loop (``server.runtime._start_checking``) goes on
checking whatever one check met, so that a process recovers once the item is right again."""

from __future__ import annotations

import asyncio
from contextlib import AsyncExitStack
from typing import Any

import pytest

from server.runtime import _start_checking
from storage.base.types import DynamoClient, Response
from storage.engine.layout_check import LayoutGate
from storage.engine.table import TableRef
from storage.engine.wrapping import ClientWrapper
from storage.model.layout_version import TableLayout
from tests.helpers import own_table

pytestmark = pytest.mark.engine


class CountingReads(ClientWrapper):
    """Counts the layout reads (get_item) and lets a test wait for the next ones."""

    def __init__(self, inner: DynamoClient) -> None:
        super().__init__(inner)
        self.reads = 0
        self.changed = asyncio.Condition()

    async def _call(self, operation: str, kwargs: dict[str, Any]) -> Response:
        response = await super()._call(operation, kwargs)
        if operation == "get_item":
            async with self.changed:
                self.reads += 1
                self.changed.notify_all()
        return response

    async def reads_past(self, n: int) -> None:
        async with self.changed:
            await self.changed.wait_for(lambda: self.reads > n)


async def test_a_layout_item_edited_wrong_by_hand_and_put_right_leaves_the_process_checking(
    table: TableRef,
) -> None:
    own = await own_table(table, "checking")
    good = TableLayout.new_table(0.8).to_item()  # checks every 0.2 s
    await own.client.put_item(TableName=own.name, Item=good)
    counting = CountingReads(own.client)
    gate = LayoutGate(enforced=True)
    died: BaseException | None = None
    stack = AsyncExitStack()
    try:
        await _start_checking(stack, TableRef(counting, own.name), gate)
        assert gate.ready()
        # Someone edits the item in the console and saves `indexes` as a string.
        await own.client.put_item(TableName=own.name, Item={**good, "indexes": {"S": "3"}})
        await counting.reads_past(counting.reads)  # a check read the wrong item
        await own.client.put_item(TableName=own.name, Item=good)  # and it is put right
        seen = counting.reads
        # The bound only guards against a hang: a live loop reads again within 0.2 s.
        async with asyncio.timeout(10):
            await counting.reads_past(seen + 1)
        assert gate.ready()
    except TimeoutError:
        pytest.fail(
            f"no layout read in 10 s after the item was put right ({counting.reads} reads in "
            f"all): the check loop has stopped; ready={gate.ready()}, "
            f"may_write={gate.may_write()}"
        )
    finally:
        try:
            await stack.aclose()
        except Exception as exc:  # the dead loop's exception surfaces at shutdown
            died = exc
    assert died is None, f"stopping the checks raised {died!r}"
