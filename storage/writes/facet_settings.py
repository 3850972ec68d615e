"""What facets are made of, kept in the table so that every process agrees: each scope's
attribute definitions (with the values retired from them), and the shop's one topic
taxonomy. Each is one item with a revision; a change is written on the condition that the
revision is the one its author read, so two moderators editing at once never lose an edit
silently: the second is refused (``SettingsChanged``) and reads again.

Definitions live in their scope's partition (PK = PRODUCT#<id> or GROUP#<id>, SK =
DEFINITIONS), read by every create and edit there; the taxonomy in its own (PK = TAXONOMY,
SK = CURRENT). Both are stored as the JSON their model modules define and parsed again
when read, so a stored item that breaks a rule is never used as if it held.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from storage.base.errors import ConditionFailed, StorageError
from storage.base.expressions import Attr, get_request, put_request
from storage.base.types import Item
from storage.engine.table import TableRef
from storage.model.attribute_changes import NOTHING_RETIRED, Retired, retire, retired_from_data
from storage.model.attributes import DefinitionSet, parse_definitions
from storage.model.facets import Scope
from storage.model.topics import Taxonomy

DEFINITIONS_SK = "DEFINITIONS"
TAXONOMY_KEY: Item = {"PK": {"S": "TAXONOMY"}, "SK": {"S": "CURRENT"}}
DOCUMENT_ATTR = "document"
REVISION_ATTR = "revision"


class SettingsChanged(StorageError):
    """The definitions or the taxonomy changed since the revision the change was made
    from: read them again and redo the change on what they are now."""


@dataclass(frozen=True, slots=True)
class StoredDefinitions:
    definitions: DefinitionSet = field(default_factory=DefinitionSet)
    retired: Retired = NOTHING_RETIRED
    revision: int = 0  # 0: never written


@dataclass(frozen=True, slots=True)
class StoredTaxonomy:
    taxonomy: Taxonomy | None = None  # None: the shop has none yet (nothing is tagged)
    revision: int = 0


def definitions_key(scope: Scope) -> Item:
    return {"PK": {"S": scope.pk}, "SK": {"S": DEFINITIONS_SK}}


async def read_definitions(
    table: TableRef, scope: Scope, *, consistent: bool = False
) -> StoredDefinitions:
    """The scope's definitions (none, revision 0, when it has never had any)."""
    item = await _read(table, definitions_key(scope), consistent)
    if item is None:
        return StoredDefinitions()
    document = json.loads(item[DOCUMENT_ATTR]["S"])
    return StoredDefinitions(
        parse_definitions(document["definitions"]),
        retired_from_data(document["retired"]),
        int(item[REVISION_ATTR]["N"]),
    )


async def save_definitions(
    table: TableRef, scope: Scope, definitions: DefinitionSet, *, revision: int
) -> StoredDefinitions:
    """Replace the scope's definitions with ``definitions``, made from ``revision``: the
    values they no longer offer are retired (answers keep counting under them). Raises
    SettingsChanged when the stored revision is another, and the model's InvalidFields
    when the change cannot be made (a kind changed, too many retired)."""
    stored = await read_definitions(table, scope, consistent=True)
    if stored.revision != revision:
        raise SettingsChanged(f"the definitions are at revision {stored.revision}, not {revision}")
    retired = retire(stored.definitions, definitions, stored.retired)
    document = {"definitions": definitions.to_data(), "retired": retired.to_data()}
    await _write(table, definitions_key(scope), document, revision)
    return StoredDefinitions(definitions, retired, revision + 1)


async def read_taxonomy(table: TableRef, *, consistent: bool = False) -> StoredTaxonomy:
    item = await _read(table, TAXONOMY_KEY, consistent)
    if item is None:
        return StoredTaxonomy()
    return StoredTaxonomy(
        Taxonomy.from_json(item[DOCUMENT_ATTR]["S"]), int(item[REVISION_ATTR]["N"])
    )


async def save_taxonomy(table: TableRef, taxonomy: Taxonomy, *, revision: int) -> StoredTaxonomy:
    """Replace the shop's taxonomy, made from ``revision`` (SettingsChanged otherwise)."""
    await _write(table, TAXONOMY_KEY, taxonomy.to_document(), revision)
    return StoredTaxonomy(taxonomy, revision + 1)


async def _read(table: TableRef, key: Item, consistent: bool) -> Item | None:
    response = await table.client.get_item(**get_request(table.name, key, consistent=consistent))
    item: Item | None = response.get("Item")
    return item


async def _write(table: TableRef, key: Item, document: object, revision: int) -> None:
    text = json.dumps(document, ensure_ascii=False, separators=(",", ":"), sort_keys=True)
    item: Item = {
        **key,
        DOCUMENT_ATTR: {"S": text},
        REVISION_ATTR: {"N": str(revision + 1)},
    }
    stored = Attr(REVISION_ATTR)
    condition = stored.not_exists() if revision == 0 else stored.eq(revision)
    try:
        await table.client.put_item(**put_request(table.name, item, condition))
    except ConditionFailed:
        raise SettingsChanged(f"changed since revision {revision}: read it again") from None
