"""DynamoDB requests built from small objects, names and values always through generated
placeholders (``#n0``, ``:v0``), so no attribute name or value is ever spliced into
expression text.

Conditions compose from ``Attr`` comparisons with ``&``, ``|`` and ``~``; each request
builder renders its expressions into one ``Placeholders``::

    count = Attr("count_5")
    update = Update()
    update.add("count_5", 1)
    update.condition(count.not_exists() | count.eq(3))
    request = update.request(table_name, key)

    query_request(table, index=..., key=Attr("GSIPK").eq(pk) & Attr("GSISK").lt(position),
                  filter=Attr("rating").is_in([4, 5]), forward=False, limit=21)
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from storage.base.types import AttributeValue, Item

# A value as written in Python (str, int, bool) or already in the wire format.
Value = AttributeValue | str | int | bool


def wire(value: Value) -> AttributeValue:
    """The wire form of a value: ``"x"`` is ``{"S": "x"}``, ``3`` is ``{"N": "3"}``."""
    if isinstance(value, dict):
        return value
    if isinstance(value, bool):  # before int: bool is an int
        return {"BOOL": value}
    if isinstance(value, int):
        return {"N": str(value)}
    return {"S": value}


@dataclass(slots=True)
class Placeholders:
    """Names and values of one request, each attribute name given one placeholder."""

    names: dict[str, str] = field(default_factory=dict)
    values: dict[str, AttributeValue] = field(default_factory=dict)
    _by_name: dict[str, str] = field(default_factory=dict)

    def name(self, attribute: str) -> str:
        """The ``#n`` placeholder of an attribute name."""
        found = self._by_name.get(attribute)
        if found is None:
            found = f"#n{len(self._by_name)}"
            self._by_name[attribute] = found
            self.names[found] = attribute
        return found

    def value(self, value: Value) -> str:
        """A new ``:v`` placeholder for a value."""
        placeholder = f":v{len(self.values)}"
        self.values[placeholder] = wire(value)
        return placeholder

    def copy(self) -> Placeholders:
        return Placeholders(dict(self.names), dict(self.values), dict(self._by_name))

    def into(self, params: dict[str, Any]) -> dict[str, Any]:
        """``params`` with the placeholders' maps added (only those in use)."""
        if self.names:
            params["ExpressionAttributeNames"] = dict(self.names)
        if self.values:
            params["ExpressionAttributeValues"] = dict(self.values)
        return params


class Condition:
    """A condition (key, filter or write condition), rendered against placeholders."""

    __slots__ = ()

    def render(self, p: Placeholders) -> str:
        raise NotImplementedError

    def __and__(self, other: Condition) -> Condition:
        return And((self, other))

    def __or__(self, other: Condition) -> Condition:
        return Or((self, other))

    def __invert__(self) -> Condition:
        return Not(self)


@dataclass(frozen=True, slots=True)
class Attr:
    """An attribute named in a condition."""

    name: str

    def eq(self, value: Value) -> Condition:
        return Compare(self, "=", value)

    def ne(self, value: Value) -> Condition:
        return Compare(self, "<>", value)

    def lt(self, value: Value) -> Condition:
        return Compare(self, "<", value)

    def le(self, value: Value) -> Condition:
        return Compare(self, "<=", value)

    def gt(self, value: Value) -> Condition:
        return Compare(self, ">", value)

    def ge(self, value: Value) -> Condition:
        return Compare(self, ">=", value)

    def between(self, low: Value, high: Value) -> Condition:
        return Between(self, low, high)

    def is_in(self, values: Sequence[Value]) -> Condition:
        if not values:
            raise ValueError("IN needs at least one value")
        return In(self, tuple(values))

    def exists(self) -> Condition:
        return Exists(self, True)

    def not_exists(self) -> Condition:
        return Exists(self, False)

    def contains(self, value: Value) -> Condition:
        """A string set (or list) that holds ``value``, or a string that holds it."""
        return Contains(self, value)


@dataclass(frozen=True, slots=True)
class Compare(Condition):
    attr: Attr
    op: str
    value: Value

    def render(self, p: Placeholders) -> str:
        return f"{p.name(self.attr.name)} {self.op} {p.value(self.value)}"


@dataclass(frozen=True, slots=True)
class Between(Condition):
    attr: Attr
    low: Value
    high: Value

    def render(self, p: Placeholders) -> str:
        return f"{p.name(self.attr.name)} BETWEEN {p.value(self.low)} AND {p.value(self.high)}"


@dataclass(frozen=True, slots=True)
class In(Condition):
    attr: Attr
    values: tuple[Value, ...]

    def render(self, p: Placeholders) -> str:
        listed = ", ".join(p.value(v) for v in self.values)
        return f"{p.name(self.attr.name)} IN ({listed})"


@dataclass(frozen=True, slots=True)
class Exists(Condition):
    attr: Attr
    present: bool

    def render(self, p: Placeholders) -> str:
        function = "attribute_exists" if self.present else "attribute_not_exists"
        return f"{function}({p.name(self.attr.name)})"


@dataclass(frozen=True, slots=True)
class Contains(Condition):
    attr: Attr
    value: Value

    def render(self, p: Placeholders) -> str:
        return f"contains({p.name(self.attr.name)}, {p.value(self.value)})"


@dataclass(frozen=True, slots=True)
class And(Condition):
    terms: tuple[Condition, ...]

    def render(self, p: Placeholders) -> str:
        return " AND ".join(f"({t.render(p)})" for t in self.terms)


@dataclass(frozen=True, slots=True)
class Or(Condition):
    terms: tuple[Condition, ...]

    def render(self, p: Placeholders) -> str:
        return " OR ".join(f"({t.render(p)})" for t in self.terms)


@dataclass(frozen=True, slots=True)
class Not(Condition):
    term: Condition

    def render(self, p: Placeholders) -> str:
        return f"NOT ({self.term.render(p)})"


def all_of(conditions: Sequence[Condition]) -> Condition | None:
    """The conditions joined with AND; None when there are none."""
    if not conditions:
        return None
    return conditions[0] if len(conditions) == 1 else And(tuple(conditions))


@dataclass(slots=True)
class Update:
    """One UpdateItem (or the Update of a transaction): SET, ADD and REMOVE clauses and the
    conditions it commits under (all of them must hold)."""

    p: Placeholders = field(default_factory=Placeholders)
    sets: list[str] = field(default_factory=list)
    adds: list[str] = field(default_factory=list)
    removes: list[str] = field(default_factory=list)
    conditions: list[Condition] = field(default_factory=list)

    def set(self, attribute: str, value: Value) -> None:
        self.sets.append(f"{self.p.name(attribute)} = {self.p.value(value)}")

    def add(self, attribute: str, delta: int) -> None:
        self.adds.append(f"{self.p.name(attribute)} {self.p.value(delta)}")

    def remove(self, attribute: str) -> None:
        self.removes.append(self.p.name(attribute))

    def condition(self, condition: Condition) -> None:
        self.conditions.append(condition)

    def expression(self) -> str:
        clauses = []
        if self.sets:
            clauses.append("SET " + ", ".join(self.sets))
        if self.adds:
            clauses.append("ADD " + ", ".join(self.adds))
        if self.removes:
            clauses.append("REMOVE " + ", ".join(self.removes))
        if not clauses:
            raise ValueError("an update must change something")
        return " ".join(clauses)

    def request(self, table: str, key: Item, *, return_old: bool = False) -> dict[str, Any]:
        """The parameters of UpdateItem (and of a transaction's Update).

        ``return_old``: a failed condition returns the item as it is, so a writer that lost
        a race learns the new state without another read.
        """
        params: dict[str, Any] = {
            "TableName": table,
            "Key": key,
            "UpdateExpression": self.expression(),
        }
        # The conditions' placeholders go into a copy: asking again (a retry) gives the
        # same request, not one with placeholders of the last one left unused, which
        # DynamoDB refuses.
        return _conditioned(params, self.p.copy(), all_of(self.conditions), return_old)


def put_request(
    table: str, item: Item, condition: Condition | None = None, *, return_old: bool = False
) -> dict[str, Any]:
    """The parameters of PutItem (and of a transaction's Put)."""
    return _conditioned({"TableName": table, "Item": item}, Placeholders(), condition, return_old)


def delete_request(
    table: str, key: Item, condition: Condition | None = None, *, return_old: bool = False
) -> dict[str, Any]:
    """The parameters of DeleteItem (and of a transaction's Delete)."""
    return _conditioned({"TableName": table, "Key": key}, Placeholders(), condition, return_old)


def check_request(table: str, key: Item, condition: Condition) -> dict[str, Any]:
    """The parameters of a transaction's ConditionCheck; a failure returns the item as it
    is (ALL_OLD)."""
    return _conditioned({"TableName": table, "Key": key}, Placeholders(), condition, True)


def get_request(
    table: str, key: Item, *, projection: Sequence[str] = (), consistent: bool = False
) -> dict[str, Any]:
    """The parameters of GetItem, reading only ``projection`` when given."""
    p = Placeholders()
    params: dict[str, Any] = {"TableName": table, "Key": key}
    if consistent:
        params["ConsistentRead"] = True
    if projection:
        params["ProjectionExpression"] = ", ".join(p.name(a) for a in projection)
    return p.into(params)


def query_request(
    table: str,
    *,
    index: str | None,
    key: Condition,
    forward: bool,
    limit: int,
    filter: Condition | None = None,
    projection: Sequence[str] = (),
) -> dict[str, Any]:
    """The parameters of a Query: ``key`` on the partition (and sort) key, ``filter`` on
    what was read (items read still count against ``limit`` and capacity)."""
    p = Placeholders()
    params: dict[str, Any] = {
        "TableName": table,
        "KeyConditionExpression": key.render(p),
        "ScanIndexForward": forward,
        "Limit": limit,
    }
    if index is not None:
        params["IndexName"] = index
    if filter is not None:
        params["FilterExpression"] = filter.render(p)
    if projection:
        params["ProjectionExpression"] = ", ".join(p.name(a) for a in projection)
    return p.into(params)


def _conditioned(
    params: dict[str, Any], p: Placeholders, condition: Condition | None, return_old: bool
) -> dict[str, Any]:
    if condition is not None:
        params["ConditionExpression"] = condition.render(p)
    if return_old:
        params["ReturnValuesOnConditionCheckFailure"] = "ALL_OLD"
    return p.into(params)
