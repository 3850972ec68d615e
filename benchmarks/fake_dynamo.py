"""An in-memory DynamoDB that answers the calls our storage layer makes, for the HTTP floor.

Not a general emulator: it understands the key conditions, filters and batch calls that
``storage`` issues (equality on a partition key, ``<``/``>``/``BETWEEN`` on GSISK, a rating
``IN`` filter), so the same GraphQL requests can run with storage costing almost nothing.
"""

from __future__ import annotations

import bisect
import re
from typing import Any

from storage.indexes import SORT_KEY, Index, table_definition
from storage.types import Item, Response
from storage.wrapping import ClientWrapper

_INDEX_ATTRS = {index.value: index.partition_attr for index in Index}


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

    def _batch_write_item(self, RequestItems: dict[str, Any], **_: Any) -> Response:  # noqa: N803
        for requests in RequestItems.values():
            for request in requests:
                item = request["PutRequest"]["Item"]
                self.items[self._key(item)] = item
        self._partitions = None
        return {"UnprocessedItems": {}}

    def _get_item(self, Key: Item, **_: Any) -> Response:  # noqa: N803
        item = self.items.get(self._key(Key))
        return {"Item": item} if item else {}

    def _batch_get_item(self, RequestItems: dict[str, Any], **_: Any) -> Response:  # noqa: N803
        responses = {
            table: [i for k in spec["Keys"] if (i := self.items.get(self._key(k)))]
            for table, spec in RequestItems.items()
        }
        return {"Responses": responses, "UnprocessedKeys": {}}

    def _index(self) -> dict[tuple[str, str], list[tuple[str, Item]]]:
        if self._partitions is None:
            partitions: dict[tuple[str, str], list[tuple[str, Item]]] = {}
            for item in self.items.values():
                if SORT_KEY not in item:
                    continue
                for index, attr in _INDEX_ATTRS.items():
                    if attr in item:
                        partitions.setdefault((index, item[attr]["S"]), []).append(
                            (item[SORT_KEY]["S"], item)
                        )
            for entries in partitions.values():
                entries.sort(key=lambda e: e[0])
            self._partitions = partitions
            self._keys = {p: [k for k, _ in entries] for p, entries in partitions.items()}
        return self._partitions

    def _query(self, **kwargs: Any) -> Response:
        # Expressions as storage.expressions renders them: "(#n0 = :v0) AND (#n1 < :v1)".
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
            listed = re.search(r"IN \(([^)]*)\)", kwargs["FilterExpression"])
            if listed is None:
                raise NotImplementedError("the fake understands rating IN (...) filters only")
            allowed = {name.strip() for name in listed.group(1).split(",")}
            ratings = {values[name]["N"] for name in allowed}
            found = [i for i in found if i["rating"]["N"] in ratings]
        response: Response = {
            "Items": found,
            "Count": len(found),
            "ScannedCount": len(scanned),
            "ConsumedCapacity": {"CapacityUnits": 0.5},
        }
        if len(scanned) == limit and scanned:
            last = scanned[-1][1]
            response["LastEvaluatedKey"] = {k: last[k] for k in ("PK", "SK", SORT_KEY)}
        return response
