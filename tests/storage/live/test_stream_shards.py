"""The follower against a stream whose shards split, close and lose records, as DynamoDB's
do (DynamoDB Local keeps one shard, so a model of the service stands in for it): children
are found and read from their start, nothing is lost or repeated, closed shards at start are
skipped, and lost records are reported, never hidden."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest
from botocore.exceptions import ClientError

from storage.live import stream
from storage.live.stream import Change, StreamFollower


@dataclass
class _Shard:
    records: list[str] = field(default_factory=list)
    closed: bool = False
    parent: str | None = None
    trimmed: int = 0  # records before this index are gone


@dataclass
class _Streams:
    """DynamoDB Streams' read API over shards of sequence numbers (one per record)."""

    shards: dict[str, _Shard] = field(default_factory=dict)
    expire_next: bool = False
    page: int = 1  # shards per DescribeStream answer

    def write(self, shard_id: str, sequence: str) -> None:
        self.shards[shard_id].records.append(sequence)

    async def describe_stream(self, **request: Any) -> Any:
        ids = list(self.shards)
        start = 0
        if "ExclusiveStartShardId" in request:
            start = ids.index(request["ExclusiveStartShardId"]) + 1
        chosen = ids[start : start + self.page]
        shards = []
        for shard_id in chosen:
            shard = self.shards[shard_id]
            span: dict[str, str] = {"StartingSequenceNumber": "0"}
            if shard.closed:
                span["EndingSequenceNumber"] = "9"
            entry: dict[str, Any] = {"ShardId": shard_id, "SequenceNumberRange": span}
            if shard.parent:
                entry["ParentShardId"] = shard.parent
            shards.append(entry)
        description: dict[str, Any] = {"Shards": shards}
        if start + self.page < len(ids):
            description["LastEvaluatedShardId"] = chosen[-1]
        return {"StreamDescription": description}

    async def get_shard_iterator(self, **request: Any) -> Any:
        shard = self.shards[request["ShardId"]]
        kind = request["ShardIteratorType"]
        if kind == "LATEST":
            position = len(shard.records)
        elif kind == "TRIM_HORIZON":
            position = shard.trimmed
        else:
            position = shard.records.index(request["SequenceNumber"]) + 1
        return {"ShardIterator": f"{request['ShardId']}:{position}"}

    async def get_records(self, **request: Any) -> Any:
        shard_id, at = request["ShardIterator"].rsplit(":", 1)
        position = int(at)
        shard = self.shards[shard_id]
        if self.expire_next:
            self.expire_next = False
            raise ClientError({"Error": {"Code": "ExpiredIteratorException"}}, "GetRecords")
        if position < shard.trimmed:
            raise ClientError({"Error": {"Code": "TrimmedDataAccessException"}}, "GetRecords")
        taken = shard.records[position : position + request["Limit"]]
        end = position + len(taken)
        records = [
            {"eventName": "INSERT", "dynamodb": {"Keys": {}, "SequenceNumber": s}} for s in taken
        ]
        answer: dict[str, Any] = {"Records": records}
        if not (shard.closed and end == len(shard.records)):
            answer["NextShardIterator"] = f"{shard_id}:{end}"
        return answer


async def _poll(follower: StreamFollower, times: int = 3) -> list[Change]:
    out: list[Change] = []
    batches = follower.batches()
    for _ in range(times):
        out.extend(await anext(batches))
    return out


async def test_a_split_shard_is_followed_into_its_children_without_loss() -> None:
    streams = _Streams({"old": _Shard(["o1"], closed=True), "a": _Shard(["a0"])})
    follower = StreamFollower(streams, "arn", poll_seconds=0, rediscover_seconds=3600)
    await follower.start()
    # Closed at start: skipped; open: from LATEST (a0 came before the start).
    streams.write("a", "a1")
    first = await _poll(follower, 1)
    assert [c.sequence for c in first] == ["a1"]
    # "a" splits: its last records, then it closes; its children take the writes.
    streams.write("a", "a2")
    streams.shards["a"].closed = True
    streams.shards["b"] = _Shard(["b1", "b2"], parent="a")
    streams.shards["c"] = _Shard(["c1"], parent="a")
    later = await _poll(follower, 3)
    sequences = [c.sequence for c in later]
    assert sorted(sequences) == ["a2", "b1", "b2", "c1"]
    assert sequences.index("a2") < sequences.index("b1")  # a parent's before its child's
    assert len(sequences) == len(set(sequences))


async def test_a_shard_list_over_several_pages_is_read_whole() -> None:
    streams = _Streams({f"s{n}": _Shard() for n in range(5)}, page=2)
    follower = StreamFollower(streams, "arn", poll_seconds=0)
    await follower.start()
    for n in range(5):
        streams.write(f"s{n}", f"x{n}")
    got = await _poll(follower, 1)
    assert sorted(c.sequence for c in got) == [f"x{n}" for n in range(5)]


async def test_lost_records_are_reported_and_reading_goes_on() -> None:
    streams = _Streams({"a": _Shard()})
    gaps: list[str] = []
    follower = StreamFollower(streams, "arn", poll_seconds=0, on_gap=gaps.append)
    await follower.start()
    # Expired before anything was read: cannot resume exactly, so reported.
    streams.expire_next = True
    await _poll(follower, 1)
    assert len(gaps) == 1
    assert "expired" in gaps[0]
    streams.write("a", "a1")
    assert [c.sequence for c in await _poll(follower, 1)] == ["a1"]
    # Records trimmed before they were read (a reader a day behind): reported, then read on
    # from the oldest record left.
    streams.write("a", "a2")
    streams.write("a", "a3")
    streams.shards["a"].trimmed = 2
    got = await _poll(follower, 2)
    assert len(gaps) == 2
    assert "trimmed" in gaps[1]
    assert [c.sequence for c in got] == ["a3"]


async def test_a_child_found_while_its_parent_is_read_waits_for_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # One record a call, and a look at the shard list on every poll: the child is listed
    # while its parent still has records to give.
    monkeypatch.setattr(stream, "RECORDS_PER_CALL", 1)
    streams = _Streams({"a": _Shard()})
    follower = StreamFollower(streams, "arn", poll_seconds=0, rediscover_seconds=0)
    await follower.start()
    for n in range(4):
        streams.write("a", f"a{n}")
    streams.shards["a"].closed = True
    streams.shards["b"] = _Shard(["b0", "b1"], parent="a")
    got = [c.sequence for c in await _poll(follower, 8)]
    assert got == ["a0", "a1", "a2", "a3", "b0", "b1"]
