"""Counting what one request asks of storage: calls, items read, capacity consumed.

``MeteredClient`` wraps the application's client for one request. It asks DynamoDB to
return consumed capacity on every call that can report it and adds it up in a ``Meter``.
A meter may carry a budget of calls (the API's accepted cost estimate): a call that would
exceed it is not made, and raises ``CallBudgetExceeded`` instead.

A meter also counts the request's storage rounds: the times a call started while none of
the request's calls was in flight. Calls that overlap (a DataLoader's batch beside another
field's query) count as one round, so rounds are the request's sequential waits on storage.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, NamedTuple

from storage.errors import CallBudgetExceeded
from storage.types import DynamoClient, Response
from storage.wrapping import ClientWrapper

_CAPACITY_CALLS = frozenset(
    {
        "query",
        "scan",
        "get_item",
        "batch_get_item",
        "batch_write_item",
        "transact_write_items",
        "update_item",
        "put_item",
        "delete_item",
    }
)


_READS = frozenset({"query", "scan", "get_item", "batch_get_item"})


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

    def summary(self, *, detailed: bool = True) -> dict[str, Any]:
        """The figures of this request. Items read and capacity depend on what storage
        holds, hidden items included, so ``detailed=False`` leaves them out: the calls
        alone depend only on what was asked."""
        figures: dict[str, Any] = {
            "calls": self.total_calls,
            "callsByOperation": dict(sorted(self.calls.items())),
        }
        if detailed:
            figures |= {
                "itemsRead": self.items_read,
                "readCapacityUnits": round(self.read_capacity, 3),
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
