"""What a process remembers between requests so that a page takes one storage round.

Two memories, each a least-recently-used map bounded in bytes (``PlanMemory``):

- **Counters.** The counters of every scope (product, language) this process last read,
  refreshed by every read of them. A page that is planned from the counters (a rating or
  verified filter, a rating order) is planned from this snapshot while the authoritative
  counters are read in the same round as its queries; ``planner.plan_holds`` then checks
  the plan against the fresh counters, and a plan that skipped a rating which has gained
  comments is run again from them (a correction round).
- **Heads.** For one listing position (filter, order, direction and cursor, or the start),
  the ratings of the items that followed it in order when this process last read that
  page, with the counters it was read under. While the snapshot's counters are still those,
  ``planner.head_limits`` sizes each partition's query to what the page takes from it plus
  one, so the page is read whole in one round with no head-room.

Neither memory is ever trusted for what a page holds: the executor certifies every page
from what storage returned (a partition is finished only when storage says so), so a stale
memory costs at most a round, never a comment. Writes through another process are seen at
the next read of the counters, which every such page makes, and sooner from the table's
stream (``storage.live.feed``), which brings every stats item's new counters to every process.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace

from storage.base.bounded import BoundedCache
from storage.model.comments import Direction, ListingFilter, Order, RatingCounts
from storage.model.facet_counts import FacetListingCounts
from storage.model.stats import StatsScope

# Budget of the two memories together; about 4,000 scopes and 10,000 positions fit in it
# at the charges below.
DEFAULT_BYTES = 8 * 1024 * 1024
# Charges: a generous upper bound of what one entry keeps (the map's slot, the key's tuple
# and strings, the value's objects), measured with tracemalloc on CPython 3.11 and rounded
# up; text is charged at four bytes a character, the widest str CPython stores.
COUNTS_ENTRY_BYTES = 900
# One number of a facet counter item kept (its name, its int, the dict's slot).
FACET_NUMBER_BYTES = 200
HEAD_ENTRY_BYTES = 1200
CHAR_BYTES = 4
# Heads longer than the largest page plus one are never needed.
MAX_HEAD = 101

# Counters as the memories compare them: all ten numbers of a scope.
CountsVersion = tuple[tuple[int, ...], tuple[int, ...]]


def version_of(counts: RatingCounts) -> CountsVersion:
    return counts.by_rating, counts.verified


@dataclass(frozen=True, slots=True)
class HeadKey:
    """A listing position: the page that starts there is the same for every request."""

    listing: ListingFilter
    order: Order
    direction: Direction
    position: str | None


@dataclass(frozen=True, slots=True)
class Head:
    """The ratings of the items after a position, in the order read, as last read."""

    ratings: bytes  # one byte per item, the rating 1..5
    # The listing ended within them (storage said so for every partition).
    ended: bool
    counts: CountsVersion


@dataclass(slots=True)
class PlanMemory:
    """A process's snapshots of counters and page heads, within ``max_bytes`` together."""

    max_bytes: int = DEFAULT_BYTES
    _counts: BoundedCache[StatsScope, RatingCounts] = field(init=False)
    # A facet listing's counters (``storage.reads.facet_plans``), by the listing less its
    # ratings: what its pages are planned from while the fresh ones are read.
    _facets: BoundedCache[ListingFilter, FacetListingCounts] = field(init=False)
    _heads: BoundedCache[HeadKey, Head] = field(init=False)
    # Heads found but read under other counters: of no use, so lookups count them as misses.
    _stale_heads: int = field(init=False, default=0)

    def __post_init__(self) -> None:
        if self.max_bytes < 0:
            raise ValueError("a memory budget cannot be negative")
        # Counters are the smaller and the more shared: a third of the budget for them
        # (and a sixth of it for facet listings' counters).
        self._counts = BoundedCache(self.max_bytes // 3)
        self._facets = BoundedCache(self.max_bytes // 6)
        self._heads = BoundedCache(self.max_bytes - self.max_bytes // 3 - self.max_bytes // 6)

    @property
    def bytes(self) -> int:
        return self._counts.bytes + self._facets.bytes + self._heads.bytes

    def forget(self) -> None:
        """Drop everything (the stream lost changes: nothing kept can be known current)."""
        self._counts.clear()
        self._facets.clear()
        self._heads.clear()

    def counts(self, product_id: str, language: str | None) -> RatingCounts | None:
        return self._counts.get((product_id, language))

    def refresh_counts(self, counts: Sequence[RatingCounts]) -> None:
        """Newer counters of scopes this memory keeps (from the table's stream); scopes it
        does not keep are left out, so that changes of the whole table do not push out
        the scopes this process's pages use."""
        self.remember_counts([c for c in counts if (c.product_id, c.language) in self._counts])

    def remember_counts(self, counts: Sequence[RatingCounts]) -> None:
        for c in counts:
            charge = COUNTS_ENTRY_BYTES + CHAR_BYTES * (len(c.product_id) + len(c.language or ""))
            self._counts.put((c.product_id, c.language), c, charge)

    def facet_counts(self, listing: ListingFilter) -> FacetListingCounts | None:
        return self._facets.get(_counted(listing))

    def remember_facet_counts(self, listing: ListingFilter, counts: FacetListingCounts) -> None:
        numbers = sum(len(c.numbers) for c in (*counts.values.values(), counts.incentivized))
        text = len(listing.product_id) + len(listing.language or "")
        text += sum(len(f.token) for f in listing.facets)
        charge = COUNTS_ENTRY_BYTES * (2 + len(counts.values)) + FACET_NUMBER_BYTES * numbers
        self._facets.put(_counted(listing), counts, charge + CHAR_BYTES * text)

    def head(self, key: HeadKey, counts: RatingCounts) -> Head | None:
        """The head last read at ``key``, if it was read under these counters."""
        found = self._heads.get(key)
        if found is None:
            return None
        if found.counts != version_of(counts):
            self._stale_heads += 1
            return None
        return found

    def lookups(self) -> dict[str, tuple[int, int]]:
        """Hits and misses of each memory since it was made (for the server's metrics); a
        head read under other counters is a miss."""
        heads = self._heads
        return {
            "plan_counts": (
                self._counts.hits + self._facets.hits,
                self._counts.misses + self._facets.misses,
            ),
            "plan_heads": (heads.hits - self._stale_heads, heads.misses + self._stale_heads),
        }

    def remember_head(
        self, key: HeadKey, ratings: Sequence[int], ended: bool, counts: RatingCounts
    ) -> None:
        kept = bytes(ratings[:MAX_HEAD])
        head = Head(kept, ended and len(kept) == len(ratings), version_of(counts))
        text = len(key.listing.product_id) + len(key.listing.language or "")
        text += sum(len(f.token) for f in key.listing.facets)
        text += len(key.position or "") + len(head.ratings)
        self._heads.put(key, head, HEAD_ENTRY_BYTES + CHAR_BYTES * text)


def _counted(listing: ListingFilter) -> ListingFilter:
    """The listing as its counters are kept: every rating filter shares them."""
    return replace(listing, ratings=None)
