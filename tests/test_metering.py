"""The per-request meter: overlapping calls are one storage round; figures per call."""

from __future__ import annotations

import asyncio
from typing import Any

from storage.metering import Meter, MeteredClient, call_figures
from storage.types import Response
from storage.wrapping import ClientWrapper


class Slow(ClientWrapper):
    """A client that answers every call itself (it wraps nothing) after a moment, with one
    item read."""

    def __init__(self) -> None:
        super().__init__(self)

    async def _call(self, operation: str, kwargs: dict[str, Any]) -> Response:
        await asyncio.sleep(0.01)
        return {"Item": {"pk": {"S": "x"}}, "ConsumedCapacity": {"CapacityUnits": 0.5}}


async def test_calls_that_overlap_are_one_round() -> None:
    meter = Meter()
    client = MeteredClient(Slow(), meter)
    await asyncio.gather(*(client.get_item(TableName="t") for _ in range(3)))
    assert (meter.rounds, meter.total_calls) == (1, 3)
    await client.get_item(TableName="t")
    await asyncio.gather(client.get_item(TableName="t"), client.get_item(TableName="t"))
    assert (meter.rounds, meter.total_calls) == (3, 6)
    assert meter.in_flight == 0
    assert (meter.items_read, meter.read_capacity) == (6, 3.0)


def test_call_figures_split_read_and_write_capacity() -> None:
    query = {"ScannedCount": 7, "ConsumedCapacity": {"CapacityUnits": 1.5}}
    assert call_figures("query", query) == (7, 1.5, 0.0)
    write = {"ConsumedCapacity": [{"CapacityUnits": 2.0}, {"CapacityUnits": 1.0}]}
    assert call_figures("transact_write_items", write) == (0, 0.0, 3.0)
    split = {"ConsumedCapacity": {"ReadCapacityUnits": 1.0, "WriteCapacityUnits": 4.0}}
    assert call_figures("update_item", split) == (0, 1.0, 4.0)
    batch: Response = {"Responses": {"t": [{}, {}]}}
    assert call_figures("batch_get_item", batch) == (2, 0.0, 0.0)
