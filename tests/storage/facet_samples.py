"""Definitions and taxonomies the facet write tests share, and a client that keeps every
transaction it sends."""

from __future__ import annotations

from typing import Any

from storage.base.types import Response
from storage.engine.table import TableRef
from storage.engine.wrapping import ClientWrapper
from storage.model.attributes import parse_definitions
from storage.model.facets import Scope
from storage.model.topics import Taxonomy
from storage.writes.facet_settings import read_taxonomy, save_definitions, save_taxonomy

FIT = {
    "key": "fit",
    "kind": "CHOICE",
    "defaultLanguage": "en",
    "label": {"en": "How does it fit?"},
    "values": [
        {"value": "small", "label": {"en": "Small"}},
        {"value": "true-to-size", "label": {"en": "True to size"}},
        {"value": "large", "label": {"en": "Large"}},
    ],
}
WIDTH = {**FIT, "key": "width", "label": {"en": "How wide is it?"}}
RECOMMEND = {
    "key": "would-recommend",
    "kind": "BOOLEAN",
    "defaultLanguage": "en",
    "label": {"en": "Would you recommend it?"},
}
COMFORT = {"key": "comfort", "kind": "SCALE", "defaultLanguage": "en", "label": {"en": "Comfort"}}
QUALITY = {**COMFORT, "key": "quality", "label": {"en": "Quality"}}
DEFINITIONS = [FIT, WIDTH, RECOMMEND, COMFORT, QUALITY]

# Eight topics, each matched by its own English word (and battery in German too).
WORDS = {
    "battery": ["battery", "charge"],
    "screen": ["screen", "display"],
    "sound": ["sound", "speaker"],
    "price": ["price", "cheap"],
    "size": ["size", "small"],
    "weight": ["weight", "heavy"],
    "color": ["color", "colour"],
    "delivery": ["delivery", "shipping"],
}


def taxonomy(words: dict[str, list[str]] | None = None) -> Taxonomy:
    chosen = WORDS if words is None else words
    topics = []
    for key, entries in chosen.items():
        found: dict[str, list[str]] = {"en": entries}
        if key == "battery":
            found["de"] = ["Akku"]
        topics.append({"key": key, "labels": {"en": key.title()}, "words": found})
    return Taxonomy.from_document({"format": 1, "defaultLanguage": "en", "topics": topics})


async def store_taxonomy(table: TableRef, chosen: Taxonomy) -> None:
    stored = await read_taxonomy(table, consistent=True)
    await save_taxonomy(table, chosen, revision=stored.revision)


async def store_definitions(table: TableRef, product_id: str, data: list[Any]) -> None:
    await save_definitions(table, Scope.product(product_id), parse_definitions(data), revision=0)


class Recording(ClientWrapper):
    """Passes every call on and keeps each one's operation and arguments."""

    def __init__(self, inner: Any) -> None:
        super().__init__(inner)
        self.calls: list[tuple[str, dict[str, Any]]] = []

    async def _call(self, operation: str, kwargs: dict[str, Any]) -> Response:
        self.calls.append((operation, kwargs))
        return await super()._call(operation, kwargs)

    def count(self, operation: str) -> int:
        return sum(1 for name, _ in self.calls if name == operation)

    def transactions(self) -> list[list[dict[str, Any]]]:
        return [kw["TransactItems"] for name, kw in self.calls if name == "transact_write_items"]
