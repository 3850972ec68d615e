"""Fan-out of the stream's changes between processes: what a shard's claimed reader
publishes on a broker, and what every process makes of what it receives.

A stream shard allows about two readers, so with a broker each shard is read once, by its
claimed reader's holder (``storage.live.claimed``), which publishes every change the
processes' consumers need (``storage.live.feed``: comment items, old and new images, and
stats items, the image that carries their counters) as messages on one channel; every
process subscribes and hands them to its feed as its own follower would. The broker is
reached through two callables, so this module holds no client of its own.

Messages (JSON): ``{"p": publisher, "n": number, "s": shard, "c": [[kind, keys, old, new,
sequence, written_at], ...]}``, and ``"g": reason`` when the reader lost changes. A
publisher (a process's reader, unique per start) numbers its messages 1, 2, 3... without a
hole; a batch whose changes come to more than
``MAX_MESSAGE_BYTES`` is split, and one change alone may exceed it only by what one
DynamoDB item pair can hold (two items of at most 400 KB).

What a receiver treats as a gap (``on_gap``: its subscribers get EVENTS_LOST and its
snapshot is dropped, exactly as for a gap of the stream itself), never as "nothing
changed":

- a hole in a publisher's numbers (a message it published was lost on the way);
- a shard that changes publisher (its holder died or stalled, and a new holder reads again
  from the checkpoint: what the old holder published last may not have arrived);
- a message it cannot read;
- a message that says its shard's reader lost changes (``"g"``: records trimmed before
  they were read), which the reader publishes the moment it finds out;
- a broker connection lost or made again (``server.fanout`` calls it then).

Duplicates: a holder moves the checkpoint only after publishing, so a new holder publishes
again what came after it (at least once). A receiver drops every change whose sequence
number is not above the last it took from that shard (sequence numbers grow within a
shard), so its consumers see each change once, in the shard's order.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import orjson

from storage.live.stream import Change
from storage.model.items import is_comment_item
from storage.model.stats import is_stats_item

# A message's bytes, beyond which a batch is split (one change alone may exceed it).
MAX_MESSAGE_BYTES = 256 * 1024
# Publishers and shards a receiver remembers (the oldest forgotten first): far more than a
# table's open shards and the processes that read them in a day.
REMEMBERED = 4096

Publish = Callable[[bytes], Awaitable[None]]


def relayed(change: Change) -> Change | None:
    """The change as the consumers need it, None when it means nothing to them: comment
    items with both images; stats items with the image their counters come from."""
    image = change.new if change.new is not None else change.old
    if image is None:
        return None
    if is_comment_item(image):
        return change
    if is_stats_item(image):
        old = None if change.new is not None else change.old
        return Change(
            change.kind,
            change.keys,
            old,
            change.new,
            change.sequence,
            change.shard,
            change.written_at,
        )
    return None


def _row(change: Change) -> list[Any]:
    return [
        change.kind,
        change.keys,
        change.old,
        change.new,
        change.sequence,
        change.written_at,
    ]


@dataclass(slots=True)
class Publisher:
    """A claimed reader's ``on_batch``: each batch of a shard published as numbered
    messages; an error of the broker fails the batch (the reader then checkpoints nothing
    and reads it again)."""

    publisher: str
    publish: Publish
    max_bytes: int = MAX_MESSAGE_BYTES
    # The number of the last message published, and the changes published.
    number: int = 0
    published: int = 0

    async def on_batch(self, changes: Sequence[Change]) -> None:
        kept = [c for c in map(relayed, changes) if c is not None]
        if not kept:
            return
        for shard, rows in self._chunks(kept):
            self.number += 1
            body = {"p": self.publisher, "n": self.number, "s": shard, "c": rows}
            await self.publish(orjson.dumps(body))
            self.published += len(rows)

    async def lost(self, shard: str, reason: str) -> None:
        """Tell every receiver that changes of ``shard`` were lost to its reader (records
        trimmed before they were read): a message of no changes that says so."""
        self.number += 1
        body = {"p": self.publisher, "n": self.number, "s": shard, "c": [], "g": reason}
        await self.publish(orjson.dumps(body))

    def _chunks(self, changes: list[Change]) -> list[tuple[str, list[list[Any]]]]:
        chunks: list[tuple[str, list[list[Any]]]] = []
        rows: list[list[Any]] = []
        size = 0
        shard = changes[0].shard
        for change in changes:
            row = _row(change)
            row_size = len(orjson.dumps(row))
            if rows and (size + row_size > self.max_bytes or change.shard != shard):
                chunks.append((shard, rows))
                rows, size = [], 0
            shard = change.shard
            rows.append(row)
            size += row_size
        chunks.append((shard, rows))
        return chunks


@dataclass(slots=True)
class Receiver:
    """What one process makes of the messages it receives: the changes to hand its feed,
    gaps reported to ``on_gap`` (see the module doc)."""

    on_gap: Callable[[str], None]
    # Received and dropped as duplicates, for metrics and tests.
    duplicates: int = 0
    _numbers: OrderedDict[str, int] = field(default_factory=OrderedDict)
    _holders: OrderedDict[str, str] = field(default_factory=OrderedDict)
    _last: OrderedDict[str, int] = field(default_factory=OrderedDict)

    def take(self, data: bytes) -> list[Change]:
        try:
            message = orjson.loads(data)
            publisher, number, shard = message["p"], message["n"], message["s"]
            rows = message["c"]
            if not (isinstance(publisher, str) and isinstance(number, int)):
                raise TypeError("publisher or number")
            changes = [_change(row, shard) for row in rows]
            lost = message.get("g")
        except (orjson.JSONDecodeError, KeyError, TypeError, ValueError, IndexError):
            self.on_gap("a fan-out message could not be read")
            return []
        if lost is not None:
            self.on_gap(f"shard {shard}: its reader lost changes ({lost})")
        last = self._numbers.get(publisher)
        if last is not None and number != last + 1:
            self.on_gap(f"fan-out messages {last + 1} to {number - 1} of {publisher} were lost")
        _remember(self._numbers, publisher, number)
        holder = self._holders.get(shard)
        if holder is not None and holder != publisher:
            self.on_gap(f"shard {shard} was handed from {holder} to {publisher}")
        _remember(self._holders, shard, publisher)
        fresh: list[Change] = []
        seen = self._last.get(shard, -1)
        for change in changes:
            sequence = int(change.sequence)
            if sequence <= seen:
                self.duplicates += 1
                continue
            seen = sequence
            fresh.append(change)
        _remember(self._last, shard, seen)
        return fresh


def _remember(memory: OrderedDict[str, Any], key: str, value: Any) -> None:
    memory[key] = value
    memory.move_to_end(key)
    while len(memory) > REMEMBERED:
        memory.popitem(last=False)


def _change(row: list[Any], shard: str) -> Change:
    kind, keys, old, new, sequence, written_at = row
    if kind not in ("INSERT", "MODIFY", "REMOVE") or not isinstance(sequence, str):
        raise ValueError("kind or sequence")
    int(sequence)  # a stream's sequence numbers are decimal
    at = None if written_at is None else float(written_at)
    return Change(kind, keys, old, new, sequence, shard, at)
