"""Parser and validation caches: bounded in bytes, keyed by hash, large documents skipped."""

from __future__ import annotations

import gc
import weakref

from graphql import DocumentNode, Token, parse

from schema import build_schema
from schema.caches import (
    VALIDATED_BYTES,
    DocumentCaches,
    count_tokens,
    document_charge,
)
from schema.garbage import LARGE_REQUEST, LargeRequestCollector, approximate_size
from storage.base.bounded import BoundedCache


def padded(n: int, size: int) -> str:
    """A tiny valid query made unique by a comment of ``size`` characters."""
    return f"{{ __typename }} # {n:08d} {'x' * size}\n"


def test_the_cache_is_bounded_by_the_bytes_charged() -> None:
    cache: BoundedCache[str, int] = BoundedCache(1000)
    cache.put("a", 1, 400)
    cache.put("b", 2, 400)
    assert cache.get("a") == 1  # a is now the most recently used
    cache.put("c", 3, 400)
    assert (cache.get("b"), cache.get("a"), cache.get("c")) == (None, 1, 3)
    assert (len(cache), cache.bytes) == (2, 800)
    cache.put("a", 4, 100)  # a new charge replaces the old one
    assert (cache.get("a"), cache.bytes) == (4, 500)
    cache.put("huge", 5, 1001)  # more than the whole cache: not kept, nothing evicted
    assert (cache.get("huge"), len(cache), cache.bytes) == (None, 2, 500)


def test_a_documents_charge_covers_its_tokens_and_text() -> None:
    text = '{ product(productId: "p") { stats { total } } } # note'
    document = parse(text)
    assert count_tokens(document) == 17  # 15 punctuators and names, the comment, <EOF>
    assert document_charge(text, document) > 600 * 17


async def test_distinct_padded_documents_stay_within_the_byte_bound() -> None:
    caches = DocumentCaches(max_bytes=1024 * 1024, max_validated_bytes=16 * 1024)
    schema = build_schema(caches=caches)
    charges = []
    for n in range(200):
        text = padded(n, 8000)
        result = await schema.execute(text)
        assert result.data == {"__typename": "Query"}
        charges.append(document_charge(text, parse(text)))
        assert caches.documents.bytes <= caches.max_bytes
        assert caches.validated.bytes <= caches.max_validated_bytes
    # Full, and holding only the newest documents that fit.
    assert caches.documents.bytes > caches.max_bytes - max(charges)
    kept = len(caches.documents)
    assert kept < 200
    assert caches.documents.bytes == sum(charges[-kept:])
    assert len(caches.validated) == caches.max_validated_bytes // VALIDATED_BYTES
    # A document larger than max_document_chars is parsed and validated, never kept.
    before = (caches.documents.bytes, len(caches.documents), len(caches.validated))
    result = await schema.execute(padded(999, caches.max_document_chars))
    assert result.data == {"__typename": "Query"}
    assert (caches.documents.bytes, len(caches.documents), len(caches.validated)) == before


async def test_repeated_documents_are_served_from_the_cache() -> None:
    caches = DocumentCaches()
    schema = build_schema(caches=caches)
    text = '{ product(productId: "p") { productId } }'
    first = await schema.execute(text)
    charge = caches.documents.bytes
    second = await schema.execute(text)
    assert first.data == second.data == {"product": {"productId": "p"}}
    assert (len(caches.documents), caches.documents.bytes, len(caches.validated)) == (1, charge, 1)
    # Invalid documents are validated each time: errors (which hold the AST) are not kept.
    bad = await schema.execute('{ product(productId: "p") { nope } }')
    assert bad.errors
    assert len(caches.validated) == 1


async def test_distinct_padded_documents_leave_no_documents_behind() -> None:
    # The shape through the default schema: 150 unique 20 KB documents used to stay
    # cached (text, tokens and AST, about 40 KB each). Count the parsed documents still
    # alive afterwards, and the text they hold.
    schema = build_schema()
    marker = "# 0"
    for n in range(150):
        result = await schema.execute(padded(n, 20_000))
        assert result.data == {"__typename": "Query"}
    gc.collect()
    alive = [
        o
        for o in gc.get_objects()
        if isinstance(o, DocumentNode) and o.loc is not None and marker in o.loc.source.body
    ]
    assert sum(len(d.loc.source.body) for d in alive if d.loc is not None) < 100_000


async def test_the_schema_unlinks_the_tokens_of_what_it_parses() -> None:
    # graphql-core links tokens both ways; a padded comment's copy in its token would wait
    # for the cyclic collector.
    caches = DocumentCaches()
    schema = build_schema(caches=caches)
    text = '{ product(productId: "p") { productId } } # a comment'
    await schema.execute(text)
    (document,) = caches.documents.values()
    assert document.loc is not None
    token: Token | None = document.loc.start_token
    while token is not None:
        assert token.prev is None
        token = token.next


def test_large_requests_are_collected_by_the_byte() -> None:
    class Cycle:
        def __init__(self) -> None:
            self.me = self

    freed: list[bool] = []
    collector = LargeRequestCollector(max_bytes=1_000_000)
    gc.disable()  # only the collector's own collection may free the cycle
    try:
        cycle = Cycle()
        weakref.finalize(cycle, freed.append, True)
        del cycle
        collector.note(LARGE_REQUEST - 1)  # small requests are not counted
        assert collector.pending == 0
        for _ in range(3):
            collector.note(300_000)
        assert (collector.collections, freed) == (0, [])
        collector.note(300_000)
        assert (collector.collections, collector.pending, freed) == (1, 0, [True])
    finally:
        gc.enable()


def test_request_sizes() -> None:
    assert approximate_size({"p": "x" * 1000, "n": 5}) >= 1000
    assert approximate_size([1, 2, 3, 4, 5] * 100_000) >= 8 * 500_000
