"""A process's copy of the taxonomy: compiled once per revision, checked by the small head
at most once per interval (no read at all between checks), bounded in bytes."""

from __future__ import annotations

from storage.engine.table import TableRef
from storage.model.topics import Tagger
from storage.writes.facet_settings import read_taxonomy_head
from storage.writes.tagging import TaxonomyCache
from tests.helpers import own_table
from tests.storage.facet_samples import Recording, store_taxonomy, taxonomy


async def test_the_cache_reads_the_taxonomy_once_per_revision_and_checks_its_head(
    table: TableRef,
) -> None:
    base = await own_table(table, "taxcache")
    recording = Recording(base.client)
    own = TableRef(recording, base.name)
    now = [0.0]
    cache = TaxonomyCache(check_seconds=5, clock=lambda: now[0])
    assert await cache.tagger(own) is None  # no taxonomy: no head, and none behind it
    assert recording.count("get_item") == 2
    now[0] = 4.9
    assert await cache.tagger(own) is None
    assert recording.count("get_item") == 2  # within the interval: no read
    first = taxonomy()
    await store_taxonomy(own, first)
    head = await read_taxonomy_head(own, consistent=True)
    assert head is not None
    assert head.fingerprint == Tagger.for_taxonomy(first).fingerprint
    recording.calls.clear()
    now[0] = 5.0
    tagger = await cache.tagger(own)
    assert tagger is not None
    assert tagger.fingerprint == head.fingerprint
    assert (recording.count("get_item"), cache.compiled) == (2, 1)  # head, then taxonomy
    assert cache.bytes == tagger.footprint() > 10_000
    now[0] = 10.0
    assert await cache.tagger(own) is tagger  # the head only: same revision
    assert (recording.count("get_item"), cache.compiled) == (3, 1)
    second = taxonomy({"battery": ["battery"]})
    await store_taxonomy(own, second)
    now[0] = 15.0
    newer = await cache.tagger(own)
    assert newer is not None
    assert newer.fingerprint == Tagger.for_taxonomy(second).fingerprint != tagger.fingerprint
    assert cache.compiled == 2


async def test_a_taxonomy_over_the_cache_bound_is_used_but_not_kept(table: TableRef) -> None:
    own = await own_table(table, "taxbound")
    await store_taxonomy(own, taxonomy())
    small = TaxonomyCache(check_seconds=3600, max_bytes=4_096)
    for _ in range(3):
        assert await small.tagger(own) is not None
    assert small.bytes == 0
    assert (small.compiled, small.reads) == (3, 6)  # read and compiled for every use
