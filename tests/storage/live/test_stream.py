"""Following the table's stream on DynamoDB Local: comment events in order, exactly once,
fresh counters, and an expired iterator renewed without losing or repeating a change."""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

from botocore.exceptions import ClientError

from storage.base.types import DynamoClient
from storage.engine.table import TableRef
from storage.live.events import (
    CommentChange,
    EventKind,
    Listing,
    classify,
    comment_change,
    fresh_counts,
)
from storage.live.stream import Change, StreamFollower
from storage.model.comments import NewComment, RatingCounts
from storage.model.indexes import STREAM_SPECIFICATION, table_definition
from storage.reads.reader import get_counts
from storage.writes import create_comment, delete_comment
from storage.writes.edit import Edit, edit_comment
from tests.helpers import FAST, stamp


async def _streamed_table(client: DynamoClient) -> tuple[TableRef, str]:
    """A table of the project's shape with its stream on, of its own (so that its stream
    holds only this test's changes); no TTL: DynamoDB Local keeps a thread per table with TTL, and
    the suite's engine has enough of those."""
    name = f"stream_{uuid.uuid4().hex[:10]}"
    definition = table_definition(name)
    assert definition["StreamSpecification"] == STREAM_SPECIFICATION  # on by default
    await client.create_table(**definition)
    for _ in range(200):
        described = (await client.describe_table(TableName=name))["Table"]
        statuses = [described["TableStatus"]]
        statuses += [g["IndexStatus"] for g in described.get("GlobalSecondaryIndexes", [])]
        if all(s == "ACTIVE" for s in statuses):
            return TableRef(client, name), described["LatestStreamArn"]
        await asyncio.sleep(0.05)
    raise AssertionError("the table did not become active")


async def _drain(follower: StreamFollower, quiet_polls: int = 3) -> list[Change]:
    """Every change until the stream has been quiet for a few polls."""
    out: list[Change] = []
    quiet = 0
    async for batch in follower.batches():
        out.extend(batch)
        quiet = 0 if batch else quiet + 1
        if quiet >= quiet_polls:
            return out
    return out


async def test_comment_events_arrive_in_order_exactly_once(
    client: DynamoClient, streams: Any
) -> None:
    table, arn = await _streamed_table(client)
    before = await create_comment(
        table, NewComment("s-1", "en", 4, "before the start", "u0", created_at=stamp(0))
    )
    follower = StreamFollower(streams, arn, poll_seconds=0.05)
    await follower.start()
    made = (
        await create_comment(table, NewComment("s-1", "en", 2, "hello", "u1", created_at=stamp(1)))
    ).comment
    await edit_comment(table, made.comment_id, Edit(body="hello again"), author_id="u1")
    await edit_comment(table, made.comment_id, Edit(rating=5), author_id="u1")
    await delete_comment(table, made.comment_id, backoff=FAST)
    changes = await _drain(follower)
    events = [e for e in map(comment_change, changes) if e is not None]
    everything = Listing("s-1")
    assert [(classify(e, everything), e.comment_id) for e in events] == [
        (EventKind.PUBLISHED, made.comment_id),
        (EventKind.EDITED, made.comment_id),
        (EventKind.EDITED, made.comment_id),
        (EventKind.REMOVED, made.comment_id),
    ]
    assert events[1].after is not None
    assert events[1].after.body == "hello again"
    assert events[2].after is not None
    assert events[2].after.rating == 5
    assert events[3].after is None  # deleted
    # To a listing of the low ratings, the edit to 5 stars takes the comment out of it.
    low = Listing("s-1", ratings=frozenset({1, 2, 3}))
    assert [classify(e, low) for e in events] == [
        EventKind.PUBLISHED,
        EventKind.EDITED,
        EventKind.REMOVED,
        None,
    ]
    # Each change carries when DynamoDB wrote it.
    assert all(e.written_at is not None for e in events)
    # Nothing of what came before the follower started.
    assert before.comment.comment_id not in {e.comment_id for e in events}
    # The last counters the stream carried for the product are the stored ones.
    last: dict[tuple[str, str | None], RatingCounts] = {}
    for change in changes:
        counts = fresh_counts(change)
        if counts is not None:
            last[(counts.product_id, counts.language)] = counts
    assert last[("s-1", None)] == await get_counts(table, "s-1", None)
    assert last[("s-1", "en")] == await get_counts(table, "s-1", "en")


class _Expiring:
    """A streams client whose iterators expire once, after the first records were read."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.expired = False
        self.read_any = False

    async def get_records(self, **kwargs: Any) -> Any:
        if self.read_any and not self.expired:
            self.expired = True
            raise ClientError(
                {"Error": {"Code": "ExpiredIteratorException", "Message": "expired"}},
                "GetRecords",
            )
        response = await self.inner.get_records(**kwargs)
        self.read_any = self.read_any or bool(response.get("Records"))
        return response

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


async def test_an_expired_iterator_goes_on_after_the_last_change_read(
    client: DynamoClient, streams: Any
) -> None:
    table, arn = await _streamed_table(client)
    expiring = _Expiring(streams)
    gaps: list[str] = []
    follower = StreamFollower(expiring, arn, poll_seconds=0.05, on_gap=gaps.append)
    await follower.start()
    ids = []
    for n in range(3):
        new = NewComment("s-2", "en", 3, f"c{n}", f"u{n}", created_at=stamp(n))
        ids.append((await create_comment(table, new)).comment.comment_id)
    first = await _drain(follower)
    for n in range(3, 6):
        new = NewComment("s-2", "en", 3, f"c{n}", f"u{n}", created_at=stamp(n))
        ids.append((await create_comment(table, new)).comment.comment_id)
    second = await _drain(follower)
    assert expiring.expired
    assert gaps == []
    events: list[CommentChange] = [e for e in map(comment_change, first + second) if e is not None]
    assert [e.comment_id for e in events] == ids
    sequences = [c.sequence for c in first + second]
    assert len(sequences) == len(set(sequences))
