"""An in-memory DynamoDB that answers the calls our storage layer makes, for the HTTP floor.

Not a general emulator: it understands the key conditions, filters and batch calls that
``storage`` issues (equality on a partition key, ``<``/``>``/``BETWEEN`` on the index's sort
key, filters made of ``IN``, ``=``, ``contains`` and ``attribute_not_exists`` terms joined by
AND, reads of items together (TransactGetItems), and the transactions bulk loading
issues: puts on ``attribute_not_exists`` and unconditioned ``ADD`` updates; a single put
likewise), so the same
GraphQL requests can run with storage costing almost nothing.
"""

from __future__ import annotations

import bisect
import re
from typing import Any

from storage.base.errors import ConditionFailed, TransactionCancelled
from storage.base.types import Item, Response
from storage.engine.wrapping import ClientWrapper
from storage.model.indexes import Index, table_definition

# Each index's partition and sort key (the moderation queue sorts by its own key).
_INDEX_ATTRS = {index.value: (index.partition_attr, index.sort_attr) for index in Index}
# One term of a FilterExpression as storage renders it: "#n3 IN (:v4, :v5)" or "#n6 = :v7".
_IN_TERM = re.compile(r"\(?(#\w+) IN \(([^)]*)\)\)?")
_EQ_TERM = re.compile(r"\(?(#\w+) = (:\w+)\)?")
_NOT_EXISTS = re.compile(r"\(?attribute_not_exists\((#\w+)\)\)?")
_CONTAINS = re.compile(r"\(?contains\((#\w+), (:\w+)\)\)?")
_ADDS = re.compile(r"ADD (#\w+ :\w+(?:, #\w+ :\w+)*)")


class FakeDynamo(ClientWrapper):
    """Items keyed by (PK, SK), plus sorted views per GSI partition, rebuilt on writes."""

    def __init__(self) -> None:
        super().__init__(inner=self)  # every call is answered here
        self.items: dict[tuple[str, str], Item] = {}
        self._partitions: dict[tuple[str, str], list[tuple[str, Item]]] | None = None
        self._keys: dict[tuple[str, str], list[str]] = {}

    async def _call(self, operation: str, kwargs: dict[str, Any]) -> Response:
        handler = getattr(self, f"_{operation}", None)
        if handler is None:
            raise NotImplementedError(f"the fake does not support {operation}")
        result: Response = handler(**kwargs)
        return result

    def _key(self, key: Item) -> tuple[str, str]:
        return key["PK"]["S"], key["SK"]["S"]

    def _create_table(self, **kwargs: Any) -> Response:
        return {"TableDescription": {"TableName": kwargs["TableName"]}}

    def _describe_table(self, **kwargs: Any) -> Response:
        definition = table_definition(kwargs["TableName"])
        return {
            "Table": {
                "TableName": kwargs["TableName"],
                "TableStatus": "ACTIVE",
                "GlobalSecondaryIndexes": [
                    {"IndexName": g["IndexName"], "IndexStatus": "ACTIVE"}
                    for g in definition["GlobalSecondaryIndexes"]
                ],
            }
        }

    def _describe_time_to_live(self, **_: Any) -> Response:
        return {"TimeToLiveDescription": {"TimeToLiveStatus": "ENABLED"}}

    def _put_item(self, **request: Any) -> Response:
        """A put on ``attribute_not_exists`` or none (the table's layout item at creation)."""
        key = self._key(request["Item"])
        if not self._holds(request, key):
            raise ConditionFailed("a condition did not hold", self.items.get(key))
        self.items[key] = request["Item"]
        self._partitions = None
        return {}

    def _batch_write_item(self, RequestItems: dict[str, Any], **_: Any) -> Response:  # noqa: N803
        for requests in RequestItems.values():
            for request in requests:
                item = request["PutRequest"]["Item"]
                self.items[self._key(item)] = item
        self._partitions = None
        return {"UnprocessedItems": {}}

    def _transact_write_items(self, TransactItems: list[dict[str, Any]], **_: Any) -> Response:  # noqa: N803
        """All or nothing: every condition is checked before anything is written."""
        reasons = [{"Code": "None"}] * len(TransactItems)
        for n, action in enumerate(TransactItems):
            ((kind, request),) = action.items()
            key = self._key(request["Item"] if kind == "Put" else request["Key"])
            if not self._holds(request, key):
                reasons = [*reasons[:n], {"Code": "ConditionalCheckFailed"}, *reasons[n + 1 :]]
        if any(r["Code"] != "None" for r in reasons):
            raise TransactionCancelled("a condition failed", reasons)
        for action in TransactItems:
            ((kind, request),) = action.items()
            if kind == "Put":
                self.items[self._key(request["Item"])] = request["Item"]
            elif kind == "Update":
                self._add(request)
            else:
                raise NotImplementedError(f"the fake does not support a transaction's {kind}")
        self._partitions = None
        return {}

    def _holds(self, request: dict[str, Any], key: tuple[str, str]) -> bool:
        condition = request.get("ConditionExpression")
        if condition is None:
            return True
        absent = _NOT_EXISTS.fullmatch(condition)
        if absent is None:
            raise NotImplementedError(f"the fake does not understand {condition!r}")
        attribute = request["ExpressionAttributeNames"][absent.group(1)]
        return attribute not in self.items.get(key, {})

    def _add(self, request: dict[str, Any]) -> None:
        adds = _ADDS.fullmatch(request["UpdateExpression"])
        if adds is None:
            raise NotImplementedError(
                f"the fake does not understand {request['UpdateExpression']!r}"
            )
        key = self._key(request["Key"])
        item = dict(self.items.get(key, request["Key"]))
        for clause in adds.group(1).split(", "):
            name, value = clause.split(" ")
            attribute = request["ExpressionAttributeNames"][name]
            now = int(item.get(attribute, {"N": "0"})["N"])
            delta = int(request["ExpressionAttributeValues"][value]["N"])
            item[attribute] = {"N": str(now + delta)}
        self.items[key] = item

    def _get_item(self, Key: Item, **_: Any) -> Response:  # noqa: N803
        item = self.items.get(self._key(Key))
        return {"Item": item} if item else {}

    def _batch_get_item(self, RequestItems: dict[str, Any], **_: Any) -> Response:  # noqa: N803
        responses = {
            table: [i for k in spec["Keys"] if (i := self.items.get(self._key(k)))]
            for table, spec in RequestItems.items()
        }
        return {"Responses": responses, "UnprocessedKeys": {}}

    def _transact_get_items(self, TransactItems: list[dict[str, Any]], **_: Any) -> Response:  # noqa: N803
        found = [self.items.get(self._key(action["Get"]["Key"])) for action in TransactItems]
        return {"Responses": [{"Item": item} if item else {} for item in found]}

    def _index(self) -> dict[tuple[str, str], list[tuple[str, Item]]]:
        if self._partitions is None:
            partitions: dict[tuple[str, str], list[tuple[str, Item]]] = {}
            for item in self.items.values():
                for index, (attr, sort_attr) in _INDEX_ATTRS.items():
                    # Sparse, as in DynamoDB: an item without both keys is not in the index.
                    if attr in item and sort_attr in item:
                        partitions.setdefault((index, item[attr]["S"]), []).append(
                            (item[sort_attr]["S"], item)
                        )
            for entries in partitions.values():
                entries.sort(key=lambda e: e[0])
            self._partitions = partitions
            self._keys = {p: [k for k, _ in entries] for p, entries in partitions.items()}
        return self._partitions

    def _query(self, **kwargs: Any) -> Response:
        # Expressions as storage.base.expressions renders them: "(#n0 = :v0) AND (#n1 < :v1)".
        values = kwargs["ExpressionAttributeValues"]
        condition: str = kwargs["KeyConditionExpression"]
        partition = re.search(r"#\w+ = (:\w+)", condition)
        if partition is None:
            raise NotImplementedError(f"the fake does not understand {condition!r}")
        entries = self._index().get((kwargs["IndexName"], values[partition.group(1)]["S"]), [])
        keys = self._keys[(kwargs["IndexName"], values[partition.group(1)]["S"])] if entries else []
        low, high = 0, len(entries)
        if between := re.search(r"BETWEEN (:\w+) AND (:\w+)", condition):
            low = bisect.bisect_left(keys, values[between.group(1)]["S"])
            high = bisect.bisect_right(keys, values[between.group(2)]["S"])
        elif below := re.search(r"< (:\w+)", condition):
            high = bisect.bisect_left(keys, values[below.group(1)]["S"])
        elif above := re.search(r"> (:\w+)", condition):
            low = bisect.bisect_right(keys, values[above.group(1)]["S"])
        # Touch only the items the query reads: O(limit), as a real index would be.
        limit = kwargs.get("Limit", high - low)
        if kwargs.get("ScanIndexForward", True):
            scanned = entries[low : min(high, low + limit)]
        else:
            scanned = entries[max(low, high - limit) : high][::-1]
        found = [item for _, item in scanned]
        if "FilterExpression" in kwargs:
            names = kwargs["ExpressionAttributeNames"]
            for term in kwargs["FilterExpression"].split(" AND "):
                found = [i for i in found if _matches(term, i, names, values)]
        response: Response = {
            "Items": found,
            "Count": len(found),
            "ScannedCount": len(scanned),
            "ConsumedCapacity": {"CapacityUnits": 0.5},
        }
        if len(scanned) == limit and scanned:
            last = scanned[-1][1]
            sort_attr = _INDEX_ATTRS[kwargs["IndexName"]][1]
            response["LastEvaluatedKey"] = {k: last[k] for k in ("PK", "SK", sort_attr)}
        return response


def _matches(term: str, item: Item, names: dict[str, str], values: dict[str, Item]) -> bool:
    """Whether an item passes one ``IN`` or ``=`` term of a FilterExpression."""
    if listed := _IN_TERM.fullmatch(term):
        allowed = [values[v.strip()] for v in listed.group(2).split(",")]
        return item.get(names[listed.group(1)]) in allowed
    if equal := _EQ_TERM.fullmatch(term):
        return item.get(names[equal.group(1)]) == values[equal.group(2)]
    if holds := _CONTAINS.fullmatch(term):
        found = item.get(names[holds.group(1)], {})
        return values[holds.group(2)]["S"] in found.get("SS", [])
    if absent := _NOT_EXISTS.fullmatch(term):
        return names[absent.group(1)] not in item
    raise NotImplementedError(f"the fake does not understand the filter {term!r}")
