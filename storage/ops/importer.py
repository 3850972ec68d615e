"""Importing a shop's existing reviews from JSON Lines, once each, with exact counters.

A review becomes a comment whose id is derived from the source's id
(``keys.imported_comment_id``), and an import record ``IMPORT#<digest of the source's id>``
holding that id and a digest of what the line said. Both are put, each on the condition
that it does not exist, in the same TransactWriteItems as every count the comments move,
exactly as ``create_comment`` moves them:

- PUBLISHED comments: the product's ``S`` and ``S#<lang>`` counters, verified counters
  included, and the leaderboard entry, under the same ``count_5`` condition as a create;
- PENDING comments: the moderation queue's count;
- every comment: its author's count of comments on the product (the comment holds a slot,
  as created ones do, so deleting it gives the slot back). The per-author limits are not
  applied: a shop's history may hold two reviews by one customer of one product.

So a review is imported once, however often the import runs: a record that exists makes
the line *already imported*, also after its comment was deleted (the record stays); and a
batch commits whole or not at all, so a crash leaves nothing half-written and running the
same import again completes the rest.

A line whose ``externalId`` was imported before with other content (the record's digest
differs) is a *conflict*: reported with its line number and left out, the stored comment
unchanged (it may have been edited or moderated since; an import never overwrites). A
second line with an ``externalId`` seen earlier in the same file is invalid, whatever it
holds.

The lines are read in windows, bounded in lines and in bytes. A window's published and
rejected reviews are grouped by product and written in batches of one product (up to
DynamoDB's 100 actions per transaction); products go in parallel, one product's batches one
after another, as they contend on its counters. PENDING reviews touch no product counter
but all move the queue's one count item, so they go in batches of any products, one after
another, beside the products.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Callable, Coroutine, Iterable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from storage.base.errors import InvalidInput, StorageError, WriteConflict
from storage.base.expressions import Attr, put_request
from storage.base.types import Item
from storage.engine.batch import BATCH_GET_MAX, batch_get_items
from storage.engine.retry import DEFAULT_BACKOFF, Backoff
from storage.engine.table import TableRef
from storage.model import keys
from storage.model.comments import Status
from storage.model.items import comment_to_item
from storage.ops.group_move import finish_move
from storage.ops.import_lines import (
    LINE_MAX_BYTES,
    ImportRecord,
    InvalidLine,
    external_id_key,
    jsonl_lines,
    parse_line,
)
from storage.writes import counters, limits
from storage.writes.membership import read_membership
from storage.writes.transaction import MAX_WRITE_CALLS, CallBudget, Cancellation, Part, transact

__all__ = [
    "CONCURRENCY",
    "LINE_MAX_BYTES",
    "MAX_ACTIONS",
    "ImportRecord",
    "ImportSummary",
    "InvalidLine",
    "import_comments",
    "jsonl_lines",
    "parse_line",
]

# DynamoDB's limit of actions in one transaction. At about 23 kB for the largest comment,
# a full batch stays well under the 4 MB a transaction may carry.
MAX_ACTIONS = 100
# A window: the reviews grouped by product at once. Larger windows make larger batches when
# a file interleaves many products (a batch holds one product's reviews of one window).
WINDOW_LINES = 20_000
WINDOW_BYTES = 32 * 1024 * 1024
# Products written at once.
CONCURRENCY = 8
# Skipped lines kept in the summary (all of them are passed to ``on_invalid``).
INVALID_KEPT = 1_000

RECORD = "import"
COMMENT = "comment"
SLOT = "slot"
DIGEST_ATTR = "digest"


@dataclass(frozen=True, slots=True)
class ImportSummary:
    """What an import did with each line. ``invalid_lines`` holds the first
    ``INVALID_KEPT`` skipped lines (invalid ones and conflicts, in the order found);
    ``invalid`` and ``conflicts`` count them all."""

    lines: int  # blank lines included
    imported: int
    already_imported: int
    invalid: int
    invalid_lines: tuple[InvalidLine, ...]
    conflicts: int = 0
    # Grouped products whose imported comments were then placed in their group (the
    # group's move of them certified complete).
    placed: tuple[str, ...] = ()

    @property
    def skipped(self) -> int:
        """Lines left out: invalid ones and conflicts."""
        return self.invalid + self.conflicts


async def import_comments(
    table: TableRef,
    lines: Iterable[bytes],
    *,
    window_lines: int = WINDOW_LINES,
    window_bytes: int = WINDOW_BYTES,
    concurrency: int = CONCURRENCY,
    progress: Callable[[int], None] | None = None,
    on_invalid: Callable[[InvalidLine], None] | None = None,
    backoff: Backoff = DEFAULT_BACKOFF,
) -> ImportSummary:
    """Import each valid line once, with every count it moves, however often this runs.

    ``progress`` gets the number of lines dealt with so far; ``on_invalid`` each skipped
    line (invalid, or a conflict with an earlier import). A storage failure past the
    retries raises (a ``StorageError``); the batches committed before it stay, and running
    the same import again completes the rest.
    """
    if window_lines < 1 or window_bytes < 1 or concurrency < 1:
        raise ValueError("windows and concurrency must be positive")
    run = _Run(table, asyncio.Semaphore(concurrency), backoff, progress, on_invalid)
    for window in run.windows(lines, window_lines, window_bytes):
        await run.window(window)
    # Imported comments count in no group (the batches move the products' own counters
    # only): each grouped product's are moved into its group by the group move's own
    # exact transitions, which certifies that the group holds them all.
    for product_id in sorted(run.grouped):
        await finish_move(table, product_id, backoff=backoff)
    return ImportSummary(
        run.lines,
        run.imported,
        run.already,
        run.invalid,
        tuple(run.invalid_lines),
        run.conflicts,
        tuple(sorted(run.grouped)),
    )


@dataclass
class _Run:
    """One import: its tallies, and the window, product and batch steps."""

    table: TableRef
    gate: asyncio.Semaphore
    backoff: Backoff
    progress: Callable[[int], None] | None
    on_invalid: Callable[[InvalidLine], None] | None
    lines: int = 0
    imported: int = 0
    already: int = 0
    invalid: int = 0
    conflicts: int = 0
    settled: int = 0
    invalid_lines: list[InvalidLine] = field(default_factory=list)
    # The line of each external id met so far, by its 16-byte key: about 100 bytes a line.
    seen: dict[bytes, int] = field(default_factory=dict)
    # Products in a group that got published comments: placed in it once all is written.
    grouped: set[str] = field(default_factory=set)
    # Set by the first failure: the batches still running finish what they sent and start
    # nothing more.
    stop: asyncio.Event = field(default_factory=asyncio.Event)

    def _settle(self, *, imported: int = 0, already: int = 0, other: int = 0) -> None:
        self.imported += imported
        self.already += already
        self.settled += imported + already + other
        if self.progress is not None:
            self.progress(self.settled)

    def windows(
        self, lines: Iterable[bytes], max_lines: int, max_bytes: int
    ) -> Iterator[list[ImportRecord]]:
        """The valid lines, a window at a time; invalid and blank ones are settled here."""
        window: list[ImportRecord] = []
        size = 0
        for line in lines:
            self.lines += 1
            if not line.strip():
                self._settle(other=1)
                continue
            try:
                record = parse_line(line, self.lines)
            except InvalidInput as exc:
                self._skip(InvalidLine(self.lines, str(exc)))
                continue
            first = self.seen.setdefault(external_id_key(record.external_id), self.lines)
            if first != self.lines:
                self._skip(InvalidLine(self.lines, f"externalId repeats line {first}"))
                continue
            window.append(record)
            size += len(line)
            if len(window) >= max_lines or size >= max_bytes:
                yield window
                window, size = [], 0
        if window:
            yield window

    def _skip(self, bad: InvalidLine, *, conflict: bool = False) -> None:
        if conflict:
            self.conflicts += 1
        else:
            self.invalid += 1
        if len(self.invalid_lines) < INVALID_KEPT:
            self.invalid_lines.append(bad)
        if self.on_invalid is not None:
            self.on_invalid(bad)
        self._settle(other=1)

    def _already(self, record: ImportRecord, stored_digest: str | None) -> None:
        """Settle a line whose record exists: the same review, or a conflict."""
        if stored_digest is None or stored_digest == record.digest:
            self._settle(already=1)
        else:
            reason = "imported before with other content; the stored review is left as it is"
            self._skip(InvalidLine(record.line, f"externalId {reason}"), conflict=True)

    async def window(self, records: list[ImportRecord]) -> None:
        """Settle what is in already, then write the rest: products in parallel, the
        PENDING reviews beside them."""
        present = await self._present(records)
        by_product: dict[str, list[ImportRecord]] = {}
        pending: list[ImportRecord] = []
        for record in records:
            if record.external_id in present:
                self._already(record, present[record.external_id])
            elif record.comment.status is Status.PENDING:
                pending.append(record)
            else:
                by_product.setdefault(record.comment.product_id, []).append(record)
        writes = [self._in_turn(todo) for todo in by_product.values()]
        if pending:
            writes.append(self._in_turn(pending))
        await _together(writes, self.stop)

    async def _present(self, records: list[ImportRecord]) -> dict[str, str | None]:
        """The digest in the record of each of these imported before (None for a record
        without one). Only a shortcut: the transactions' conditions decide."""
        by_key = {keys.import_pk(r.external_id): r.external_id for r in records}
        pks = list(by_key)
        found: dict[str, str | None] = {}

        async def chunk(start: int) -> None:
            async with self.gate:
                items = await _records_present(
                    self.table, pks[start : start + BATCH_GET_MAX], self.backoff
                )
            for item in items:
                found[by_key[item["PK"]["S"]]] = _digest_of(item)

        await _together([chunk(start) for start in range(0, len(pks), BATCH_GET_MAX)], self.stop)
        return found

    async def _in_turn(self, records: list[ImportRecord]) -> None:
        """Batches that contend on the same counters, one after another."""
        async with self.gate:
            for batch in _batches(records):
                if self.stop.is_set():
                    return
                await self._batch(batch)

    async def _batch(self, batch: list[ImportRecord]) -> None:
        """Commit a batch, less whatever turns out to be in already."""
        product_id = batch[0].comment.product_id  # a batch that moves counters has one
        budget = CallBudget(MAX_WRITE_CALLS + len(batch))
        five = counters.FiveStars()
        transient = stale = 0
        product_moves = _moves(batch)
        async with counters.five_star_turn(self.table, product_id, product_moves):
            if counters.moves_five(product_moves):
                await counters.learn_five(self.table, product_id, budget, five)
            while batch and not self.stop.is_set():
                cancel = await transact(self.table, _parts(self.table, batch, five), budget)
                if cancel is None:
                    self._settle(imported=len(batch))
                    await self._note_group(batch)
                    return
                there = self._settle_present(batch, cancel)
                if there:
                    # The rest's counts are computed again, without them (``_parts``).
                    batch = [r for i, r in enumerate(batch) if i not in there]
                    continue
                if counters.lost_five_star_race(self.table, cancel, five):
                    stale += 1
                    if stale > 2:
                        await self.backoff.sleep(min(stale - 2, 3))
                    continue
                counters.check_no_drift(cancel, product_id)
                transient += 1
                if transient >= self.backoff.attempts:
                    raise WriteConflict("storage kept rejecting the import; run it again later")
                await self.backoff.sleep(transient)

    async def _note_group(self, batch: list[ImportRecord]) -> None:
        """Remember the batch's product when it is in a group and got published comments.
        The membership is read (strongly consistent) after the batch committed, never
        taken from this process's memory: no transaction checks it, and a product another
        process moved into a group would keep these comments in none. Read after the
        commit, a group it shows is where ``finish_move`` places them; a move that
        commits later counts them itself, as its certificate takes the product's total."""
        first = batch[0].comment
        if first.product_id in self.grouped or not any(r.comment.published for r in batch):
            return
        membership = await read_membership(self.table, first.product_id)
        if membership.group_id is not None or membership.moving:
            self.grouped.add(first.product_id)

    def _settle_present(self, batch: list[ImportRecord], cancel: Cancellation) -> set[int]:
        """Settle the reviews of a cancelled batch whose record (or, were the record removed
        by hand, whose comment) exists: imported before, or by another import meanwhile."""
        there = set()
        for i, record in enumerate(batch):
            if cancel.failed(f"{RECORD}:{i}"):
                self._already(record, _digest_of(cancel.item(f"{RECORD}:{i}")))
                there.add(i)
            elif cancel.failed(f"{COMMENT}:{i}"):
                self._settle(already=1)
                there.add(i)
        return there


def _batches(records: list[ImportRecord]) -> Iterator[list[ImportRecord]]:
    """Records in transactions of at most ``MAX_ACTIONS`` actions."""
    batch: list[ImportRecord] = []
    for record in records:
        if batch and _actions([*batch, record]) > MAX_ACTIONS:
            yield batch
            batch = []
        batch.append(record)
    if batch:
        yield batch


def _actions(batch: list[ImportRecord]) -> int:
    """Two puts per record, one update per author's slot, per stats item moved (S and one
    S#<lang> per language of a published comment) and for the queue's count, and the
    leaderboard layout's check when published 5-star comments may create the product's
    entry (counted whenever there are some: the count is read only later)."""
    comments = [r.comment for r in batch]
    slots = {(c.author_id, c.product_id) for c in comments}
    languages = {(c.product_id, c.language) for c in comments if c.published}
    stats = len(languages) + len({pid for pid, _ in languages})
    queue = any(c.status is Status.PENDING for c in comments)
    layout = any(c.published and c.rating == 5 for c in comments)
    return 2 * len(batch) + len(slots) + stats + int(queue) + int(layout)


def _moves(batch: list[ImportRecord]) -> list[counters.Move]:
    return [m for r in batch for m in counters.moves(None, r.comment)]


def _parts(table: TableRef, batch: list[ImportRecord], five: counters.FiveStars) -> list[Part]:
    now = keys.format_timestamp(datetime.now(UTC))
    parts: list[Part] = []
    for i, record in enumerate(batch):
        comment = comment_to_item(record.comment, version=1, holds_slot=True)
        # The record's old self comes back on a failed condition: it tells a review
        # imported before from a conflict.
        record_put = put_request(
            table.name, _record_item(record, now), Attr("PK").not_exists(), return_old=True
        )
        comment_put = put_request(table.name, comment, Attr("PK").not_exists())
        parts.append(Part(f"{RECORD}:{i}", {"Put": record_put}))
        parts.append(Part(f"{COMMENT}:{i}", {"Put": comment_put}))
    # Unconditioned adds: they commit only with the puts, whose conditions say that none
    # of these comments was counted before. No limit: the source's history is what it is.
    slots = Counter((r.comment.author_id, r.comment.product_id) for r in batch)
    for j, ((author, product_id), n) in enumerate(sorted(slots.items())):
        slot = limits.product_part(table, author, product_id, n, None)
        parts.append(Part(f"{SLOT}:{j}", slot.action))
    parts += counters.parts(table, _moves(batch), five)
    pending = sum(r.comment.status is Status.PENDING for r in batch)
    parts += counters.queue_move(table, pending)
    return parts


def _record_item(record: ImportRecord, now: str) -> Item:
    pk = {"S": keys.import_pk(record.external_id)}
    return {
        "PK": pk,
        "SK": pk,
        "externalId": {"S": record.external_id},
        "commentId": {"S": record.comment.comment_id},
        "productId": {"S": record.comment.product_id},
        DIGEST_ATTR: {"S": record.digest},
        "importedAt": {"S": now},
    }


def _digest_of(record: Item) -> str | None:
    value = record.get(DIGEST_ATTR)
    return None if value is None else str(value["S"])


async def _records_present(table: TableRef, pks: list[str], backoff: Backoff) -> list[Item]:
    """The import records among ``pks`` that exist, key and digest (strongly consistent)."""
    return await batch_get_items(
        table,
        [{"PK": {"S": pk}, "SK": {"S": pk}} for pk in pks],
        backoff,
        projection=["PK", DIGEST_ATTR],
        consistent=True,
    )


async def _together(calls: list[Coroutine[Any, Any, None]], stop: asyncio.Event) -> None:
    """Run these concurrently. The first failure sets ``stop``, so that no new write
    starts, and is raised as itself (a storage error rather than a group) once the others
    have finished: cancelling one whose write was sent would not call the write back, and
    a failure reported while it may still land leaves the tally, and a resume started at
    once, behind the table."""
    failures: list[Exception] = []

    async def guarded(call: Coroutine[Any, Any, None]) -> None:
        try:
            await call
        except Exception as exc:
            stop.set()
            failures.append(exc)

    await asyncio.gather(*(guarded(call) for call in calls))
    if failures:
        own = [e for e in failures if isinstance(e, StorageError)]
        raise (own or failures)[0]
