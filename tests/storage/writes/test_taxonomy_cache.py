"""A process's copy of the taxonomy: compiled once per revision, checked by the small head
at most once per interval (no read at all between checks), bounded in bytes; and a write's
tagger, taken again when its retries made it old."""

from __future__ import annotations

import pytest

from storage.engine.client import ClientSettings
from storage.engine.table import TableRef
from storage.model.topics import Tagger
from storage.writes.facet_settings import read_taxonomy_head
from storage.writes.tagging import (
    CALL_SECONDS_MAX,
    CHECK_SECONDS,
    SETTLE_SECONDS,
    TAGGER_AGE_MAX,
    FreshTagger,
    TaggerAged,
    TaxonomyCache,
)
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


class _Counting:
    """A taxonomy source that counts how often it is asked."""

    def __init__(self, tagger: Tagger) -> None:
        self.asked = 0
        self._tagger = tagger

    async def tagger(self, table: TableRef) -> Tagger | None:
        self.asked += 1
        return self._tagger


async def test_a_slow_write_takes_its_tagger_again_before_it_commits(table: TableRef) -> None:
    source = _Counting(Tagger.for_taxonomy(taxonomy()))
    now = [0.0]
    tags = FreshTagger(table, source, clock=lambda: now[0])
    with pytest.raises(TaggerAged):
        tags.current()  # never taken
    first = await tags.get()
    now[0] = TAGGER_AGE_MAX
    assert tags.current() is first
    assert await tags.get() is first
    assert source.asked == 1
    now[0] = TAGGER_AGE_MAX + 0.1
    with pytest.raises(TaggerAged):
        tags.current()
    await tags.get()
    assert source.asked == 2
    # What the backfill waits for covers a check, an aged tagger and the last call.
    longest = ClientSettings().longest_call_seconds
    assert longest <= CALL_SECONDS_MAX
    assert CHECK_SECONDS + TAGGER_AGE_MAX + CALL_SECONDS_MAX <= SETTLE_SECONDS
