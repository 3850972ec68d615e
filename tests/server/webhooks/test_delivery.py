"""Webhooks end to end in one process, on DynamoDB Local: the stream read by claimed
readers, events numbered per product, delivered signed, in order, once, by two workers."""

from __future__ import annotations

import asyncio
import json
from collections import defaultdict
from dataclasses import replace
from typing import Any

import pytest

from server.cli import main
from server.dev.local_engine import LocalEngine
from storage.base.types import DynamoClient
from storage.model.comments import NewComment
from storage.model.erasure import Mode
from storage.model.webhooks import EventType
from storage.ops.erasure import run_erasure, start_erasure
from storage.reads.webhooks import failed_deliveries
from storage.writes import create_comment, delete_comment
from storage.writes.edit import Edit, edit_comment
from storage.writes.moderate import Decision, moderate_comment
from storage.writes.reply import reply_to_comment
from testing.webhook_receiver import Received, Receiver
from tests.helpers import FAST as WRITE_FAST
from tests.server.webhooks.rig import FAST, endpoint, streamed_table, workers


def by_product(got: list[Received]) -> dict[str | None, list[int]]:
    out: dict[str | None, list[int]] = defaultdict(list)
    for r in got:
        out[r.product].append(r.sequence)
    return out


async def test_signed_events_arrive_once_in_order_per_product(
    client: DynamoClient, streams: Any
) -> None:
    table, arn = await streamed_table(client)
    async with Receiver() as receiver:
        _, secret = await endpoint(table, receiver.url)
        receiver.secret = secret
        async with workers(table, streams, arn, n=2):
            a = (await create_comment(table, NewComment("pa", "en", 4, "one", "u1"))).comment
            b = (await create_comment(table, NewComment("pb", "en", 1, "two", "u2"))).comment
            await edit_comment(table, a.comment_id, Edit(body="one, edited"), author_id="u1")
            await reply_to_comment(table, a.comment_id, "thanks", merchant_name="shop")
            await moderate_comment(table, b.comment_id, Decision.REJECT, moderator="m")
            await delete_comment(table, a.comment_id, backoff=WRITE_FAST)
            await asyncio.wait_for(receiver.wait_for(lambda got: len(got) >= 6, 20), 25)
            await asyncio.sleep(0.3)  # nothing more comes
    got = receiver.got
    assert all(r.verified for r in got)
    assert len({r.message_id for r in got}) == len(got) == 6
    assert all(r.message_id.startswith("msg_") for r in got)
    assert by_product(got) == {"pa": [1, 2, 3, 4], "pb": [1, 2]}
    kinds = [r.body["type"] for r in got if r.product == "pa"]
    assert kinds == [
        EventType.COMMENT_PUBLISHED.value,
        EventType.COMMENT_UPDATED.value,
        EventType.COMMENT_REPLIED.value,
        EventType.COMMENT_REMOVED.value,
    ]
    first = next(r for r in got if r.product == "pa")
    assert first.body["data"]["commentId"] == a.comment_id
    assert first.body["data"]["rating"] == 4
    assert first.body["data"]["previousSequence"] is None
    assert {"webhook-id", "webhook-timestamp", "webhook-signature"} <= set(first.headers)
    assert first.headers["webhook-signature"].startswith("v1,")


async def test_a_receiver_down_for_a_while_gets_everything_in_order_after(
    client: DynamoClient, streams: Any
) -> None:
    table, arn = await streamed_table(client)
    down = {"503s": 0}

    def answer(received: Received) -> int:
        if down["503s"] < 12:  # down for its first dozen attempts, whatever they carry
            down["503s"] += 1
            return 503
        return 200

    async with Receiver(answer=answer) as receiver:
        await endpoint(table, receiver.url)
        async with workers(table, streams, arn, n=2):
            for i in range(4):
                for product in ("da", "db"):
                    await create_comment(table, NewComment(product, "en", 5, f"c{i}", f"u{i}"))
            await asyncio.wait_for(receiver.wait_for(lambda got: len(got) >= 8, 30), 35)
    assert down["503s"] == 12
    assert by_product(receiver.got) == {"da": [1, 2, 3, 4], "db": [1, 2, 3, 4]}


async def test_a_failing_lane_holds_up_only_its_own_product(
    client: DynamoClient, streams: Any
) -> None:
    table, arn = await streamed_table(client)

    def answer(received: Received) -> int:
        return 500 if received.product == "stuck" else 200

    async with Receiver(answer=answer) as receiver:
        await endpoint(table, receiver.url)
        async with workers(table, streams, arn, n=2):
            await create_comment(table, NewComment("stuck", "en", 5, "first", "u0"))
            for i in range(3):
                await create_comment(table, NewComment("free", "en", 5, f"c{i}", f"u{i}"))
            await create_comment(table, NewComment("stuck", "en", 5, "second", "u9"))
            await asyncio.wait_for(receiver.wait_for(lambda got: len(got) >= 3, 20), 25)
            # The stuck lane keeps trying its first event, never its second.
            await asyncio.wait_for(
                receiver.wait_for(
                    lambda got: sum(a.product == "stuck" for a in receiver.attempts) >= 3, 20
                ),
                25,
            )
    assert by_product(receiver.got) == {"free": [1, 2, 3]}
    stuck = [a.sequence for a in receiver.attempts if a.product == "stuck"]
    assert set(stuck) == {1}


async def test_filters_and_the_erasure_event(client: DynamoClient, streams: Any) -> None:
    table, arn = await streamed_table(client)
    async with Receiver() as low, Receiver() as erasures:
        await endpoint(table, low.url, ratings=frozenset({1}))
        await endpoint(table, erasures.url, events=frozenset({EventType.AUTHOR_ERASED}))
        async with workers(table, streams, arn, n=2):
            await create_comment(table, NewComment("fa", "en", 5, "great", "u1"))
            await create_comment(table, NewComment("fa", "en", 1, "awful", "u2"))
            job = {"PK": {"S": "ERASURE#req-1"}, "SK": {"S": "ERASURE"}}
            await client.put_item(
                TableName=table.name,
                Item={
                    **job,
                    "requestId": {"S": "req-1"},
                    "mode": {"S": "DELETE"},
                    "state": {"S": "RUNNING"},
                },
            )
            await client.put_item(
                TableName=table.name,
                Item={
                    **job,
                    "requestId": {"S": "req-1"},
                    "mode": {"S": "DELETE"},
                    "state": {"S": "DONE"},
                    "counts": {"M": {"comments": {"N": "2"}, "votes": {"N": "1"}}},
                },
            )
            await asyncio.wait_for(low.wait_for(lambda got: len(got) >= 2, 20), 25)
            await asyncio.wait_for(erasures.wait_for(lambda got: len(got) >= 1, 20), 25)
            await asyncio.sleep(0.3)
    # Only the 1-star review (its number says the product had one event before it), and
    # the shop-wide event, which product and rating filters do not hold back.
    reviews = [(r.body["data"]["rating"], r.sequence) for r in low.got if r.product == "fa"]
    assert reviews == [(1, 2)]
    assert [r.body["type"] for r in low.got if r.product is None] == ["author.erased"]
    assert [r.body["type"] for r in erasures.got] == ["author.erased"]
    data = erasures.got[0].body["data"]
    assert data["requestId"] == "req-1"
    assert data["mode"] == "DELETE"
    assert data["counts"] == {"comments": 2, "votes": 1}
    assert data["sequence"] == 1
    assert "productId" not in data


async def test_a_real_erasure_is_announced_once_with_its_comments_removed(
    client: DynamoClient, streams: Any
) -> None:
    """The erasure feature's own job, run to its end, as the shop's endpoint sees it: each
    erased comment leaves its product's listing, then one shop-wide announcement whose
    request id and counts are the job's."""
    table, arn = await streamed_table(client)
    wanted = frozenset({EventType.COMMENT_REMOVED, EventType.AUTHOR_ERASED})
    async with Receiver() as shop:
        await endpoint(table, shop.url, events=wanted)
        async with workers(table, streams, arn, n=2):
            gone = [
                await create_comment(table, NewComment(p, "en", 4, "mine", "leaving"))
                for p in ("fx", "fy")
            ]
            await create_comment(table, NewComment("fx", "en", 2, "stays", "staying"))
            job = await start_erasure(table, "leaving", Mode.DELETE)
            done = await asyncio.wait_for(run_erasure(table, job.request_id), 25)
            assert done.done
            await asyncio.wait_for(shop.wait_for(lambda got: len(got) >= 3, 20), 25)
            await asyncio.sleep(0.3)  # nothing more comes
    removed = sorted(r.body["data"]["commentId"] for r in shop.got if r.product is not None)
    assert removed == sorted(c.comment.comment_id for c in gone)
    announced = [r.body for r in shop.got if r.product is None]
    assert [a["type"] for a in announced] == ["author.erased"]
    assert announced[0]["data"]["requestId"] == job.request_id
    assert announced[0]["data"]["mode"] == "DELETE"
    assert announced[0]["data"]["counts"] == dict(done.counts)
    assert announced[0]["data"]["counts"]["comments"] == 2
    assert "leaving" not in json.dumps([r.body for r in shop.got])


async def test_given_up_after_the_horizon_then_listed_and_replayed(
    client: DynamoClient, streams: Any, engine: LocalEngine, capsys: pytest.CaptureFixture[str]
) -> None:
    table, arn = await streamed_table(client)
    up = {"now": False}
    async with Receiver(answer=lambda r: 200 if up["now"] else 500) as receiver:
        made, _ = await endpoint(table, receiver.url)
        short = replace(FAST, horizon_seconds=0.3)
        async with workers(table, streams, arn, n=1, tuning=short):
            for i in range(2):
                await create_comment(table, NewComment("gone", "en", 3, f"c{i}", f"u{i}"))
            async with asyncio.timeout(20):
                while len(await failed_deliveries(table, made.endpoint_id)) < 2:  # noqa: ASYNC110
                    await asyncio.sleep(0.1)
        assert receiver.got == []
        argv = ["--endpoint", made.endpoint_id, "--endpoint-url", engine.endpoint_url]
        argv += ["--table", table.name]
        listed = await asyncio.to_thread(main, ["webhooks", "list-failed", *argv])
        assert listed == 0
        lines = capsys.readouterr().out.splitlines()
        assert [line.split("\t")[:2] for line in lines] == [["gone", "1"], ["gone", "2"]]
        up["now"] = True
        replayed = await asyncio.to_thread(main, ["webhooks", "replay", *argv])
        assert replayed == 0
    assert by_product(receiver.got) == {"gone": [1, 2]}
    assert await failed_deliveries(table, made.endpoint_id) == []
