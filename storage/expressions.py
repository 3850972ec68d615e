"""Update and condition expressions built from small calls, names and values always through
generated placeholders (``#n0``, ``:v0``), so no attribute name or value is ever spliced into
expression text.

    update = Update()
    count = update.name("count_5")
    update.add(count, 1)
    update.condition(f"{count} = {update.value({'N': '3'})}")
    request = update.request(table_name, key)
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from storage.types import AttributeValue, Item


@dataclass(slots=True)
class Placeholders:
    """Names and values of one request, each attribute name and value given once."""

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

    def value(self, value: AttributeValue) -> str:
        """A new ``:v`` placeholder for a value."""
        placeholder = f":v{len(self.values)}"
        self.values[placeholder] = value
        return placeholder

    def number(self, value: int) -> str:
        return self.value({"N": str(value)})

    def string(self, value: str) -> str:
        return self.value({"S": value})

    def into(self, params: dict[str, Any]) -> dict[str, Any]:
        """``params`` with the placeholders' maps added (only those in use)."""
        if self.names:
            params["ExpressionAttributeNames"] = dict(self.names)
        if self.values:
            params["ExpressionAttributeValues"] = dict(self.values)
        return params


@dataclass(slots=True)
class Conditions:
    """Conditions joined with AND."""

    terms: list[str] = field(default_factory=list)

    def add(self, term: str) -> None:
        self.terms.append(f"({term})")

    def expression(self) -> str | None:
        return " AND ".join(self.terms) if self.terms else None


@dataclass(slots=True)
class Update:
    """One UpdateItem (or the Update of a transaction): SET, ADD and REMOVE clauses and an
    optional condition."""

    p: Placeholders = field(default_factory=Placeholders)
    sets: list[str] = field(default_factory=list)
    adds: list[str] = field(default_factory=list)
    removes: list[str] = field(default_factory=list)
    conditions: Conditions = field(default_factory=Conditions)

    def name(self, attribute: str) -> str:
        return self.p.name(attribute)

    def value(self, value: AttributeValue) -> str:
        return self.p.value(value)

    def set(self, attribute: str, value: AttributeValue) -> None:
        self.sets.append(f"{self.name(attribute)} = {self.value(value)}")

    def add(self, attribute: str, delta: int) -> None:
        self.adds.append(f"{self.name(attribute)} {self.p.number(delta)}")

    def remove(self, attribute: str) -> None:
        self.removes.append(self.name(attribute))

    def condition(self, term: str) -> None:
        self.conditions.add(term)

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
        condition = self.conditions.expression()
        if condition is not None:
            params["ConditionExpression"] = condition
        if return_old:
            params["ReturnValuesOnConditionCheckFailure"] = "ALL_OLD"
        return self.p.into(params)
