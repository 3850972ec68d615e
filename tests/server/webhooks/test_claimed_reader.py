"""The claimed stream reader on DynamoDB Local: one holder per shard; a holder that stops
(as if its process died) hands its shards on after the lease, and the next holder reads
again from the checkpoint: every change handed out at least once, none lost, and only
those after the checkpoint twice."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from contextlib import suppress
from typing import Any

from botocore.exceptions import ClientError

from storage.base.types import DynamoClient
from storage.live.claimed import ClaimedReader, lease_key
from storage.live.stream import Change
from storage.live.webhook_events import webhook_event
from storage.model.comments import NewComment
from storage.model.webhooks import EventType
from storage.writes import create_comment
from tests.server.webhooks.rig import streamed_table


class Collect:
    def __init__(self) -> None:
        self.changes: list[Change] = []

    async def on_batch(self, changes: Sequence[Change]) -> None:
        self.changes += changes

    @property
    def sequences(self) -> set[str]:
        return {c.sequence for c in self.changes}

    @property
    def published(self) -> int:
        events = [webhook_event(c) for c in self.changes]
        return sum(1 for e in events if e is not None and e.type is EventType.COMMENT_PUBLISHED)


async def test_a_stopped_holder_hands_its_shards_on_from_the_checkpoint(
    client: DynamoClient, streams: Any
) -> None:
    table, arn = await streamed_table(client)
    first, second, third = Collect(), Collect(), Collect()
    taken: dict[str, list[tuple[str, bool]]] = {"b": [], "c": []}
    a = ClaimedReader(table, streams, arn, "test", "a", first.on_batch, lease_seconds=1.5)
    b = ClaimedReader(
        table,
        streams,
        arn,
        "test",
        "b",
        second.on_batch,
        lease_seconds=1.5,
        on_claim=lambda shard, over: taken["b"].append((shard, over)),
    )
    a.genesis = b.genesis = 0.0
    # A claims every shard; B, looking at once, finds none free.
    await a.look()
    await b.look()
    assert a.held
    assert not b.held
    for i in range(3):
        await create_comment(table, NewComment("cr", "en", 5, f"c{i}", f"u{i}"))
    async with asyncio.timeout(20):
        while len(first.sequences) < 3:
            await a.step()
            await asyncio.sleep(0.05)
    # A stops here, as if killed: no release, its lease runs out. Two more changes.
    for i in range(3, 5):
        await create_comment(table, NewComment("cr", "en", 5, f"c{i}", f"u{i}"))
    running = asyncio.create_task(b.run())
    try:
        async with asyncio.timeout(20):
            while len(second.sequences) < 2:  # noqa: ASYNC110
                await asyncio.sleep(0.05)
        await asyncio.sleep(0.3)
    finally:
        running.cancel()
        with suppress(asyncio.CancelledError):
            await asyncio.wait_for(running, 10)
    # B read on from A's checkpoint: the two new changes, not the three A had done.
    assert first.published == 3
    assert second.published == 2
    assert second.sequences.isdisjoint(first.sequences)
    # B gave its shards back when it stopped; A's late checkpoint now fails: A lost them.
    assert not b.held
    held_by_a = a.held
    await a.step()
    assert not a.held
    # B was told it took A's shards from a holder that had not let go; C, taking them
    # from B, which gave them back, is told they were free.
    assert sorted(taken["b"]) == sorted((shard, True) for shard in held_by_a)
    c = ClaimedReader(
        table,
        streams,
        arn,
        "test",
        "c",
        third.on_batch,
        lease_seconds=1.5,
        on_claim=lambda shard, over: taken["c"].append((shard, over)),
    )
    c.genesis = 0.0
    await c.look()
    assert c.held == held_by_a
    assert sorted(taken["c"]) == sorted((shard, False) for shard in held_by_a)
    await c.release()


def test_erasure_events_only_on_the_move_to_done() -> None:
    key = {"PK": {"S": "ERASURE#r1"}, "SK": {"S": "ERASURE"}}

    def change(old: str | None, new: str | None) -> Change:
        def image(state: str | None) -> dict[str, Any] | None:
            if state is None:
                return None
            return {
                **key,
                "requestId": {"S": "r1"},
                "mode": {"S": "ANONYMIZE"},
                "state": {"S": state},
                "counts": {"M": {"replies": {"N": "3"}}},
            }

        kind = "INSERT" if old is None else "MODIFY"
        return Change(kind, key, image(old), image(new), "42", "s", 1_700_000_000.0)  # type: ignore[arg-type]

    done = webhook_event(change("RUNNING", "DONE"))
    assert done is not None
    assert done.type is EventType.AUTHOR_ERASED
    assert done.scope == "*"
    assert done.data == {"requestId": "r1", "mode": "ANONYMIZE", "counts": {"replies": 3}}
    assert webhook_event(change(None, "DONE")) is not None
    assert webhook_event(change(None, "RUNNING")) is None
    assert webhook_event(change("RUNNING", "RUNNING")) is None
    assert webhook_event(change("DONE", "DONE")) is None
    # The same change read by two processes makes the same id; another change another.
    assert webhook_event(change("RUNNING", "DONE")) == done
    other = Change("MODIFY", key, None, None, "43", "s")
    assert webhook_event(other) is None


async def test_changes_of_lease_items_alone_move_no_checkpoint(
    client: DynamoClient, streams: Any
) -> None:
    """A checkpoint is a write the reader reads back: moved for that change alone, it
    would write again at every poll, for ever (and two readers would feed each other)."""
    table, arn = await streamed_table(client)
    got = Collect()
    reader = ClaimedReader(table, streams, arn, "quiet", "a", got.on_batch, lease_seconds=30)
    reader.genesis = 0.0
    await reader.look()
    await create_comment(table, NewComment("cq", "en", 5, "c", "u"))
    async with asyncio.timeout(20):
        while not got.published:
            await reader.step()
            await asyncio.sleep(0.05)

    async def checkpoints() -> set[str]:
        found = set()
        for shard in reader.held:
            item = await client.get_item(
                TableName=table.name, Key=lease_key("quiet", shard), ConsistentRead=True
            )
            found.add(item["Item"].get("checkpoint", {}).get("S", ""))
        return found

    moved = await checkpoints()
    for _ in range(10):  # the checkpoint's own change is read among these
        await reader.step()
        await asyncio.sleep(0.05)
    assert await checkpoints() == moved


class Trimmed:
    """A stream whose records past the checkpoint were trimmed: the first read says so."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.trimmed = True

    async def get_records(self, **request: Any) -> Any:
        if self.trimmed:
            self.trimmed = False
            error = {"Error": {"Code": "TrimmedDataAccessException", "Message": "trimmed"}}
            raise ClientError(error, "GetRecords")
        return await self.inner.get_records(**request)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


async def test_records_trimmed_before_they_were_read_are_a_gap_of_that_shard(
    client: DynamoClient, streams: Any
) -> None:
    table, arn = await streamed_table(client)
    gaps: list[tuple[str, str]] = []
    reader = ClaimedReader(
        table,
        Trimmed(streams),
        arn,
        "test",
        "a",
        Collect().on_batch,
        on_gap=lambda shard, reason: gaps.append((shard, reason)),
    )
    reader.genesis = 0.0
    await reader.look()
    assert reader.held
    await reader.step()
    assert gaps == [(shard, "changes trimmed before they were read") for shard in reader.held]
    await reader.release()
