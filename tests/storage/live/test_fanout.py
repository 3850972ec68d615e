"""The fan-out's messages, without a broker: what a publisher sends for a batch, and what
a receiver hands on or reports as a gap."""

from __future__ import annotations

import orjson
import pytest

from storage.live.fanout import Publisher, Receiver, relayed
from storage.live.stream import Change

COMMENT = {"PK": {"S": "COMMENT#c1"}, "SK": {"S": "COMMENT#c1"}}
STATS = {"PK": {"S": "PRODUCT#p"}, "SK": {"S": "S"}}
VOTE = {"PK": {"S": "COMMENT#c1"}, "SK": {"S": "VOTE#u"}}
LEASE = {"PK": {"S": "LEASE#fanout"}, "SK": {"S": "shard-1"}}


def _change(keys: dict[str, dict[str, str]], sequence: int, shard: str = "s1") -> Change:
    body = {**keys, "body": {"S": "x" * 100}}
    return Change("MODIFY", keys, body, body, str(sequence), shard, 1.0)


class Wire:
    def __init__(self) -> None:
        self.sent: list[bytes] = []

    async def publish(self, data: bytes) -> None:
        self.sent.append(data)


def _receiver() -> tuple[Receiver, list[str]]:
    gaps: list[str] = []
    return Receiver(gaps.append), gaps


async def test_only_what_consumers_read_is_published_and_numbered_without_holes() -> None:
    wire = Wire()
    publisher = Publisher("a", wire.publish)
    await publisher.on_batch([_change(VOTE, 1), _change(LEASE, 2)])
    assert wire.sent == []  # nothing a consumer reads: no message, no number taken
    await publisher.on_batch([_change(COMMENT, 3), _change(VOTE, 4), _change(STATS, 5)])
    (message,) = [orjson.loads(m) for m in wire.sent]
    assert (message["p"], message["n"], message["s"]) == ("a", 1, "s1")
    assert [row[4] for row in message["c"]] == ["3", "5"]
    # A stats item's counters come from its new image: the old one is not sent.
    assert message["c"][1][2] is None
    assert relayed(_change(VOTE, 1)) is None


async def test_a_large_batch_is_split_into_bounded_messages_in_order() -> None:
    wire = Wire()
    publisher = Publisher("a", wire.publish, max_bytes=1000)
    await publisher.on_batch([_change(COMMENT, n) for n in range(1, 21)])
    assert len(wire.sent) > 1
    assert all(len(m) <= 1000 + 600 for m in wire.sent)
    receiver, gaps = _receiver()
    taken = [c.sequence for m in wire.sent for c in receiver.take(m)]
    assert taken == [str(n) for n in range(1, 21)]
    assert gaps == []


async def test_a_hole_in_a_publishers_numbers_is_a_gap() -> None:
    wire = Wire()
    publisher = Publisher("a", wire.publish)
    for n in range(1, 4):
        await publisher.on_batch([_change(COMMENT, n)])
    receiver, gaps = _receiver()
    receiver.take(wire.sent[0])
    receiver.take(wire.sent[2])
    assert gaps == ["fan-out messages 2 to 2 of a were lost"]


async def test_a_shard_handed_to_another_publisher_is_a_gap_and_its_repeats_are_dropped() -> None:
    old, new = Wire(), Wire()
    await Publisher("a", old.publish).on_batch([_change(COMMENT, 1), _change(COMMENT, 2)])
    # The new holder reads again from the checkpoint: change 2 comes a second time.
    await Publisher("b", new.publish).on_batch([_change(COMMENT, 2), _change(COMMENT, 3)])
    receiver, gaps = _receiver()
    first = receiver.take(old.sent[0])
    second = receiver.take(new.sent[0])
    assert [c.sequence for c in first + second] == ["1", "2", "3"]
    assert gaps == ["shard s1 was handed from a to b"]
    assert receiver.duplicates == 1


async def test_a_reader_that_lost_changes_says_so_to_every_receiver_at_once() -> None:
    wire = Wire()
    publisher = Publisher("a", wire.publish)
    await publisher.on_batch([_change(COMMENT, 1)])
    await publisher.lost("s1", "changes trimmed before they were read")
    await publisher.on_batch([_change(COMMENT, 9)])
    receiver, gaps = _receiver()
    taken = [receiver.take(message) for message in wire.sent]
    assert [len(t) for t in taken] == [1, 0, 1]  # numbered in turn: no hole besides
    assert gaps == ["shard s1: its reader lost changes (changes trimmed before they were read)"]


async def test_other_shards_and_publishers_are_no_gap() -> None:
    a, b = Wire(), Wire()
    await Publisher("a", a.publish).on_batch([_change(COMMENT, 5, "s1")])
    await Publisher("b", b.publish).on_batch([_change(COMMENT, 1, "s2")])
    receiver, gaps = _receiver()
    assert len(receiver.take(a.sent[0]) + receiver.take(b.sent[0])) == 2
    assert gaps == []


@pytest.mark.parametrize(
    "data",
    [
        b"not json",
        b'{"p": "a", "n": 1}',
        b'{"p": "a", "n": 1, "s": "s1", "c": [["DROP", {}, null, null, "1", null]]}',
        b'{"p": "a", "n": 1, "s": "s1", "c": [["INSERT", {}, null, null, "x1", null]]}',
    ],
    ids=["not-json", "no-changes", "bad-kind", "bad-sequence"],
)
def test_a_message_that_cannot_be_read_is_a_gap(data: bytes) -> None:
    receiver, gaps = _receiver()
    assert receiver.take(data) == []
    assert gaps == ["a fan-out message could not be read"]
