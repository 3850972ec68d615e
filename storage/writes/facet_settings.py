"""What facets are made of, kept in the table so that every process agrees: each scope's
attribute definitions (with the values retired from them), and the shop's one topic
taxonomy. Each is one item with a revision; a change is written on the condition that the
revision is the one its author read, so two moderators editing at once never lose an edit
silently: the second is refused (``SettingsChanged``) and reads again.

Definitions live in their scope's partition (PK = PRODUCT#<id> or GROUP#<id>, SK =
DEFINITIONS), read by every create and edit there; the taxonomy in its own (PK = TAXONOMY,
SK = CURRENT). Both are stored as the JSON their model modules define and parsed again
when read, so a stored item that breaks a rule is never used as if it held.

The taxonomy (up to 256 KiB) has a small *head* beside it (SK = HEAD), written in the same
transaction: its revision, its tagger's fingerprint and when it was saved. A process that
keeps the taxonomy compiled (``storage.writes.topic_source``) checks the head, half a read
unit, to learn whether its copy is still the stored one, and the re-tagging backfill
learns from it what to converge to and since when.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime

from storage.base.clock import utc_now
from storage.base.errors import ConditionFailed, StorageError, WriteConflict
from storage.base.expressions import Attr, get_request, put_request
from storage.base.types import Item
from storage.engine.table import TableRef
from storage.model.attribute_changes import NOTHING_RETIRED, Retired, retire, retired_from_data
from storage.model.attributes import DefinitionSet, parse_definitions
from storage.model.facets import Scope
from storage.model.topics import Tagger, Taxonomy
from storage.writes.transaction import CallBudget, Part, transact

DEFINITIONS_SK = "DEFINITIONS"
TAXONOMY_KEY: Item = {"PK": {"S": "TAXONOMY"}, "SK": {"S": "CURRENT"}}
TAXONOMY_HEAD_KEY: Item = {"PK": {"S": "TAXONOMY"}, "SK": {"S": "HEAD"}}
DOCUMENT_ATTR = "document"
REVISION_ATTR = "revision"
FINGERPRINT_ATTR = "fingerprint"
SAVED_AT_ATTR = "savedAt"  # epoch seconds


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


@dataclass(frozen=True, slots=True)
class TaxonomyHead:
    """What the taxonomy is, without it: its revision, its tagger's fingerprint (None: the
    shop has no taxonomy) and when it was saved (epoch seconds)."""

    revision: int = 0
    fingerprint: str | None = None
    saved_at: float = 0.0


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


async def read_taxonomy_head(table: TableRef, *, consistent: bool = False) -> TaxonomyHead | None:
    """The taxonomy's head; None when there is a taxonomy without one (saved before heads
    were: read the taxonomy itself) or none at all (``read_taxonomy`` tells which)."""
    item = await _read(table, TAXONOMY_HEAD_KEY, consistent)
    if item is None:
        return None
    fingerprint = item.get(FINGERPRINT_ATTR, {}).get("S")
    return TaxonomyHead(int(item[REVISION_ATTR]["N"]), fingerprint, float(item[SAVED_AT_ATTR]["N"]))


async def save_taxonomy(
    table: TableRef,
    taxonomy: Taxonomy,
    *,
    revision: int,
    clock: Callable[[], datetime] = utc_now,
) -> StoredTaxonomy:
    """Replace the shop's taxonomy, made from ``revision`` (SettingsChanged otherwise), and
    its head with it."""
    fingerprint = Tagger.for_taxonomy(taxonomy).fingerprint
    stored = Attr(REVISION_ATTR)
    condition = stored.not_exists() if revision == 0 else stored.eq(revision)
    document = _item(TAXONOMY_KEY, taxonomy.to_document(), revision)
    head: Item = {
        **TAXONOMY_HEAD_KEY,
        REVISION_ATTR: {"N": str(revision + 1)},
        FINGERPRINT_ATTR: {"S": fingerprint},
        SAVED_AT_ATTR: {"N": f"{clock().timestamp():.3f}"},
    }
    parts = [
        Part("taxonomy", {"Put": put_request(table.name, document, condition)}),
        Part("head", {"Put": put_request(table.name, head)}),
    ]
    cancel = await transact(table, parts, CallBudget(1))
    if cancel is not None and cancel.failed("taxonomy"):
        raise SettingsChanged(f"changed since revision {revision}: read it again")
    if cancel is not None:
        raise WriteConflict("storage kept rejecting the write; retry later")
    return StoredTaxonomy(taxonomy, revision + 1)


async def _read(table: TableRef, key: Item, consistent: bool) -> Item | None:
    response = await table.client.get_item(**get_request(table.name, key, consistent=consistent))
    item: Item | None = response.get("Item")
    return item


def _item(key: Item, document: object, revision: int) -> Item:
    text = json.dumps(document, ensure_ascii=False, separators=(",", ":"), sort_keys=True)
    return {**key, DOCUMENT_ATTR: {"S": text}, REVISION_ATTR: {"N": str(revision + 1)}}


async def _write(table: TableRef, key: Item, document: object, revision: int) -> None:
    item = _item(key, document, revision)
    stored = Attr(REVISION_ATTR)
    condition = stored.not_exists() if revision == 0 else stored.eq(revision)
    try:
        await table.client.put_item(**put_request(table.name, item, condition))
    except ConditionFailed:
        raise SettingsChanged(f"changed since revision {revision}: read it again") from None


async def settle_retired(
    table: TableRef, scope: Scope, pairs: tuple[tuple[str, str], ...], *, revision: int
) -> StoredDefinitions:
    """Take the retired values a completed remap moved every answer of (``pairs``) out of
    the scope's retired values, the definitions unchanged, from ``revision``
    (SettingsChanged otherwise: the remap checks again against what they are now)."""
    stored = await read_definitions(table, scope, consistent=True)
    if stored.revision != revision:
        raise SettingsChanged(f"the definitions are at revision {stored.revision}, not {revision}")
    retired = stored.retired.without(pairs)
    document = {"definitions": stored.definitions.to_data(), "retired": retired.to_data()}
    await _write(table, definitions_key(scope), document, revision)
    return StoredDefinitions(stored.definitions, retired, revision + 1)
