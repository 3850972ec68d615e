"""Topics tagged when a comment is written, with the shop's stored taxonomy.

A create, and an edit that changes the title, the body or the language, tags the comment
with the taxonomy's tagger: its ``t:`` values become the tags, and it records the
fingerprint it was tagged with and why (``storage.model.tagging``).

Where the tagger comes from (``TaxonomySource``): a ``TaxonomyCache`` keeps it compiled per
process, keyed by the taxonomy's revision, and checks the taxonomy's head (a small item,
half a read unit) at most once every ``check_seconds``; between checks a write costs no
read at all. It holds at most ``max_bytes`` of compiled taxonomies (measured, not counted);
one larger is compiled for each check and not kept. A write may therefore be tagged with a
taxonomy replaced up to ``check_seconds`` ago, or, when its retries slow it down, up to
``TAGGER_AGE_MAX`` more (``FreshTagger`` takes the tagger again past that): its fingerprint
says so, and the re-tagging backfill (``storage.ops.retag``), which starts only once
``SETTLE_SECONDS`` have passed since the save, re-tags it like every comment of an older
fingerprint. Counts stay
exact meanwhile: a comment is counted under the topics it has, whichever taxonomy gave
them. The cache is made once per process (in the app's lifespan) and passed down; it is
not a module singleton.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Protocol, TypeVar

from storage.base.bounded import BoundedCache
from storage.base.errors import StorageError
from storage.engine.table import TableRef
from storage.model.comments import Comment, NewComment
from storage.model.facets import FacetKind, FacetValue
from storage.model.tagging import TagRecord, tagged_text
from storage.model.topics import Tagger
from storage.writes.facet_settings import read_taxonomy, read_taxonomy_head

# How often a process checks that its taxonomy is still the stored one, at most.
CHECK_SECONDS = 5.0
# Compiled taxonomies a process keeps: a full one (5,000 entries) is a few MB.
CACHE_MAX_BYTES = 32 * 1024 * 1024
# A write commits with a tagger taken at most this long before its last attempt began: a
# write slowed down by retries takes it again (``FreshTagger``).
TAGGER_AGE_MAX = 20.0
# The longest one call may take (``ClientSettings.longest_call_seconds``, 27 s by default):
# the last attempt's transaction, from its start to its commit.
CALL_SECONDS_MAX = 30.0
# How long after a taxonomy is saved every commit is tagged with it: a process learns of it
# within CHECK_SECONDS (and the head's replication, a second or so), and a write commits
# within TAGGER_AGE_MAX + CALL_SECONDS_MAX of taking its tagger. The re-tagging backfill
# waits this long before it scans, so that no write of an older one commits behind it.
SETTLE_SECONDS = 60.0


class TaxonomySource(Protocol):
    """Where writes get the tagger of the stored taxonomy (None: the shop has none)."""

    async def tagger(self, table: TableRef) -> Tagger | None: ...


@dataclass(slots=True)
class _Kept:
    revision: int
    tagger: Tagger | None
    checked_at: float


class TaxonomyCache:
    """The stored taxonomy's tagger, compiled once per revision and kept per table, bounded
    in bytes; the head is checked at most every ``check_seconds`` (0: on every use)."""

    def __init__(
        self,
        *,
        check_seconds: float = CHECK_SECONDS,
        max_bytes: int = CACHE_MAX_BYTES,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.check_seconds = check_seconds
        self._kept: BoundedCache[str, _Kept] = BoundedCache(max_bytes)
        self._clock = clock
        self.reads = 0  # storage calls made: heads checked and taxonomies read
        self.compiled = 0  # taxonomies compiled

    @property
    def bytes(self) -> int:
        return self._kept.bytes

    async def tagger(self, table: TableRef) -> Tagger | None:
        """The tagger of the taxonomy stored at most ``check_seconds`` ago."""
        now = self._clock()
        kept = self._kept.get(table.name)
        if kept is not None and now - kept.checked_at < self.check_seconds:
            return kept.tagger
        self.reads += 1
        head = await read_taxonomy_head(table)
        if kept is not None and head is not None and head.revision == kept.revision:
            kept.checked_at = now
            return kept.tagger
        self.reads += 1
        stored = await read_taxonomy(table, consistent=True)
        tagger = None if stored.taxonomy is None else Tagger.for_taxonomy(stored.taxonomy)
        self.compiled += tagger is not None
        fresh = _Kept(stored.revision, tagger, now)
        # A taxonomy saved before heads were has none: it is read whole at each check.
        self._kept.put(table.name, fresh, 256 if tagger is None else tagger.footprint())
        return tagger


class TaggerAged(StorageError):
    """A write's tagger was taken more than TAGGER_AGE_MAX ago; the write takes it again
    and decides again (handled inside, never raised to a caller)."""


class FreshTagger:
    """One write's tagger: taken from its source when first asked for, and again when a
    retry finds it older than ``TAGGER_AGE_MAX``, so a commit is never tagged with a
    taxonomy older than ``SETTLE_SECONDS`` allows for."""

    def __init__(
        self,
        table: TableRef,
        source: TaxonomySource,
        *,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._table = table
        self._source = source
        self._clock = clock
        self._taken: tuple[Tagger | None, float] | None = None

    async def get(self) -> Tagger | None:
        """The tagger, taken again if it is aged (or was never taken)."""
        if self._taken is None or self._aged(self._taken[1]):
            self._taken = (await self._source.tagger(self._table), self._clock())
        return self._taken[0]

    def current(self) -> Tagger | None:
        """The tagger taken, for a decision made now: ``TaggerAged`` if it is too old (or
        was never taken), for the write to ``get`` it again."""
        if self._taken is None or self._aged(self._taken[1]):
            raise TaggerAged("the write's tagger is aged: take it again")
        return self._taken[0]

    def _aged(self, at: float) -> bool:
        return self._clock() - at > TAGGER_AGE_MAX


class FreshTaxonomy:
    """The tagger of the taxonomy as stored now, read and compiled on every use: for
    commands and tests, where one write does not pay for a cache."""

    async def tagger(self, table: TableRef) -> Tagger | None:
        stored = await read_taxonomy(table, consistent=True)
        return None if stored.taxonomy is None else Tagger.for_taxonomy(stored.taxonomy)


C = TypeVar("C", Comment, NewComment)


def tag(tagger: Tagger | None, comment: C) -> C:
    """The comment with its topics and its tagging record from ``tagger`` (no taxonomy:
    no topics and no record)."""
    if tagger is None:
        return replace(comment, facets=_with_topics(comment.facets, ()), tagging=None)
    tagging = tagger.tag(tagged_text(comment.title, comment.body), comment.language)
    record = TagRecord.of(tagging, tagger.fingerprint, comment.title)
    return replace(comment, facets=_with_topics(comment.facets, tagging.topics), tagging=record)


def stale(tagger: Tagger | None, comment: Comment) -> bool:
    """Whether the comment was tagged otherwise than ``tagger`` tags."""
    fingerprint = None if tagger is None else tagger.fingerprint
    had = None if comment.tagging is None else comment.tagging.fingerprint
    if fingerprint is None:
        return had is not None or any(f.kind is FacetKind.TOPIC for f in comment.facets)
    return had != fingerprint


def _with_topics(facets: frozenset[FacetValue], topics: tuple[str, ...]) -> frozenset[FacetValue]:
    kept = {f for f in facets if f.kind is not FacetKind.TOPIC}
    return frozenset(kept | {FacetValue.topic(key) for key in topics})
