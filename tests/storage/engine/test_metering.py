"""The per-request meter: overlapping calls are one storage round; figures per call."""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

from storage.base.types import Response
from storage.engine.metering import Meter, MeteredClient, call_figures, item_bytes, read_units
from storage.engine.table import TableRef
from storage.engine.wrapping import ClientWrapper


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


def _item(key: str, text: int, **extra: Any) -> dict[str, Any]:
    return {"PK": {"S": key}, "SK": {"S": key}, "t": {"S": "é" + "x" * (text - 2)}, **extra}


async def test_read_units_are_what_the_engine_reports(table: TableRef) -> None:
    # What a comment hidden from the viewer took to read is taken out of the figures shown
    # (resolvers.context): it must be what storage counted, 4 KB boundaries included.
    key = f"units-{uuid.uuid4().hex}"
    extra = {
        "n": {"N": "-12345.678000"},
        "z": {"N": "0"},
        "w": {"N": "1" * 38},
        "b": {"BOOL": True},
        "l": {"L": [{"S": "ab"}, {"N": "10"}, {"NULL": True}]},
        "m": {"M": {"k": {"S": "v"}, "kk": {"SS": ["x", "yy"]}}},
    }
    # Texts that make items of 4095 to 4097 bytes and 8191 to 8193, with the key and the
    # other attributes.
    base = item_bytes(_item(f"{key}-00000", 2, **extra)) - 2
    sizes = (300, 4095, 4096, 4097, 8191, 8192, 8193, 20000)
    items = [_item(f"{key}-{size:05}", size - base, **extra) for size in sizes]
    assert [item_bytes(item) for item in items] == list(sizes)
    for item in items:
        await table.client.put_item(TableName=table.name, Item=item)
    for item in items:
        response = await table.client.batch_get_item(
            RequestItems={table.name: {"Keys": [{"PK": item["PK"], "SK": item["SK"]}]}},
            ReturnConsumedCapacity="TOTAL",
        )
        (found,) = response["Responses"][table.name]
        reported = call_figures("batch_get_item", response).read_capacity
        assert read_units(found) == reported, item_bytes(found)


def test_item_bytes_follow_dynamodbs_sizes() -> None:
    assert item_bytes({"ab": {"S": "é"}}) == 2 + 2
    # Numbers: base-100 digits aligned on the point, the exponent, the sign.
    assert item_bytes({"n": {"N": "100"}, "m": {"N": "-0.001230"}}) == 1 + 2 + 1 + 4
    assert item_bytes({"n": {"N": "1" * 38}, "z": {"N": "0"}}) == 1 + 20 + 1 + 1
    assert item_bytes({"l": {"L": [{"BOOL": False}]}}) == 1 + 3 + 1 + 1
    assert read_units({"a": {"S": "x" * 5000}}) == 1.0
    assert read_units({"a": {"S": ""}}, consistent=True) == 1.0


def test_hidden_reads_leave_the_figures_shown_but_not_the_totals() -> None:
    meter = Meter()
    meter.record(
        "batch_get_item",
        {"Responses": {"t": [{}, {}]}, "ConsumedCapacity": [{"CapacityUnits": 1.5}]},
    )
    meter.hide_read(1, 0.5)
    shown = meter.summary()
    assert (shown["itemsRead"], shown["readCapacityUnits"]) == (1, 1.0)
    assert (meter.items_read, meter.read_capacity) == (2, 1.5)
