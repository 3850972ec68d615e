"""Which layout of the table this code writes and needs, which the table has, and whether
the two may work together: the protocol that lets old and new code share a table while a
layout changes, with no comment lost (docs/deployment.md, "Upgrading").

A *layout* is a version number of the stored shape: the indexes, the stream and TTL, and
the attributes each comment carries for them. Every change of it goes in three steps:

1. **expand**: ``migrate-table`` adds what the new layout reads (indexes, the stream),
   which code of the old layout does not notice. The table item records ``indexes``.
2. **deploy** code of the new layout, which writes the new shape as well as the old
   (a comment it writes carries every key either layout reads), while old processes may
   still be writing the old shape.
3. **backfill, then contract**: ``migrate-table`` raises ``writers`` (the fence: the oldest
   layout whose processes may still write), waits until no process of an older layout can
   write (each has seen the fence, or its lease ran out), gives the comments written
   before the shape changed their new keys, checks every comment's keys (and repairs
   them), and records ``data``: from then on every comment is in the new shape.

The one item ``LAYOUT_VERSION_KEY`` holds the three numbers and the lease. Every serving
process reads it at start and every ``lease / 4`` seconds, and writes a heartbeat item of
its own (``PROCESS_PK``) saying which layout it writes, which fence it has seen, and until
when its lease runs. A process writes only while its last good read is younger than the
lease and the fence does not exclude it (``storage.engine.layout_check``), so once the
fence is up and the longest lease has passed, no old-shape write can land. A process
whose code is behind the table (``writers`` above its layout), or that meets a table
behind it (``indexes`` below its layout, or no item: a table from before this protocol),
says so in readiness and its log.

A table without the item was made by a release that records no layout; its processes
write no heartbeat, so no one can see whether they are gone: ``migrate-table`` then does
the expand step only, unless told those processes are gone.

Pure: no I/O.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from storage.base.types import Item

LAYOUT_VERSION_KEY: Item = {"PK": {"S": "LAYOUT"}, "SK": {"S": "VERSION"}}
# The heartbeats' partition: one item per serving process, sort key its id.
PROCESS_PK = "LAYOUT#PROCESS"
INDEXES_ATTR = "indexes"
WRITERS_ATTR = "writers"
DATA_ATTR = "data"
LEASE_ATTR = "leaseSeconds"
# The item's own version, raised by every change: migrate-table's updates condition on it.
REVISION_ATTR = "revision"
# A heartbeat's attributes.
HEARTBEAT_LAYOUT_ATTR = "layout"
HEARTBEAT_FENCE_ATTR = "fenceSeen"
HEARTBEAT_UNTIL_ATTR = "until"  # epoch seconds: the process writes nothing after this
HEARTBEAT_NAME_ATTR = "process"  # host and pid, for people reading migrate-table's output
# Seconds one of the process's writes may take from being sent to landing (its attempts,
# timeouts and backoff): a write sent just before the lease ran out may land this much later.
HEARTBEAT_WINDOW_ATTR = "writeWindow"

# Seconds a process may go on writing after its last good read of the item. A process reads
# it every LEASE / 4 seconds, so three reads in a row may fail before it stops writing.
DEFAULT_LEASE_SECONDS = 60.0
# The leases an item may name: a lease of 0 would have every process read and write without
# pause, and one of days would let a process write that long without seeing a fence.
MIN_LEASE_SECONDS = 0.5
MAX_LEASE_SECONDS = 600.0


@dataclass(frozen=True, slots=True)
class LayoutStep:
    """One layout: what it added, and the backfill that gives old comments its keys."""

    version: int
    adds: str
    backfill: str | None = None


# Every layout so far, oldest first; the last is the one this code writes and needs.
LAYOUT_STEPS = (
    LayoutStep(1, "the four listing indexes"),
    LayoutStep(2, "byAuthor, the two verified listings and the moderation queue"),
    LayoutStep(
        3,
        "the six helpful twins (the most helpful order, sort key HSK) and the stream",
        backfill="helpful keys",
    ),
    LayoutStep(
        4,
        "the two facet indexes (facetByRating, facetByLangAndRating): every transition "
        "moves a comment's facet entries and counters, its group and its topic tags, which "
        "a process of an older layout would leave behind",
    ),
)
CODE_LAYOUT = LAYOUT_STEPS[-1].version


@dataclass(frozen=True, slots=True)
class TableLayout:
    """The table's layout item: ``indexes`` (expand done up to), ``writers`` (the fence),
    ``data`` (backfills done up to), the processes' lease, and the item's revision."""

    indexes: int
    writers: int
    data: int
    lease_seconds: float = DEFAULT_LEASE_SECONDS
    revision: int = 0

    @classmethod
    def of(cls, item: Item | None) -> TableLayout | None:
        """The layout an item records; None when there is no item. ValueError for an item
        that lacks a number or holds one out of range (edited by hand, say): unknown is
        never taken for "anyone may write"."""
        if not item:
            return None
        try:
            numbers = [int(item[a]["N"]) for a in (INDEXES_ATTR, WRITERS_ATTR, DATA_ATTR)]
            lease = float(item[LEASE_ATTR]["N"])
            revision = int(item[REVISION_ATTR]["N"])
        except (KeyError, TypeError, ValueError) as exc:
            raise ValueError(f"the table's layout item is malformed ({exc!r})") from None
        if min(numbers) < 0 or not MIN_LEASE_SECONDS <= lease <= MAX_LEASE_SECONDS:
            raise ValueError(
                f"the table's layout item is out of range: layouts {numbers}, lease {lease:g} s "
                f"({MIN_LEASE_SECONDS:g} to {MAX_LEASE_SECONDS:g} s)"
            )
        indexes, writers, data = numbers
        return cls(indexes, writers, data, lease, revision)

    @classmethod
    def new_table(cls, lease_seconds: float = DEFAULT_LEASE_SECONDS) -> TableLayout:
        """A table made whole by this code: nothing to expand, fence or fill."""
        return cls(CODE_LAYOUT, CODE_LAYOUT, CODE_LAYOUT, lease_seconds)

    def to_item(self) -> Item:
        return {
            **LAYOUT_VERSION_KEY,
            INDEXES_ATTR: {"N": str(self.indexes)},
            WRITERS_ATTR: {"N": str(self.writers)},
            DATA_ATTR: {"N": str(self.data)},
            LEASE_ATTR: {"N": f"{self.lease_seconds:g}"},
            REVISION_ATTR: {"N": str(self.revision)},
        }

    def describe(self) -> str:
        return (
            f"indexes of layout {self.indexes}, writers of layout {self.writers} or newer, "
            f"comments in the shape of layout {self.data}"
        )


class Fit(enum.Enum):
    """How this code and the table's layout go together."""

    READY = "ready"
    BACKFILL_PENDING = "backfill pending"  # serves; old comments lack the newest keys yet
    NO_LAYOUT = "no layout recorded"  # a table from before layout versions
    LAYOUT_LOST = "layout item gone"  # read before, missing now: writes nothing until back
    TABLE_BEHIND = "table behind the code"  # indexes missing: run migrate-table
    CODE_BEHIND = "code behind the table"  # fenced: this process writes nothing

    @property
    def ready(self) -> bool:
        return self in (Fit.READY, Fit.BACKFILL_PENDING)

    @property
    def may_write(self) -> bool:
        return self not in (Fit.CODE_BEHIND, Fit.LAYOUT_LOST)


def fit(
    table: TableLayout | None, code: int = CODE_LAYOUT, *, seen: TableLayout | None = None
) -> Fit:
    """How code of layout ``code`` fits a table whose item says ``table``; ``seen``: what
    this process read before (an item that vanished since may have held a fence)."""
    if table is None:
        return Fit.NO_LAYOUT if seen is None else Fit.LAYOUT_LOST
    if table.writers > code:
        return Fit.CODE_BEHIND
    if table.indexes < code:
        return Fit.TABLE_BEHIND
    if table.data < code:
        return Fit.BACKFILL_PENDING
    return Fit.READY


def advice(found: Fit, table: TableLayout | None, code: int = CODE_LAYOUT) -> str:
    """One line for readiness and the log: what is wrong, and what to do."""
    if found is Fit.NO_LAYOUT:
        return (
            "the table records no layout (made before layout versions): run "
            "`comments migrate-table` with this release"
        )
    if found is Fit.LAYOUT_LOST or table is None:
        return (
            "the table's layout item is gone since this process read it: `comments "
            "migrate-table` records it again (this process writes nothing meanwhile)"
        )
    if found is Fit.CODE_BEHIND:
        return (
            f"this code writes layout {code}, and the table admits writers of layout "
            f"{table.writers} or newer: deploy the newer release (this process writes nothing)"
        )
    if found is Fit.TABLE_BEHIND:
        return (
            f"this code needs layout {code} and the table has the indexes of layout "
            f"{table.indexes}: run `comments migrate-table` with this release"
        )
    if found is Fit.BACKFILL_PENDING:
        return (
            f"comments of layout {table.data} are being given the keys of layout {code}: "
            "`comments migrate-table` finishes it"
        )
    return f"layout {code}"
