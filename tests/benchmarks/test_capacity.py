"""The benchmarks' capacity probe: AWS's item-size and index-write rules, and what it records
around a real transaction (benchmarks/scale/capacity.py, behind docs/benchmarks/lifecycle.md)."""

from __future__ import annotations

import uuid

import pytest

from benchmarks.scale.capacity import CapacityProbe, index_writes, item_size, write_units
from storage.base.types import Item
from storage.engine.table import TableRef


@pytest.mark.parametrize(
    ("item", "size"),
    [
        ({"name": {"S": "abc"}}, 7),
        ({"name": {"S": "é"}}, 6),  # UTF-8 bytes
        ({"n": {"N": "12345"}}, 1 + 4),  # 1 byte per two significant digits, plus 1
        ({"n": {"N": "100"}}, 1 + 2),  # trailing zeros are not significant
        ({"n": {"N": "-0.0012"}}, 1 + 2),  # nor leading ones
        ({"b": {"BOOL": True}, "z": {"NULL": True}}, 4),
        ({"l": {"L": [{"S": "ab"}, {"N": "1"}]}}, 1 + 3 + (1 + 2) + (1 + 2)),
        ({"m": {"M": {"k": {"S": "v"}}}}, 1 + 3 + (1 + 1 + 1)),
    ],
)
def test_item_size_follows_aws(item: Item, size: int) -> None:
    assert item_size(item) == size


def test_write_units_round_up_per_kb_with_a_minimum_of_one() -> None:
    assert [write_units(n) for n in (0, 1, 1024, 1025, 2500)] == [1, 1, 1, 2, 3]


def _comment(gsi4: str | None, body: str = "x", **more: str) -> Item:
    item: Item = {"PK": {"S": "COMMENT#1"}, "SK": {"S": "COMMENT#1"}, "body": {"S": body}}
    if gsi4 is not None:
        item["GSI4PK"] = {"S": gsi4}
        item["GSISK"] = {"S": "2024-01-01T00:00:00.000Z#1"}
    for name, value in more.items():
        item[name] = {"S": value}
    return item


def test_index_writes_follow_the_rules_for_each_change() -> None:
    listed = _comment("PRODUCT#p")
    assert index_writes(None, listed) == {"all": (1, 1)}  # appears
    assert index_writes(listed, None) == {"all": (1, 1)}  # disappears
    assert index_writes(listed, _comment(None)) == {"all": (1, 1)}  # leaves (sparse)
    assert index_writes(listed, listed) == {}  # unchanged
    assert index_writes(listed, _comment("PRODUCT#p", "y")) == {"all": (1, 1)}  # same key
    assert index_writes(listed, _comment("PRODUCT#q")) == {"all": (2, 2)}  # moves
    assert index_writes(_comment(None), _comment(None, "y")) == {}  # in no index
    big = _comment("PRODUCT#p", "x" * 1500)
    assert index_writes(listed, big) == {"all": (1, 2)}  # the larger image
    # An index needs both of its keys: GSISK alone puts the item in no index.
    half = {**_comment(None), "GSISK": {"S": "2024"}}
    assert index_writes(None, half) == {}
    authored = _comment("PRODUCT#p", author="ann")
    assert index_writes(None, authored) == {"all": (1, 1), "byAuthor": (1, 1)}


async def test_the_probe_prices_a_transaction_by_aws_rules(table: TableRef) -> None:
    names = [f"probe-{uuid.uuid4().hex}" for _ in range(4)]
    probe = CapacityProbe(table.client)
    await probe.transact_write_items(
        TransactItems=[
            {
                "Put": {
                    "TableName": table.name,
                    "Item": {"PK": {"S": n}, "SK": {"S": "x"}, "b": {"S": "x" * 600}},
                }
            }
            for n in names
        ]
    )
    account = probe.account
    assert [w.role for w in account.writes] == ["other"] * 4
    size = len("PK") + len(names[0]) + len("SK") + 1 + len("b") + 600
    assert [(w.size_before, w.size_after) for w in account.writes] == [(None, size)] * 4
    assert account.aws_write_table == 8  # 2 per item of up to 1 KB
    assert account.aws_write_indexes == 0
    # What LIFECYCLE.md says of DynamoDB Local: it does not charge a transaction per item.
    assert account.engine_write_table == 2.0
    assert account.calls == {"transact_write_items": 1}

    before = await probe.get_item(
        TableName=table.name, Key={"PK": {"S": names[0]}, "SK": {"S": "x"}}, ConsistentRead=True
    )
    assert before["Item"]
    assert account.aws_read == 1.0
    assert account.engine_read == 1.0
