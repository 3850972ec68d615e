"""Following the table's DynamoDB Stream: every change of every item, from where a process
starts (the stream's latest position), across shard splits and iterator expiry.

A stream is a tree of shards: a shard is closed when it splits, and its children hold the
changes after its last one, so a child is read from its start (TRIM_HORIZON) once known.
Changes of one item are in order within the shard that holds them; changes of different
items may come from different shards, in no order between them.

- At start every open shard is read from LATEST: a process sees the changes made after it
  started, not the stream's 24 hours of history. Shards that are already closed then are
  skipped (their changes came before).
- A shard whose reads end (no next iterator) is done; the shard list is described again
  then, and every ``rediscover_seconds``, so that children are found and read from their
  start.
- An expired iterator (unused for 15 minutes, after a stall) is renewed after the last
  sequence number read from its shard; with nothing read yet, from LATEST, and the gap is
  reported. Data trimmed before it was read (a process more than 24 hours behind) is
  reported as a gap too, and the shard is read on from its oldest record.

Gaps are reported to ``on_gap`` (a process that relies on the stream for cache
invalidation drops its caches then), never hidden.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal

from botocore.exceptions import ClientError

from storage.base.types import Item
from storage.engine.table import TableRef
from storage.model.indexes import STREAM_SPECIFICATION

ChangeKind = Literal["INSERT", "MODIFY", "REMOVE"]

# GetRecords returns at most this many records a call (DynamoDB's own maximum).
RECORDS_PER_CALL = 1000


@dataclass(frozen=True, slots=True)
class Change:
    """One change of one item, as the stream carries it (images in DynamoDB's JSON)."""

    kind: ChangeKind
    keys: Item
    old: Item | None
    new: Item | None
    sequence: str
    shard: str
    # When DynamoDB wrote it, epoch seconds (the record's ApproximateCreationDateTime, which
    # DynamoDB rounds down to the second): how far behind a reader is.
    written_at: float | None = None


@dataclass(slots=True)
class _Shard:
    shard_id: str
    iterator: str | None = None
    last_sequence: str | None = None
    # Read from LATEST with nothing read yet: an expired iterator cannot be renewed exactly.
    from_latest: bool = False


@dataclass(slots=True)
class StreamFollower:
    """Reads a stream's changes in batches; one per process, for as long as it runs.

    ``client`` is a ``dynamodbstreams`` client (aiobotocore), ``stream_arn`` the table's
    LatestStreamArn.
    """

    client: Any
    stream_arn: str
    poll_seconds: float = 0.25
    rediscover_seconds: float = 30.0
    on_gap: Callable[[str], None] = lambda reason: None
    _shards: dict[str, _Shard] = field(default_factory=dict)
    # Every shard seen, read or skipped: a shard is started once.
    _known: set[str] = field(default_factory=set)
    _started: bool = False

    async def start(self) -> None:
        """Take position: every open shard from LATEST, closed ones skipped."""
        for shard in await self._describe():
            self._known.add(shard["ShardId"])
            if "EndingSequenceNumber" in shard.get("SequenceNumberRange", {}):
                continue
            state = _Shard(shard["ShardId"], from_latest=True)
            state.iterator = await self._iterator(state.shard_id, "LATEST")
            self._shards[state.shard_id] = state
        self._started = True

    async def batches(self) -> AsyncIterator[list[Change]]:
        """Batches of changes as they come; an empty batch when a poll found none (so a
        consumer can measure lag and notice a quiet stream)."""
        if not self._started:
            await self.start()
        loop = asyncio.get_running_loop()
        next_discovery = loop.time() + self.rediscover_seconds
        while True:
            batch: list[Change] = []
            ended = False
            for state in list(self._shards.values()):
                changes, done = await self._read(state)
                batch.extend(changes)
                if done:
                    del self._shards[state.shard_id]
                    ended = True
            if ended or loop.time() >= next_discovery:
                await self._discover()
                next_discovery = loop.time() + self.rediscover_seconds
            yield batch
            if not batch:
                await asyncio.sleep(self.poll_seconds)

    async def _read(self, state: _Shard) -> tuple[list[Change], bool]:
        if state.iterator is None:
            return [], True
        try:
            response = await self.client.get_records(
                ShardIterator=state.iterator, Limit=RECORDS_PER_CALL
            )
        except ClientError as exc:
            code = exc.response.get("Error", {}).get("Code", "")
            if code == "ExpiredIteratorException":
                await self._renew(state)
                return [], False
            if code == "TrimmedDataAccessException":
                self.on_gap(f"shard {state.shard_id}: changes trimmed before they were read")
                state.iterator = await self._iterator(state.shard_id, "TRIM_HORIZON")
                return [], False
            raise
        changes = [_change(r, state.shard_id) for r in response.get("Records", [])]
        if changes:
            state.last_sequence = changes[-1].sequence
            state.from_latest = False
        state.iterator = response.get("NextShardIterator")
        return changes, state.iterator is None

    async def _renew(self, state: _Shard) -> None:
        if state.last_sequence is not None:
            state.iterator = await self._iterator(
                state.shard_id, "AFTER_SEQUENCE_NUMBER", state.last_sequence
            )
            return
        self.on_gap(f"shard {state.shard_id}: iterator expired before any change was read")
        state.iterator = await self._iterator(state.shard_id, "LATEST")

    async def _discover(self) -> None:
        """Start every shard not seen before from its oldest record: a child of a shard
        that ended, or one made since the last look. A child whose parent is still being
        read waits for it (it is looked at again when the parent ends): an item's changes
        continue in the child after those left in the parent, so reading both at once
        could hand its later change out first."""
        for shard in await self._describe():
            shard_id = shard["ShardId"]
            if shard_id in self._known or shard.get("ParentShardId") in self._shards:
                continue
            self._known.add(shard_id)
            state = _Shard(shard_id)
            state.iterator = await self._iterator(shard_id, "TRIM_HORIZON")
            self._shards[shard_id] = state

    async def _describe(self) -> list[dict[str, Any]]:
        shards: list[dict[str, Any]] = []
        request: dict[str, Any] = {"StreamArn": self.stream_arn}
        while True:
            described = (await self.client.describe_stream(**request))["StreamDescription"]
            shards.extend(described.get("Shards", []))
            last = described.get("LastEvaluatedShardId")
            if not last:
                return shards
            request["ExclusiveStartShardId"] = last

    async def _iterator(self, shard_id: str, kind: str, sequence: str | None = None) -> str:
        request = {"StreamArn": self.stream_arn, "ShardId": shard_id, "ShardIteratorType": kind}
        if sequence is not None:
            request["SequenceNumber"] = sequence
        iterator: str = (await self.client.get_shard_iterator(**request))["ShardIterator"]
        return iterator


def _change(record: dict[str, Any], shard_id: str) -> Change:
    body = record["dynamodb"]
    written = body.get("ApproximateCreationDateTime")
    if isinstance(written, datetime):
        written_at: float | None = written.timestamp()
    elif isinstance(written, int | float):
        written_at = float(written)
    else:
        written_at = None
    return Change(
        kind=record["eventName"],
        keys=body.get("Keys", {}),
        old=body.get("OldImage"),
        new=body.get("NewImage"),
        sequence=body["SequenceNumber"],
        shard=shard_id,
        written_at=written_at,
    )


async def stream_arn(table: TableRef) -> str | None:
    """The table's stream to follow: its LatestStreamArn when the stream is on with new
    and old images; None otherwise (no stream, or one that does not say what changed)."""
    described = (await table.client.describe_table(TableName=table.name))["Table"]
    spec = described.get("StreamSpecification") or {}
    if not spec.get("StreamEnabled"):
        return None
    if spec.get("StreamViewType") != STREAM_SPECIFICATION["StreamViewType"]:
        return None
    arn = described.get("LatestStreamArn")
    return arn if isinstance(arn, str) else None
