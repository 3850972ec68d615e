"""A claimed reader of the stream: each shard read by one process at a time, from where the
last holder stopped, for work that must happen once (webhooks, later purges and fan-out).

``storage.live.stream`` has every process read every shard from its latest position: right
for per-process work, wrong for work that must happen once and must not be lost when a
process dies. Here each shard has a *lease item* (``LEASE#<reader>``, sort key the shard
id) holding its owner, until when the owner holds it (epoch milliseconds) and a
*checkpoint*: the sequence number of the last change handed to ``on_batch`` and done.

- A process claims a shard with one conditional update: no owner, an owner whose lease has
  run out, or itself. It reads from after the checkpoint (a shard never read: from its
  oldest record, TRIM_HORIZON), hands each batch to ``on_batch`` in order, then moves the
  checkpoint, conditioned on still being the owner (which also renews the lease). A
  holder renews its leases every ``lease_seconds / 3`` while its shards are quiet.
- A process that dies (or stalls past its lease) hands the shard on: another claims it
  once the lease has run out and reads again from the checkpoint, so the changes after it
  are handed out a second time. ``on_batch`` must therefore be idempotent (the webhook
  outbox puts each event only if its id is absent): at least once, never lost.
- A shard that ends (split, or closed) is marked ``finished``; its children are claimed
  only after their parent is finished or gone from the stream, so one item's changes are
  handed out in order across a split.
- The reader's *genesis* (an item put once, the first time any process runs the reader)
  is when it began: changes written more than a minute before it are skipped (the
  stream's times are rounded down), so turning webhooks on does not replay the stream's
  last 24 hours.

Clocks: leases compare the claimer's clock with the holder's; hosts whose clocks differ by
more than a fraction of ``lease_seconds`` could both read a shard for a while, which the
idempotent ``on_batch`` makes harmless (a duplicate, never a loss).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Sequence
from contextlib import suppress
from dataclasses import dataclass, field
from typing import Any

from botocore.exceptions import ClientError

from storage.base.errors import ConditionFailed, StorageError
from storage.base.types import Item
from storage.engine.table import TableRef
from storage.live.stream import RECORDS_PER_CALL, Change, _change

log = logging.getLogger("comments.claimed")

LEASE_PREFIX = "LEASE#"
GENESIS_SK = "#GENESIS"
# How far before its genesis a change may have been stamped and still be handed out: the
# stream's times are rounded down (to the second by DynamoDB, to the minute by DynamoDB
# Local), so a change made just after the genesis may carry an earlier time.
GENESIS_MARGIN_SECONDS = 60.0

OnBatch = Callable[[Sequence[Change]], Awaitable[None]]


def _of_lease(change: Change) -> bool:
    """A change of a lease item (a reader's own checkpoint, or another reader's): moving a
    checkpoint for it alone would write a change that is read again, a write per poll for
    ever; it is left for the next checkpoint (read again after a hand-over, it is nothing)."""
    pk = change.keys.get("PK", {}).get("S", "")
    return isinstance(pk, str) and pk.startswith(LEASE_PREFIX)


def lease_key(reader: str, shard_id: str) -> Item:
    return {"PK": {"S": LEASE_PREFIX + reader}, "SK": {"S": shard_id}}


@dataclass(slots=True)
class _Held:
    shard_id: str
    iterator: str | None
    checkpoint: str | None
    renewed_at: float


@dataclass(slots=True)
class ClaimedReader:
    """Reads the shards it can claim, handing each batch to ``on_batch``; ``run`` until
    cancelled, then ``release`` (``run`` does it on the way out)."""

    table: TableRef
    streams: Any
    stream_arn: str
    reader: str
    owner: str
    on_batch: OnBatch
    lease_seconds: float = 30.0
    poll_seconds: float = 0.25
    rediscover_seconds: float = 10.0
    # Told of changes of a shard lost before they were read (the shard, and why).
    on_gap: Callable[[str, str], None] = lambda shard_id, reason: None
    # Told of each shard claimed, and whether it was taken from a holder whose lease ran
    # out (it died or stalled: what it did with its last batches beyond the checkpoint,
    # work queued and not yet done, is unknown) rather than a free one.
    on_claim: Callable[[str, bool], None] = lambda shard_id, taken_over: None
    clock: Callable[[], float] = time.time
    genesis: float | None = None
    # Changes handed to on_batch and checkpointed, for metrics and tests.
    handed: int = 0
    _held: dict[str, _Held] = field(default_factory=dict)
    _shards: list[dict[str, Any]] = field(default_factory=list)

    @property
    def held(self) -> frozenset[str]:
        return frozenset(self._held)

    async def run(self) -> None:
        try:
            await self._start()
            loop = asyncio.get_running_loop()
            next_look = 0.0
            while True:
                try:
                    if loop.time() >= next_look:
                        await self.look()
                        next_look = loop.time() + min(
                            self.rediscover_seconds, self.lease_seconds / 3
                        )
                    read = await self.step()
                except asyncio.CancelledError:
                    raise
                except Exception as exc:  # storage or a batch failing: try again later
                    log.warning("%s: reading the stream failed (%s)", self.reader, exc)
                    read = 0
                    next_look = 0.0
                if not read:
                    await asyncio.sleep(self.poll_seconds)
        finally:
            await asyncio.shield(self.release())

    async def look(self) -> None:
        """Describe the stream's shards and claim those free (or whose lease ran out)."""
        await self._start()
        self._shards = await self._describe()
        await self._claim_free()

    async def _start(self) -> None:
        if self.genesis is None:
            self.genesis = await self._genesis()

    async def step(self) -> int:
        """One read of every shard held, handed out and checkpointed; the changes read."""
        total = 0
        for held in list(self._held.values()):
            try:
                total += await self._read(held)
            except ConditionFailed:
                log.info("%s: shard %s was taken over", self.reader, held.shard_id)
                self._held.pop(held.shard_id, None)
        return total

    async def release(self) -> None:
        """Give every shard held back at once (its lease ends now), keeping checkpoints."""
        for held in list(self._held.values()):
            with suppress(StorageError):
                await self.table.client.update_item(
                    TableName=self.table.name,
                    Key=lease_key(self.reader, held.shard_id),
                    UpdateExpression="REMOVE #owner SET #until = :zero",
                    ConditionExpression="#owner = :me",
                    ExpressionAttributeNames={"#owner": "owner", "#until": "until"},
                    ExpressionAttributeValues={":me": {"S": self.owner}, ":zero": {"N": "0"}},
                )
        self._held.clear()

    async def _genesis(self) -> float:
        key = {"PK": {"S": LEASE_PREFIX + self.reader}, "SK": {"S": GENESIS_SK}}
        now = self.clock()
        try:
            await self.table.client.put_item(
                TableName=self.table.name,
                Item={**key, "at": {"N": repr(now)}},
                ConditionExpression="attribute_not_exists(PK)",
            )
            return now
        except ConditionFailed:
            found = await self.table.client.get_item(
                TableName=self.table.name, Key=key, ConsistentRead=True
            )
            return float(found["Item"]["at"]["N"])

    async def _claim_free(self) -> None:
        present = {s["ShardId"] for s in self._shards}
        leases = await self._leases()
        now_ms = int(self.clock() * 1000)
        for shard in self._shards:
            shard_id = shard["ShardId"]
            if shard_id in self._held:
                continue
            lease = leases.get(shard_id, {})
            if lease.get("finished", {}).get("BOOL"):
                continue
            owner = lease.get("owner", {}).get("S")
            until = int(lease.get("until", {}).get("N", "0"))
            if owner is not None and owner != self.owner and until >= now_ms:
                continue
            parent = shard.get("ParentShardId")
            if (
                isinstance(parent, str)
                and parent in present
                and not leases.get(parent, {}).get("finished", {}).get("BOOL")
            ):
                continue  # its parent's changes come first
            await self._claim(shard_id)

    async def _claim(self, shard_id: str) -> None:
        now_ms = int(self.clock() * 1000)
        try:
            answer = await self.table.client.update_item(
                TableName=self.table.name,
                Key=lease_key(self.reader, shard_id),
                UpdateExpression="SET #owner = :me, #until = :until",
                ConditionExpression="attribute_not_exists(#finished) AND "
                "(attribute_not_exists(#owner) OR #until < :now OR #owner = :me)",
                ExpressionAttributeNames={
                    "#owner": "owner",
                    "#until": "until",
                    "#finished": "finished",
                },
                ExpressionAttributeValues={
                    ":me": {"S": self.owner},
                    ":now": {"N": str(now_ms)},
                    ":until": {"N": str(now_ms + int(self.lease_seconds * 1000))},
                },
                # The lease as it was: its checkpoint (which this update leaves) and
                # whether another holder had it still.
                ReturnValues="ALL_OLD",
            )
        except ConditionFailed:
            return
        old = answer.get("Attributes", {})
        checkpoint = old.get("checkpoint", {}).get("S")
        previous = old.get("owner", {}).get("S")
        iterator = await self._iterator(shard_id, checkpoint)
        self._held[shard_id] = _Held(shard_id, iterator, checkpoint, self.clock())
        log.info("%s: claimed shard %s from %s", self.reader, shard_id, checkpoint or "its start")
        self.on_claim(shard_id, previous is not None and previous != self.owner)

    async def _read(self, held: _Held) -> int:
        if held.iterator is None:
            await self._finish(held)
            return 0
        try:
            response = await self.streams.get_records(
                ShardIterator=held.iterator, Limit=RECORDS_PER_CALL
            )
        except ClientError as exc:
            code = exc.response.get("Error", {}).get("Code", "")
            if code == "ExpiredIteratorException":
                held.iterator = await self._iterator(held.shard_id, held.checkpoint)
                return 0
            if code == "TrimmedDataAccessException":
                self.on_gap(held.shard_id, "changes trimmed before they were read")
                held.iterator = await self._iterator(held.shard_id, None)
                return 0
            raise
        records = response.get("Records", [])
        changes = [_change(r, held.shard_id) for r in records]
        genesis = (self.genesis or 0.0) - GENESIS_MARGIN_SECONDS
        wanted = [c for c in changes if c.written_at is None or c.written_at >= genesis]
        if wanted:
            try:
                await self.on_batch(wanted)
            except Exception:
                # Nothing checkpointed: read again from the checkpoint, a little later.
                held.iterator = await self._iterator(held.shard_id, held.checkpoint)
                raise
        next_iterator = response.get("NextShardIterator")
        if any(not _of_lease(c) for c in changes):
            await self._checkpoint(held, changes[-1].sequence)
            self.handed += len(wanted)
        elif self.clock() - held.renewed_at > self.lease_seconds / 3:
            await self._checkpoint(held, held.checkpoint)
        held.iterator = next_iterator
        if next_iterator is None:
            await self._finish(held)
        return len(changes)

    async def _checkpoint(self, held: _Held, sequence: str | None) -> None:
        now = self.clock()
        names = {"#owner": "owner", "#until": "until"}
        values: Item = {
            ":me": {"S": self.owner},
            ":until": {"N": str(int((now + self.lease_seconds) * 1000))},
        }
        update = "SET #until = :until"
        if sequence is not None:
            update += ", #checkpoint = :seq"
            names["#checkpoint"] = "checkpoint"
            values[":seq"] = {"S": sequence}
        await self.table.client.update_item(
            TableName=self.table.name,
            Key=lease_key(self.reader, held.shard_id),
            UpdateExpression=update,
            ConditionExpression="#owner = :me",
            ExpressionAttributeNames=names,
            ExpressionAttributeValues=values,
        )
        held.checkpoint = sequence
        held.renewed_at = now

    async def _finish(self, held: _Held) -> None:
        await self.table.client.update_item(
            TableName=self.table.name,
            Key=lease_key(self.reader, held.shard_id),
            UpdateExpression="SET #finished = :yes REMOVE #owner",
            ConditionExpression="#owner = :me",
            ExpressionAttributeNames={"#owner": "owner", "#finished": "finished"},
            ExpressionAttributeValues={":me": {"S": self.owner}, ":yes": {"BOOL": True}},
        )
        self._held.pop(held.shard_id, None)

    async def _leases(self) -> dict[str, Item]:
        found: dict[str, Item] = {}
        request: dict[str, Any] = {
            "TableName": self.table.name,
            "KeyConditionExpression": "PK = :pk",
            "ExpressionAttributeValues": {":pk": {"S": LEASE_PREFIX + self.reader}},
            "ConsistentRead": True,
        }
        while True:
            page = await self.table.client.query(**request)
            for item in page.get("Items", []):
                found[item["SK"]["S"]] = item
            last = page.get("LastEvaluatedKey")
            if not last:
                return found
            request["ExclusiveStartKey"] = last

    async def _describe(self) -> list[dict[str, Any]]:
        shards: list[dict[str, Any]] = []
        request: dict[str, Any] = {"StreamArn": self.stream_arn}
        while True:
            described = (await self.streams.describe_stream(**request))["StreamDescription"]
            shards.extend(described.get("Shards", []))
            last = described.get("LastEvaluatedShardId")
            if not last:
                return shards
            request["ExclusiveStartShardId"] = last

    async def _iterator(self, shard_id: str, checkpoint: str | None) -> str | None:
        request: dict[str, Any] = {"StreamArn": self.stream_arn, "ShardId": shard_id}
        if checkpoint is None:
            request["ShardIteratorType"] = "TRIM_HORIZON"
        else:
            request["ShardIteratorType"] = "AFTER_SEQUENCE_NUMBER"
            request["SequenceNumber"] = checkpoint
        answer = await self.streams.get_shard_iterator(**request)
        iterator = answer.get("ShardIterator")
        return iterator if isinstance(iterator, str) else None
