"""Persisted queries: Apollo's automatic persisted queries (APQ) and trusted documents.

APQ (``extensions.persistedQuery = {version: 1, sha256Hash}``, over POST or GET): a hash
alone runs the document registered under it, or is answered ``PersistedQueryNotFound``
(code PERSISTED_QUERY_NOT_FOUND, status 200, as Apollo's link expects before it sends the
document); a hash with its document registers the document once it has run without a
request error. A hash that is not the SHA-256 of the document is refused. The store keeps
the most recently used documents within a budget of bytes (storage.base.bounded.BoundedCache).

Trusted documents (a manifest as graphql-codegen's client preset writes it with
``persistedDocuments``: a JSON object from SHA-256 hash to document, the hash in hex,
prefixed ``sha256:`` as the preset writes it since it follows GraphQL over HTTP's
persisted-documents appendix, or bare): only the documents of the manifest run, sent by
hash (the bare hex, as Apollo's persisted-query link sends it) or in full; nothing is
registered.
"""

from __future__ import annotations

import hashlib
import re
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson
from strawberry.http import GraphQLRequestData

from schema.caches import MAX_CACHED_DOCUMENT_CHARS
from server.http.transport import Refused
from storage.base.bounded import BoundedCache

_SHA256 = re.compile(r"[0-9a-f]{64}")
# How the GraphQL-over-HTTP persisted-documents appendix (and so graphql-codegen's client
# preset) writes a SHA-256 document identifier: "sha256:<hex>".
_SHA256_PREFIX = "sha256:"
# What a stored document costs besides its text: the key, the entry, the str objects.
ENTRY_BYTES = 256


class PersistedQueryMiss(Refused):
    """A hash the server cannot run now, answered so that Apollo's link sends the document
    (not found) or stops sending hashes (not supported): a 200 with the error."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(200, message, code=code)


def sha256_hex(document: str) -> str:
    return hashlib.sha256(document.encode()).hexdigest()


def load_manifest(path: Path) -> dict[str, str]:
    """The trusted documents of a manifest (hash to document); ValueError when the file is
    not such an object or a hash is not the SHA-256 of its document."""
    try:
        loaded: Any = orjson.loads(path.read_bytes())
    except (OSError, orjson.JSONDecodeError) as exc:
        raise ValueError(f"TRUSTED_DOCUMENTS: cannot read {path} as JSON") from exc
    if not isinstance(loaded, dict):
        raise ValueError("TRUSTED_DOCUMENTS: the manifest must map hashes to documents")
    trusted: dict[str, str] = {}
    for key, document in loaded.items():
        hex_hash = key.removeprefix(_SHA256_PREFIX)
        if not isinstance(document, str) or sha256_hex(document) != hex_hash:
            raise ValueError(
                f"TRUSTED_DOCUMENTS: {str(key)[:80]!r} is not the SHA-256 of its document"
            )
        trusted[hex_hash] = document
    return trusted


@dataclass
class PersistedQueries:
    """The persisted-query rules of one server: APQ with a store of ``max_bytes`` (0: APQ
    off), or only the ``trusted`` documents when a manifest is given."""

    max_bytes: int
    trusted: Mapping[str, str] | None = None
    # Documents longer than this are run but not stored: a stored document is parsed again
    # on every GET by its hash unless the parse cache holds it, and the parse cache keeps
    # only documents up to this size (schema.caches), so a stored 1 MB document would let a
    # 170-byte GET cost a 1 MB parse, over and over.
    max_document_chars: int = MAX_CACHED_DOCUMENT_CHARS
    store: BoundedCache[str, str] = field(init=False)
    # Requests by hash alone whose document was found (hits) or not (misses), and
    # documents registered (for the server's metrics).
    hits: int = field(init=False, default=0)
    misses: int = field(init=False, default=0)
    registered: int = field(init=False, default=0)

    def __post_init__(self) -> None:
        self.store = BoundedCache(self.max_bytes)

    def resolve(self, data: GraphQLRequestData) -> str | None:
        """Fill in the request's document from its hash; the hash to register the document
        under once it has run, or None. Raises Refused (or PersistedQueryMiss)."""
        requested = _requested_hash(data.extensions)
        if self.trusted is not None:
            self._trusted(data, requested)
            return None
        if requested is None:
            return None
        if self.max_bytes == 0:
            raise PersistedQueryMiss("PERSISTED_QUERY_NOT_SUPPORTED", "PersistedQueryNotSupported")
        if data.query is None:
            stored = self.store.get(requested)
            if stored is None:
                self.misses += 1
                raise PersistedQueryMiss("PERSISTED_QUERY_NOT_FOUND", "PersistedQueryNotFound")
            self.hits += 1
            data.query = stored
            return None
        if sha256_hex(data.query) != requested:
            raise Refused(400, "The persisted query's sha256Hash is not the hash of the query.")
        if len(data.query) > self.max_document_chars:
            return None  # run, never stored: its hash stays unknown
        return None if self.store.get(requested) is not None else requested

    def register(self, sha256_hash: str, document: str) -> None:
        # What the str really holds in memory (1, 2 or 4 bytes a character), twice over for
        # the key and the store's bookkeeping.
        self.registered += 1
        self.store.put(sha256_hash, document, ENTRY_BYTES + 2 * sys.getsizeof(document))

    def _trusted(self, data: GraphQLRequestData, requested: str | None) -> None:
        assert self.trusted is not None
        if requested is not None:
            document = self.trusted.get(requested)
            if document is None and data.query is not None:
                # Apollo's link sends the document after a miss, to register it; here
                # nothing is registered, so say why instead of "not found" a second time.
                raise Refused(403, _ONLY_REGISTERED, code="FORBIDDEN")
            if document is None:
                self.misses += 1
                raise PersistedQueryMiss("PERSISTED_QUERY_NOT_FOUND", "PersistedQueryNotFound")
            if data.query is None:
                self.hits += 1
            if data.query is not None and data.query != document:
                raise Refused(400, "The persisted query's sha256Hash is not the hash of the query.")
            data.query = document
            return
        if data.query is not None and sha256_hex(data.query) not in self.trusted:
            raise Refused(403, _ONLY_REGISTERED, code="FORBIDDEN")


_ONLY_REGISTERED = "Only registered operations run on this server."


def _requested_hash(extensions: Mapping[str, Any] | None) -> str | None:
    """The sha256Hash of ``extensions.persistedQuery``, checked; None without one."""
    if not extensions or extensions.get("persistedQuery") is None:
        return None
    persisted = extensions["persistedQuery"]
    if not isinstance(persisted, dict):
        raise Refused(400, "extensions.persistedQuery must be an object.")
    version = persisted.get("version")
    if isinstance(version, bool) or version != 1 or not isinstance(version, int):
        raise Refused(400, "Unsupported persisted query version: only version 1 is.")
    requested = persisted.get("sha256Hash")
    if not isinstance(requested, str) or not _SHA256.fullmatch(requested):
        raise Refused(400, "extensions.persistedQuery.sha256Hash must be a SHA-256 in hex.")
    return requested
