"""Parser and validation caches bounded in bytes, keyed by a hash of the document.

Strawberry's caches are LRUs of 512 entries keyed by the full text: a tiny query padded
with a unique megabyte of comment is kept whole (text, tokens, AST) until 512 newer ones
push it out, so anonymous traffic can pin about a gigabyte per process. Here:

- the key is the SHA-256 of the text, so a key is 32 bytes whatever the document;
- documents longer than ``max_document_chars`` are not cached at all (legitimate documents
  are small: the token limit keeps them to a few kilobytes without padding);
- each parsed document is charged an upper bound of the memory it keeps (tokens, AST, text:
  ``document_charge``), and the least recently used entries go once the charges add up to
  more than ``max_bytes``;
- validation remembers only which documents passed: a document with errors is validated
  again, so no error (which holds AST nodes and, through them, the text) is ever kept.

Every document is parsed here, cached or not, and its tokens unlinked backwards: graphql-core
links them both ways, a reference cycle that only the cyclic collector frees, and a padded
document's comment (a copy of it, in its token) would otherwise wait for a full collection;
hundreds of megabytes of them piled up between two under load.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from graphql import DocumentNode, Token, parse
from strawberry.extensions import SchemaExtension

from storage.base.bounded import BoundedCache

# Charges, from tracemalloc measurements of graphql-core 3.3 documents: a token with its
# share of the AST takes 150-550 bytes, the text up to 4 bytes a character (and a comment's
# text is kept twice: in the source and in its token), an entry about 2 KiB besides.
ENTRY_BYTES = 4096
TOKEN_BYTES = 600
CHAR_BYTES = 8
# A passed-validation entry: its key (a 32-byte digest and the rules) and dict slot.
VALIDATED_BYTES = 512


def digest(text: str) -> bytes:
    # surrogatepass: JSON may carry lone surrogates, which strict UTF-8 cannot encode.
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).digest()


def unlink_tokens(document: DocumentNode) -> None:
    """Drop the tokens' back references, so reference counting frees them with the
    document (nothing after the parser walks tokens backwards)."""
    token: Token | None = None if document.loc is None else document.loc.start_token
    while token is not None:
        token.prev = None
        token = token.next


def count_tokens(document: DocumentNode) -> int:
    """Tokens (comments included) the document's location keeps, 1 without locations."""
    if document.loc is None:
        return 1
    count = 0
    token: Token | None = document.loc.start_token
    while token is not None:
        count += 1
        token = token.next
    return count


def document_charge(text: str, document: DocumentNode) -> int:
    """An upper bound of the bytes a parsed document keeps alive."""
    return ENTRY_BYTES + TOKEN_BYTES * count_tokens(document) + CHAR_BYTES * len(text)


# Documents up to this length are cached once parsed; longer ones are parsed each time.
MAX_CACHED_DOCUMENT_CHARS = 16 * 1024


@dataclass
class DocumentCaches:
    """The parser and validation caches of one schema, and the extensions that use them."""

    max_bytes: int = 32 * 1024 * 1024
    max_validated_bytes: int = 1024 * 1024
    max_document_chars: int = MAX_CACHED_DOCUMENT_CHARS

    def __post_init__(self) -> None:
        self.documents: BoundedCache[tuple[bytes, int | None], DocumentNode] = BoundedCache(
            self.max_bytes
        )
        self.validated: BoundedCache[tuple[bytes, tuple[object, ...]], bool] = BoundedCache(
            self.max_validated_bytes
        )

    @classmethod
    def off(cls) -> DocumentCaches:
        """No caching; documents are still parsed here, so their tokens are unlinked."""
        return cls(max_bytes=0, max_validated_bytes=0, max_document_chars=-1)

    def cacheable(self, text: str | None) -> bool:
        return text is not None and len(text) <= self.max_document_chars

    def extensions(self) -> list[Callable[[], SchemaExtension]]:
        caches = self

        class ParserCache(SchemaExtension):
            def on_parse(self) -> Iterator[None]:
                context = self.execution_context
                text = context.query
                if text is not None:
                    options = context.parse_options
                    key = None
                    document = None
                    if caches.cacheable(text):
                        key = (digest(text), options.get("max_tokens"))
                        document = caches.documents.get(key)
                    if document is None:
                        # A syntax error propagates, as Strawberry's own cache lets it;
                        # the request is answered with it and nothing is kept.
                        document = parse(text, **options)
                        unlink_tokens(document)
                        if key is not None:
                            charge = document_charge(text, document)
                            caches.documents.put(key, document, charge)
                    context.graphql_document = document
                yield

        class ValidationCache(SchemaExtension):
            def on_validate(self) -> Iterator[None]:
                context = self.execution_context
                text = context.query
                key = None
                if text is not None and caches.cacheable(text):
                    key = (digest(text), tuple(context.validation_rules))
                    if caches.validated.get(key):
                        context.pre_execution_errors = []  # Strawberry skips validation
                yield
                if key is not None and context.pre_execution_errors == []:
                    caches.validated.put(key, True, VALIDATED_BYTES)

        return [ParserCache, ValidationCache]
