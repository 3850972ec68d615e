"""Counting what one request asks of storage: calls, items read, capacity consumed.

``MeteredClient`` wraps the application's client for one request. It asks DynamoDB to
return consumed capacity on every call that can report it and adds it up in a ``Meter``.
A meter may carry a budget of calls (the API's accepted cost estimate): a call that would
exceed it is not made, and raises ``CallBudgetExceeded`` instead.

What a request is shown of its figures leaves out the reads of items its caller may not
know of (``Meter.hide_read``: a comment that is hidden from the viewer reads as an unknown
id does); the meter's own totals, which operators see, stay true.

A meter also counts the request's storage rounds: the times a call started while none of
the request's calls was in flight. Calls that overlap (a DataLoader's batch beside another
field's query) count as one round, so rounds are the request's sequential waits on storage.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from decimal import Context, Decimal, InvalidOperation
from typing import Any, NamedTuple

from storage.base.errors import CallBudgetExceeded
from storage.base.types import DynamoClient, Item, Response
from storage.engine.wrapping import ClientWrapper

_CAPACITY_CALLS = frozenset(
    {
        "query",
        "scan",
        "get_item",
        "batch_get_item",
        "transact_get_items",
        "batch_write_item",
        "transact_write_items",
        "update_item",
        "put_item",
        "delete_item",
    }
)


_READS = frozenset({"query", "scan", "get_item", "batch_get_item", "transact_get_items"})


class CallFigures(NamedTuple):
    """What one call read and consumed, from its response."""

    items_read: int
    read_capacity: float
    write_capacity: float


def call_figures(operation: str, response: Response) -> CallFigures:
    """Items read (scanned, for queries and scans: what is paid for) and capacity units
    consumed, as the response of ``operation`` reports them."""
    items = 0
    if operation in ("query", "scan"):
        items = int(response.get("ScannedCount", 0))
    elif operation == "get_item":
        items = 1 if response.get("Item") else 0
    elif operation == "batch_get_item":
        items = sum(len(v) for v in response.get("Responses", {}).values())
    elif operation == "transact_get_items":
        items = sum(1 for r in response.get("Responses", []) if r.get("Item"))
    read = write = 0.0
    capacity = response.get("ConsumedCapacity") or []
    for entry in capacity if isinstance(capacity, list) else [capacity]:
        units = float(entry.get("CapacityUnits", 0.0))
        reads = entry.get("ReadCapacityUnits")
        writes = entry.get("WriteCapacityUnits")
        if reads is not None or writes is not None:
            read += float(reads or 0.0)
            write += float(writes or 0.0)
        elif operation in _READS:
            read += units
        else:
            write += units
    return CallFigures(items, read, write)


# DynamoDB reads by key in units of 4 KB: half a capacity unit each, eventually consistent.
READ_UNIT_BYTES = 4096


def read_units(item: Item, *, consistent: bool = False) -> float:
    """The capacity units reading ``item`` by key consumes in a BatchGetItem (where a key
    that finds nothing consumes none): half a unit per 4 KB begun, a whole one when
    consistent."""
    blocks = max(1, math.ceil(item_bytes(item) / READ_UNIT_BYTES))
    return blocks * (1.0 if consistent else 0.5)


def item_bytes(item: Item) -> int:
    """An item's size as DynamoDB counts it: each attribute's name and value in UTF-8."""
    return sum(len(name.encode()) + _value_bytes(value) for name, value in item.items())


def _value_bytes(value: dict[str, Any]) -> int:
    ((kind, data),) = value.items()
    if kind == "S":
        return len(str(data).encode())
    if kind == "B":
        return len(data)
    if kind == "N":
        return _number_bytes(str(data))
    if kind in ("BOOL", "NULL"):
        return 1
    if kind == "SS":
        return sum(len(str(s).encode()) for s in data)
    if kind == "NS":
        return sum(_number_bytes(str(n)) for n in data)
    if kind == "BS":
        return sum(len(b) for b in data)
    if kind == "L":
        return 3 + sum(1 + _value_bytes(v) for v in data)
    if kind == "M":
        return 3 + sum(1 + len(k.encode()) + _value_bytes(v) for k, v in data.items())
    raise ValueError(f"not a DynamoDB value: {kind}")


_NUMBERS = Context(prec=38)


def _number_bytes(text: str) -> int:
    # As DynamoDB stores a number: base-100 digits aligned on the decimal point (leading
    # and trailing zeros trimmed), one byte each, one for the exponent, one more when
    # negative; zero takes one byte.
    try:
        # DynamoDB keeps 38 significant digits; the default context would round at 28.
        sign, digits, exponent = Decimal(text).normalize(_NUMBERS).as_tuple()
    except InvalidOperation:
        return len(text)
    if not isinstance(exponent, int) or digits == (0,):
        return 1
    top = exponent + len(digits) - 1
    return (top // 2 - exponent // 2 + 1) + 1 + sign


@dataclass(slots=True)
class Meter:
    calls: dict[str, int] = field(default_factory=dict)
    items_read: int = 0
    read_capacity: float = 0.0
    write_capacity: float = 0.0
    # Calls the request may make in all; None: no limit.
    budget: int | None = None
    # Calls let through (counted when they start, so concurrent calls cannot all slip
    # under the budget) and calls refused.
    started: int = 0
    refused: int = 0
    # Sequential storage rounds (see the module's docstring), and calls in flight now.
    rounds: int = 0
    in_flight: int = 0
    # Of the figures above, what the caller may not know was read (see ``hide_read``).
    hidden_items: int = 0
    hidden_read_capacity: float = 0.0
    # Set when the answer says "not found" for what may exist unseen (``conceal``).
    concealed: bool = False

    def admit(self, operation: str) -> None:
        """Count a call about to start, or raise CallBudgetExceeded if it would exceed the
        budget."""
        if self.budget is not None and self.started >= self.budget:
            self.refused += 1
            raise CallBudgetExceeded(
                f"{operation} refused: the request has made the {self.budget} storage calls "
                "its budget allows"
            )
        self.started += 1

    @property
    def total_calls(self) -> int:
        return sum(self.calls.values())

    def record(self, operation: str, response: Response) -> None:
        self.calls[operation] = self.calls.get(operation, 0) + 1
        items, read, write = call_figures(operation, response)
        self.items_read += items
        self.read_capacity += read
        self.write_capacity += write

    def hide_read(self, items: int, read_capacity: float) -> None:
        """Leave a read of items the caller may not know of out of the figures ``summary``
        shows, as though storage had found nothing there; the totals keep it."""
        self.hidden_items += items
        self.hidden_read_capacity += read_capacity

    def conceal(self) -> None:
        """Show no figures that depend on what storage holds for this request: it answers
        "not found" for something that may exist where the caller may not see it (a write
        that read it to refuse it), and should read exactly as a miss does."""
        self.concealed = True

    def summary(self, *, detailed: bool = True) -> dict[str, Any]:
        """The figures of this request, as its caller may see them. Items read and
        capacity depend on what storage holds, so ``detailed=False`` leaves them out (the
        calls alone depend only on what was asked), and reads hidden from the caller
        (``hide_read``) are left out of them."""
        figures: dict[str, Any] = {
            "calls": self.total_calls,
            "callsByOperation": dict(sorted(self.calls.items())),
        }
        if detailed and not self.concealed:
            figures |= {
                "itemsRead": self.items_read - self.hidden_items,
                "readCapacityUnits": round(self.read_capacity - self.hidden_read_capacity, 3),
                "writeCapacityUnits": round(self.write_capacity, 3),
            }
        return figures | {"refusedCalls": self.refused}


class MeteredClient(ClientWrapper):
    """A DynamoClient that records every call in a Meter."""

    def __init__(self, inner: DynamoClient, meter: Meter) -> None:
        super().__init__(inner)
        self.meter = meter

    async def _call(self, operation: str, kwargs: dict[str, Any]) -> Response:
        self.meter.admit(operation)
        if operation in _CAPACITY_CALLS:
            kwargs.setdefault("ReturnConsumedCapacity", "TOTAL")
        meter = self.meter
        if meter.in_flight == 0:
            meter.rounds += 1
        meter.in_flight += 1
        try:
            response = await super()._call(operation, kwargs)
        finally:
            meter.in_flight -= 1
        meter.record(operation, response)
        return response
