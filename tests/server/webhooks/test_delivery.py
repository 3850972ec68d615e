"""Webhooks end to end in one process, on DynamoDB Local: the stream read by claimed
readers, events numbered per product, delivered signed, in order, once, by two workers."""

from __future__ import annotations

import asyncio
from collections import defaultdict
from typing import Any

from storage.base.types import DynamoClient
from storage.model.comments import NewComment
from storage.model.webhooks import EventType
from storage.writes import create_comment, delete_comment
from storage.writes.edit import Edit, edit_comment
from storage.writes.moderate import Decision, moderate_comment
from storage.writes.reply import reply_to_comment
from testing.webhook_receiver import Received, Receiver
from tests.helpers import FAST as WRITE_FAST
from tests.server.webhooks.rig import endpoint, streamed_table, workers


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
