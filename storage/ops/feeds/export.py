"""Export the reviews as Google's product review feed: a parallel scan, resumable, written
atomically, in memory that does not grow with the table.

What goes in. A full feed (no ``since``) holds every published comment. Google replaces
what it holds with each full feed: a review left out of the next one (rejected, deleted,
back in the moderation queue) is deleted there. An incremental feed (``since``) holds what
changed in the window from ``since`` up to the moment the first run for these arguments
began (``cutoff``, which the next incremental run takes as its ``since``): comments
created, edited, moderated or sent back to the queue in it (their ``createdAt``,
``editedAt``, ``decidedAt`` or ``submittedAt`` falls in it), and comments imported in it
(their import record's ``importedAt``: an imported review keeps its source's creation
time). A changed comment that is published is sent as it is; one that is no longer
published (rejected, or back in the queue after being published or decided) is sent with
``<is_spam>true</is_spam>``, the schema's way to take a review down, since the product
review schema has no deletion list. A new comment still waiting for its first decision
is not sent. A deleted comment has no item left to find: it leaves Google with the next
full feed (Google asks for one at least monthly). Every timestamp after the cutoff is a
change for the next window, so no change is lost between runs, and a comment is sent
once per feed: by its own item when one of its own times falls in the window, else by its
import record (fetched with BatchGetItem, 100 keys a call) when none is at or after
``since``; with a time after the cutoff, the next feed sends it.

Cost. Either kind reads the whole table once (a Scan with a filter reads every item and
returns the matching ones; there is no index by change time), at eventually consistent
rates: half a read unit per 4 KB. ``segments`` scans run at once (DynamoDB's parallel
scan), each ``page_items`` items a call.

Resuming. Each segment writes its reviews to a part file beside the output and, after
every page, records in the checkpoint file (JSON, replaced atomically) its scan position
(``LastEvaluatedKey``), the part's length in bytes and its counts. A run with the same
arguments finds the checkpoint, truncates each part to its recorded length and goes on
from the recorded position, so the feed it ends with is byte for byte the one an
uninterrupted run would have written from the same table. A checkpoint of other
arguments is discarded and the export starts over. When every segment is done, the head,
the parts in segment order and the tail are copied into a temporary file beside the
output, which is synced and renamed over it: the output path holds a whole feed or what
it held before, never half of one. Then the parts and the checkpoint are removed.

Size. Google fetches no file over 100 MB, about 75,000 reviews. A feed larger than
``max_file_bytes`` is written as numbered files beside the output instead (``feed-1.xml``,
``feed-2.xml``...), each a whole feed split between two reviews and renamed into place
whole; numbered files of a former, longer run are removed.

Memory: a page of items per segment, the checkpoint's few numbers, file buffers. Nothing
is kept per review.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from storage.base.clock import utc_now
from storage.base.types import Item
from storage.engine.batch import batch_get_items
from storage.engine.table import TableRef
from storage.model import keys
from storage.model.catalogue import CatalogueLine
from storage.model.comments import Comment, Status
from storage.model.items import STATUS_ATTR, comment_key, is_comment_item, item_to_comment
from storage.ops.feeds.files import (
    Checkpoint,
    SegmentState,
    assemble,
    part_path,
    resumable,
    save,
    work_paths,
)
from storage.ops.feeds.google import (
    FeedReview,
    Publisher,
    review_xml,
)
from storage.ops.feeds.urls import UrlTemplate

FORMAT = "google-product-reviews"
SEGMENTS = 4
SEGMENTS_MAX = 64
PAGE_ITEMS = 500
# Google's limit on one feed file (100 MB).
MAX_FILE_BYTES = 100_000_000
# The smallest limit the command takes: room for the feed's head and a review of the
# longest texts.
MIN_FILE_BYTES = 1_000_000

# The comment times that mark a change, and the import record's.
_CHANGE_TIMES = ("createdAt", "editedAt", "decidedAt", "submittedAt")
_IMPORTED_AT = "importedAt"

Lookup = Callable[[str], CatalogueLine | None]


@dataclass(frozen=True, slots=True)
class FeedOptions:
    """What the feed says and how the table is read. ``since`` and the cutoff are stored
    timestamps (``keys.format_timestamp``)."""

    publisher: Publisher
    review_url: UrlTemplate
    product_url: UrlTemplate
    since: str | None = None
    segments: int = SEGMENTS
    page_items: int = PAGE_ITEMS
    # Names the catalogue file's version (path, size, time): a checkpoint made with
    # another catalogue is not resumed.
    catalogue_version: str = ""
    # Larger feeds are split into numbered files (None: one file, any size). Only where the
    # files go: a checkpoint is resumed whatever it is.
    max_file_bytes: int | None = MAX_FILE_BYTES

    def __post_init__(self) -> None:
        if self.max_file_bytes is not None and self.max_file_bytes < 1:
            raise ValueError("a feed file holds at least 1 byte")
        if not 1 <= self.segments <= SEGMENTS_MAX:
            raise ValueError(f"segments are 1 to {SEGMENTS_MAX}")
        if self.page_items < 1:
            raise ValueError("a page holds at least 1 item")

    def fingerprint(self, table: str) -> str:
        """Names the arguments a checkpoint belongs to."""
        given = {
            "format": FORMAT,
            "table": table,
            "publisher": asdict(self.publisher),
            "reviewUrl": self.review_url.text,
            "productUrl": self.product_url.text,
            "since": self.since,
            "segments": self.segments,
            "pageItems": self.page_items,
            "catalogue": self.catalogue_version,
        }
        return hashlib.sha256(json.dumps(given, sort_keys=True).encode()).hexdigest()


@dataclass(frozen=True, slots=True)
class Progress:
    """Counts so far over every segment (resumed runs included)."""

    reviews: int
    scanned: int
    segments_done: int
    segments: int
    seconds: float  # this run's


@dataclass(frozen=True, slots=True)
class Exported:
    """What a run wrote."""

    path: Path
    files: tuple[tuple[Path, int], ...]  # the files written and their sizes in bytes
    reviews: int  # reviews in the feed, withdrawn ones included
    withdrawn: int  # of them, sent with is_spam to take them down
    unmatched: int  # reviews whose product has no catalogue line (no identifiers sent)
    scanned: int  # items scanned, over every run of this export
    bytes: int
    cutoff: str  # the next incremental feed's ``since``
    resumed: bool
    seconds: float  # this run's

    def describe(self) -> str:
        rate = self.reviews / max(self.seconds, 1e-9)
        return (
            f"wrote {self.reviews} reviews ({self.withdrawn} withdrawn with is_spam, "
            f"{self.unmatched} without catalogue identifiers) to {self._where()}, "
            f"{self.bytes:,} bytes; {self.scanned} items scanned"
            + (", resuming a stopped run" if self.resumed else "")
            + f"; {self.seconds:.1f} s ({rate:.0f} reviews/s); "
            f"next incremental feed: --since {self.cutoff}"
        )

    def _where(self) -> str:
        if len(self.files) == 1:
            return str(self.files[0][0])
        return f"{len(self.files)} files, " + ", ".join(str(p) for p, _ in self.files)


async def export_feed(
    table: TableRef,
    output: Path,
    options: FeedOptions,
    lookup: Lookup,
    *,
    progress: Callable[[Progress], None] | None = None,
    clock: Callable[[], datetime] = utc_now,
) -> Exported:
    """Write the feed to ``output`` (atomically), resuming a stopped run of the same
    arguments; see the module doc for what goes in and what it costs."""
    started = time.monotonic()
    checkpoint_file, _ = work_paths(output)
    fingerprint = options.fingerprint(table.name)
    checkpoint = resumable(checkpoint_file, fingerprint, output, options.segments)
    resumed = checkpoint is not None
    if checkpoint is None:
        cutoff = keys.format_timestamp(clock())
        if options.since is not None and options.since >= cutoff:
            raise ValueError(f"--since {options.since} is not before now ({cutoff})")
        checkpoint = Checkpoint(
            fingerprint, cutoff, [SegmentState() for _ in range(options.segments)]
        )
        for k in range(options.segments):
            part_path(output, k).unlink(missing_ok=True)
        save(checkpoint_file, checkpoint)
    scan = _Scan(table, output, options, lookup, checkpoint, checkpoint_file)

    def tell() -> None:
        if progress is not None:
            states = checkpoint.segments
            progress(
                Progress(
                    sum(s.reviews for s in states),
                    sum(s.scanned for s in states),
                    sum(s.done for s in states),
                    len(states),
                    time.monotonic() - started,
                )
            )

    scan.tell = tell
    tasks = [asyncio.ensure_future(scan.segment(k)) for k in range(options.segments)]
    try:
        await asyncio.gather(*tasks)
    finally:
        # On a failure, the other segments stop too (each at a page boundary: the
        # checkpoint holds what their parts hold).
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
    files = assemble(output, options.publisher, checkpoint, options.max_file_bytes)
    checkpoint_file.unlink(missing_ok=True)
    for k in range(options.segments):
        part_path(output, k).unlink(missing_ok=True)
    states = checkpoint.segments
    return Exported(
        output,
        tuple(files),
        sum(s.reviews for s in states),
        sum(s.withdrawn for s in states),
        sum(s.unmatched for s in states),
        sum(s.scanned for s in states),
        sum(size for _, size in files),
        checkpoint.cutoff,
        resumed,
        time.monotonic() - started,
    )


def scan_params(table: str, o: FeedOptions, cutoff: str, segment: int) -> dict[str, Any]:
    """The Scan request of one segment's first page: what the feed's filter returns."""
    names = {"#pk": "PK", "#sk": "SK"}
    values: dict[str, Any] = {":comment": {"S": keys.COMMENT_PREFIX}}
    comment = "begins_with(#pk, :comment) AND #pk = #sk"
    if o.since is None:
        names["#status"] = STATUS_ATTR
        values[":published"] = {"S": Status.PUBLISHED.value}
        expression = f"{comment} AND (attribute_not_exists(#status) OR #status = :published)"
    else:
        values[":since"] = {"S": o.since}
        values[":cutoff"] = {"S": cutoff}
        values[":import"] = {"S": keys.IMPORT_PREFIX}
        windows = []
        for i, name in enumerate((*_CHANGE_TIMES, _IMPORTED_AT)):
            names[f"#t{i}"] = name
            windows.append(f"(#t{i} >= :since AND #t{i} < :cutoff)")
        changed = " OR ".join(windows[:-1])
        expression = f"({comment} AND ({changed})) OR (begins_with(#pk, :import) AND {windows[-1]})"
    params: dict[str, Any] = {
        "TableName": table,
        "Limit": o.page_items,
        "FilterExpression": expression,
        "ExpressionAttributeNames": names,
        "ExpressionAttributeValues": values,
    }
    if o.segments > 1:
        params.update(Segment=segment, TotalSegments=o.segments)
    return params


class _Scan:
    """The segments' shared state: one checkpoint, saved after each segment's page."""

    def __init__(
        self,
        table: TableRef,
        output: Path,
        options: FeedOptions,
        lookup: Lookup,
        checkpoint: Checkpoint,
        checkpoint_file: Path,
    ) -> None:
        self.table, self.output, self.options = table, output, options
        self.lookup, self.checkpoint, self.checkpoint_file = lookup, checkpoint, checkpoint_file
        self.tell: Callable[[], None] = lambda: None

    def _params(self, segment: int) -> dict[str, Any]:
        return scan_params(self.table.name, self.options, self.checkpoint.cutoff, segment)

    async def segment(self, k: int) -> None:
        state = self.checkpoint.segments[k]
        if state.done:
            return
        params = self._params(k)
        if state.position is not None:
            params["ExclusiveStartKey"] = state.position
        part = part_path(self.output, k)
        with part.open("r+b" if part.exists() else "w+b") as out:
            out.truncate(state.bytes)
            out.seek(state.bytes)
            while True:
                response = await self.table.client.scan(**params)
                reviews = await self._page(response.get("Items", []))
                for review in reviews:
                    out.write(review_xml(review).encode("utf-8"))
                out.flush()
                # Between the page's scan and here nothing awaits: a cancellation finds the
                # part and the checkpoint saying the same.
                state.bytes = out.tell()
                state.reviews += len(reviews)
                state.withdrawn += sum(r.withdrawn for r in reviews)
                state.unmatched += sum(r.product is None for r in reviews)
                state.scanned += int(response.get("ScannedCount", 0))
                last = response.get("LastEvaluatedKey")
                state.position = last
                state.done = last is None
                save(self.checkpoint_file, self.checkpoint)
                self.tell()
                if last is None:
                    return
                params["ExclusiveStartKey"] = last

    async def _page(self, items: list[Item]) -> list[FeedReview]:
        """The page's reviews in the order of its items (an import record's comment at
        the record's place)."""
        imported = [
            item["commentId"]["S"]
            for item in items
            if item["PK"]["S"].startswith(keys.IMPORT_PREFIX) and "commentId" in item
        ]
        fetched: dict[str, Item] = {}
        if imported:
            found = await batch_get_items(self.table, [comment_key(c) for c in imported])
            fetched = {item["commentId"]["S"]: item for item in found}
        reviews = []
        for item in items:
            if is_comment_item(item):
                review = self._review(item_to_comment(item))
            elif item["PK"]["S"].startswith(keys.IMPORT_PREFIX):
                comment_item = fetched.get(item.get("commentId", {}).get("S", ""))
                if comment_item is None or self._changed_since(comment_item):
                    continue  # deleted since, or sent by its own item (now or next time)
                review = self._review(item_to_comment(comment_item))
            else:
                continue
            if review is not None:
                reviews.append(review)
        return reviews

    def _changed_since(self, item: Item) -> bool:
        """Whether the comment has a change time at or after ``since``: then its own item
        is in this feed (a time in the window) or the next (a time after the cutoff). A
        comment's change times only grow (an edit, a decision or a return to the queue
        stamps the time it happened; a decision that clears ``submittedAt`` stamps
        ``decidedAt``), so this holds from the moment it holds: the import record and the
        comment's own item never both send it, whatever the order the scan meets them in."""
        since = self.options.since
        times = (item.get(name, {}).get("S") for name in _CHANGE_TIMES)
        return since is not None and any(t is not None and t >= since for t in times)

    def _review(self, c: Comment) -> FeedReview | None:
        withdrawn = not c.published
        if withdrawn and (self.options.since is None or _never_shown(c)):
            return None
        product = self.lookup(c.product_id)
        product_url = (
            product.url
            if product is not None and product.url is not None
            else self.options.product_url.expand(productId=c.product_id)
        )
        review_url = self.options.review_url.expand(productId=c.product_id, commentId=c.comment_id)
        return FeedReview(
            c,
            review_url,
            self.options.review_url.names_comment,
            product_url,
            product,
            withdrawn=withdrawn,
        )


def _never_shown(c: Comment) -> bool:
    """A comment waiting for its first decision since it was written: never published."""
    return (
        c.status is Status.PENDING
        and c.moderation.decided_at is None
        and (c.submitted_at or c.created_at) == c.created_at
    )
