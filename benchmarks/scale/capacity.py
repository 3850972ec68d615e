"""What storage calls cost, twice: as the engine reports it, and by AWS's published rules.

``CapacityProbe`` wraps a client. Every call that can report consumed capacity asks for it
per index (``ReturnConsumedCapacity=INDEXES``) and the engine's figures are added up as
given. DynamoDB Local does not charge transactions as AWS does (a transaction of four new
600-byte items reports 2.0 units where AWS's rule gives 8), so the probe also prices every
call by AWS's rules, from the items themselves: it reads each item a write targets just
before and just after the write, through the wrapped client and unrecorded. A ``Layout``
names the table's key attributes and GSIs: ours by default, another table's (the part 1
baseline of ``benchmarks.writes.part1``) when given.

AWS's rules, as applied here (sizes by AWS's item-size rule, ``item_size``):

- A write of an item costs ceil(KB) write units of the larger of its images before and after
  (a delete: the item deleted; at least 1). In TransactWriteItems every item costs twice
  that (prepare and commit).
- Each index whose entry changes costs ceil(KB) of the entry (projection ALL: the item): one
  write when the entry appears or disappears, one (the larger image) when its attributes
  change under the same key, two (old and new) when its key changes; nothing when the item
  is in the index neither before nor after, or its entry is unchanged. Index writes are
  taken as not doubled: AWS documents the doubling for the items of a transaction, and
  indexes are updated after it commits.
- GetItem costs ceil(size / 4 KB) read units of the whole item (a projection does not
  reduce it), half for an eventually consistent read; Query the sum of the items read,
  rounded up to 4 KB, half when eventually consistent. A read that finds nothing costs the
  minimum (1, or 0.5).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from storage.base.types import AttributeValue, DynamoClient, Item, Response
from storage.engine.wrapping import ClientWrapper
from storage.model import keys
from storage.model.indexes import Index

KB = 1024
READ_BLOCK = 4 * KB
_READS = frozenset({"get_item", "query", "scan", "batch_get_item"})
_WRITES = frozenset(
    {"transact_write_items", "batch_write_item", "put_item", "update_item", "delete_item"}
)


def number_size(text: str) -> int:
    """AWS: a number takes 1 byte per two significant digits, plus 1."""
    digits = Decimal(text).normalize().as_tuple().digits
    significant = len(digits) if any(digits) else 0
    return math.ceil(significant / 2) + 1


def value_size(value: AttributeValue) -> int:
    ((kind, v),) = value.items()
    if kind == "S":
        return len(v.encode())
    if kind == "N":
        return number_size(v)
    if kind in ("BOOL", "NULL"):
        return 1
    if kind == "SS":
        return sum(len(s.encode()) for s in v)
    if kind == "NS":
        return sum(number_size(n) for n in v)
    if kind == "L":
        return 3 + sum(1 + value_size(e) for e in v)
    if kind == "M":
        return 3 + sum(1 + len(k.encode()) + value_size(e) for k, e in v.items())
    raise ValueError(f"no size rule for attribute type {kind}")


def item_size(item: Item) -> int:
    """An item's size by AWS's rule: attribute names and values, in bytes."""
    return sum(len(name.encode()) + value_size(v) for name, v in item.items())


def write_units(size: int) -> int:
    return max(1, math.ceil(size / KB))


def read_units(size: int, consistent: bool) -> float:
    units = max(1, math.ceil(size / READ_BLOCK))
    return float(units) if consistent else units / 2


@dataclass(frozen=True, slots=True)
class GlobalIndex:
    """A GSI as the pricing needs it: its name and its two key attributes."""

    name: str
    partition_attr: str
    sort_attr: str


OUR_INDEXES = tuple(GlobalIndex(i.value, i.partition_attr, i.sort_attr) for i in Index)


def _index_entry(item: Item | None, index: GlobalIndex) -> tuple[str, str] | None:
    """The entry's key in the index, or None when the item is not in it (sparse)."""
    if item is None:
        return None
    pk, sk = item.get(index.partition_attr), item.get(index.sort_attr)
    if pk is None or sk is None or "S" not in pk or "S" not in sk:
        return None
    return pk["S"], sk["S"]


def index_writes(
    before: Item | None, after: Item | None, indexes: tuple[GlobalIndex, ...] = OUR_INDEXES
) -> dict[str, tuple[int, int]]:
    """Per index whose entry changes: (entry writes, write units), by the rules above."""
    out = {}
    old_size = 0 if before is None else item_size(before)
    new_size = 0 if after is None else item_size(after)
    for index in indexes:
        old, new = _index_entry(before, index), _index_entry(after, index)
        if old is None and new is None:
            continue
        if old is None:
            out[index.name] = (1, write_units(new_size))
        elif new is None:
            out[index.name] = (1, write_units(old_size))
        elif old != new:
            out[index.name] = (2, write_units(old_size) + write_units(new_size))
        elif before != after:
            out[index.name] = (1, max(write_units(old_size), write_units(new_size)))
    return out


def item_role(key: Item) -> str:
    """What an item of the table is, from its key (for the report)."""
    pk, sk = key["PK"]["S"], key["SK"]["S"]
    if pk.startswith(keys.COMMENT_PREFIX):
        if sk.startswith(keys.REPORT_PREFIX):
            return "report"
        return "vote" if sk.startswith(keys.VOTE_PREFIX) else "comment"
    if pk.startswith(keys.PRODUCT_PREFIX):
        return "stats (all)" if sk == keys.STATS_ALL else "stats (language)"
    if pk.startswith(keys.AUTHOR_PREFIX):
        return "author hour" if sk.startswith(keys.HOUR_PREFIX) else "author slot"
    if pk.startswith(keys.IDEMPOTENCY_PREFIX):
        return "idempotency record"
    return "other"


@dataclass(frozen=True, slots=True)
class Layout:
    """What the probe needs to know of a table: its key attributes, its GSIs, and what an
    item is (for the report), from its key."""

    partition_key: str
    sort_key: str
    indexes: tuple[GlobalIndex, ...]
    role: Callable[[Item], str]

    def key(self, item: Item) -> Item:
        return {self.partition_key: item[self.partition_key], self.sort_key: item[self.sort_key]}


OURS = Layout("PK", "SK", OUR_INDEXES, item_role)


@dataclass(frozen=True, slots=True)
class ItemWrite:
    """One item written, priced by AWS's rules."""

    role: str
    size_before: int | None
    size_after: int | None
    table_units: int
    index_writes: dict[str, tuple[int, int]]


@dataclass(slots=True)
class Account:
    calls: Counter[str] = field(default_factory=Counter)
    # As DynamoDB Local reported them.
    engine_write_table: float = 0.0
    engine_write_indexes: float = 0.0
    engine_read: float = 0.0
    # By AWS's rules.
    writes: list[ItemWrite] = field(default_factory=list)
    aws_read: float = 0.0

    @property
    def aws_write_table(self) -> int:
        return sum(w.table_units for w in self.writes)

    @property
    def aws_write_indexes(self) -> int:
        return sum(units for w in self.writes for _, units in w.index_writes.values())

    @property
    def index_entry_writes(self) -> Counter[str]:
        counts: Counter[str] = Counter()
        for w in self.writes:
            for name, (n, _) in w.index_writes.items():
                counts[name] += n
        return counts


def _targets(
    operation: str, kwargs: dict[str, Any], key_of: Callable[[Item], Item]
) -> list[tuple[str, Item, bool]]:
    """(table, key, is a condition check) of every item a write call touches."""
    out = []
    if operation == "transact_write_items":
        for action in kwargs["TransactItems"]:
            ((kind, body),) = action.items()
            key = body["Item"] if kind == "Put" else body["Key"]
            out.append((body["TableName"], key_of(key), kind == "ConditionCheck"))
    elif operation == "batch_write_item":
        for table, requests in kwargs["RequestItems"].items():
            for request in requests:
                ((kind, body),) = request.items()
                key = body["Item"] if kind == "PutRequest" else body["Key"]
                out.append((table, key_of(key), False))
    else:
        key = kwargs["Item"] if operation == "put_item" else kwargs["Key"]
        out.append((kwargs["TableName"], key_of(key), False))
    return out


class CapacityProbe(ClientWrapper):
    """A DynamoClient that adds up what each call cost: reported, and by AWS's rules."""

    def __init__(self, inner: DynamoClient, layout: Layout = OURS) -> None:
        super().__init__(inner)
        self.layout = layout
        self.account = Account()

    async def _image(self, table: str, key: Item) -> Item | None:
        response = await self.inner.get_item(TableName=table, Key=key, ConsistentRead=True)
        item: Item | None = response.get("Item")
        return item

    async def _call(self, operation: str, kwargs: dict[str, Any]) -> Response:
        if operation in _READS | _WRITES:
            kwargs["ReturnConsumedCapacity"] = "INDEXES"
        targets = _targets(operation, kwargs, self.layout.key) if operation in _WRITES else []
        before = [await self._image(t, k) for t, k, _ in targets]
        response = await super()._call(operation, kwargs)
        self.account.calls[operation] += 1
        self._record_engine(operation, response)
        if operation in _WRITES:
            transactional = operation == "transact_write_items"
            for (table, key, check), old in zip(targets, before, strict=True):
                new = await self._image(table, key)
                self._price_write(key, old, new, transactional=transactional, check=check)
        elif operation in ("get_item", "query"):
            await self._price_read(operation, kwargs, response)
        elif operation in _READS:
            raise NotImplementedError(f"no AWS pricing for {operation} here")
        return response  # the rest (describe_table...) is not billed per request

    def _record_engine(self, operation: str, response: Response) -> None:
        consumed = response.get("ConsumedCapacity") or []
        for entry in consumed if isinstance(consumed, list) else [consumed]:
            if operation in _READS:
                self.account.engine_read += float(entry.get("CapacityUnits", 0.0))
                continue
            indexes = entry.get("GlobalSecondaryIndexes") or {}
            on_indexes = sum(float(i.get("CapacityUnits", 0.0)) for i in indexes.values())
            self.account.engine_write_indexes += on_indexes
            self.account.engine_write_table += float(entry.get("CapacityUnits", 0.0)) - on_indexes

    def _price_write(
        self, key: Item, old: Item | None, new: Item | None, *, transactional: bool, check: bool
    ) -> None:
        factor = 2 if transactional else 1
        if check:  # a ConditionCheck reads: 4 KB blocks, strongly consistent
            size = 0 if old is None else item_size(old)
            self.account.aws_read += factor * read_units(size, consistent=True)
            return
        sizes = [item_size(i) for i in (old, new) if i is not None]
        self.account.writes.append(
            ItemWrite(
                role=self.layout.role(key),
                size_before=None if old is None else item_size(old),
                size_after=None if new is None else item_size(new),
                table_units=factor * write_units(max(sizes, default=0)),
                index_writes=index_writes(old, new, self.layout.indexes),
            )
        )

    async def _price_read(self, operation: str, kwargs: dict[str, Any], response: Response) -> None:
        consistent = bool(kwargs.get("ConsistentRead", False))
        if operation == "get_item":
            full = await self._image(kwargs["TableName"], kwargs["Key"])
            size = 0 if full is None else item_size(full)
            self.account.aws_read += read_units(size, consistent)
            return
        if "FilterExpression" in kwargs:
            raise NotImplementedError("items a filter dropped cannot be sized from the answer")
        # A projection returns less than was read: size the whole items read.
        table = kwargs["TableName"]
        items = [await self._image(table, self.layout.key(i)) for i in response["Items"]]
        size = sum(item_size(i) for i in items if i is not None)
        self.account.aws_read += read_units(size, consistent)
