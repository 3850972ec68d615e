"""Definitions and the taxonomy kept in the table: read back as written, changed only from
the revision their author read, values no longer offered retired, not lost."""

from __future__ import annotations

import asyncio

import pytest

from storage.engine.table import TableRef
from storage.model.attributes import parse_definitions
from storage.model.facets import Scope
from storage.model.topics import Taxonomy
from storage.writes.facet_settings import (
    SettingsChanged,
    StoredDefinitions,
    read_definitions,
    read_taxonomy,
    save_definitions,
    save_taxonomy,
)
from tests.helpers import own_product_id

FIT = {
    "key": "fit",
    "kind": "CHOICE",
    "defaultLanguage": "en",
    "label": {"en": "How does it fit?", "de": "Wie passt es?"},
    "values": [
        {"value": "small", "label": {"en": "Small"}},
        {"value": "true-to-size", "label": {"en": "True to size"}},
        {"value": "large", "label": {"en": "Large"}},
    ],
}
RECOMMEND = {
    "key": "would-recommend",
    "kind": "BOOLEAN",
    "defaultLanguage": "en",
    "label": {"en": "Would you recommend it?"},
}


async def test_definitions_round_trip_and_change_only_from_the_revision_read(
    table: TableRef,
) -> None:
    scope = Scope.product(own_product_id())
    assert await read_definitions(table, scope) == StoredDefinitions()
    first = parse_definitions([FIT, RECOMMEND])
    saved = await save_definitions(table, scope, first, revision=0)
    assert saved.revision == 1
    assert await read_definitions(table, scope, consistent=True) == saved
    # Two moderators change what they both read: one wins, the other is told to read again.
    narrower = parse_definitions([{**FIT, "values": FIT["values"][:2]}])  # type: ignore[index]
    outcomes = await asyncio.gather(
        save_definitions(table, scope, narrower, revision=1),
        save_definitions(table, scope, first, revision=1),
        return_exceptions=True,
    )
    assert sorted(type(o).__name__ for o in outcomes) == ["SettingsChanged", "StoredDefinitions"]
    assert (await read_definitions(table, scope, consistent=True)).revision == 2
    # Whatever won: offered whole again, nothing is retired; narrowed, what it no longer
    # offers is retired ("large", and the recommendation's two values), kept, not lost.
    whole = await save_definitions(table, scope, first, revision=2)
    assert len(whole.retired) == 0
    stored = await save_definitions(table, scope, narrower, revision=3)
    assert await read_definitions(table, scope, consistent=True) == stored
    assert [(r.key, r.value) for r in stored.retired] == [
        ("fit", "large"),
        ("would-recommend", "no"),
        ("would-recommend", "yes"),
    ]
    large = stored.retired.get("fit", "large")
    assert large is not None
    assert large.label.get("en") == "Large"
    with pytest.raises(SettingsChanged):
        await save_definitions(table, scope, first, revision=1)


async def test_the_taxonomy_round_trips_and_changes_only_from_the_revision_read(
    table: TableRef,
) -> None:
    # The shop's one taxonomy item: this test is the only one that writes it.
    document = {
        "format": 1,
        "defaultLanguage": "en",
        "topics": [
            {
                "key": "battery-life",
                "labels": {"en": "Battery life", "de": "Akkulaufzeit"},
                "words": {"en": ["battery", "battery life"], "de": ["Akku"]},
            }
        ],
    }
    taxonomy = Taxonomy.from_document(document)
    before = await read_taxonomy(table, consistent=True)
    saved = await save_taxonomy(table, taxonomy, revision=before.revision)
    assert await read_taxonomy(table, consistent=True) == saved
    with pytest.raises(SettingsChanged):
        await save_taxonomy(table, taxonomy, revision=before.revision)
