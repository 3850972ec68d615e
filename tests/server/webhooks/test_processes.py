"""Two real server processes on one table with webhooks on: the process delivering an
event is killed (SIGKILL) while the receiver holds the request open, and the other
process delivers it after the lease runs out. Every event arrives; the killed one's
event at most twice; per-product numbers have no gap."""

from __future__ import annotations

import asyncio
import os
import signal
import time
import uuid
from contextlib import ExitStack
from typing import Any

from server.dev.local_engine import LocalEngine
from storage.engine.client import ClientSettings, open_client
from storage.engine.table import TableRef
from storage.model.comments import NewComment
from storage.model.webhooks import LANE_PREFIX
from storage.ops.create import create_table
from storage.writes import create_comment
from testing.live_server import live_server
from testing.webhook_receiver import Received, Receiver
from tests.server.webhooks.rig import endpoint

SECRET = "webhook-processes-secret-0123456789abcdef"
ENV = {
    "WEBHOOKS": "true",
    "LIVE_UPDATES": "true",
    "WEBHOOK_LEASE_SECONDS": "4.5",
    "WEBHOOK_CONNECT_SECONDS": "0.5",
    "WEBHOOK_READ_SECONDS": "1.5",
    "WEBHOOK_POLL_SECONDS": "0.1",
    "WEBHOOK_RETRY_BASE_SECONDS": "0.1",
    "WEBHOOK_RETRY_MAX_SECONDS": "0.5",
    "STREAM_POLL_SECONDS": "0.1",
    "SHUTDOWN_DELAY_SECONDS": "0",
}


async def _lane_owner(table: TableRef, endpoint_id: str, scope: str) -> str | None:
    found = await table.client.get_item(
        TableName=table.name,
        Key={"PK": {"S": LANE_PREFIX + endpoint_id}, "SK": {"S": scope}},
        ConsistentRead=True,
    )
    owner = found.get("Item", {}).get("owner", {}).get("S")
    return owner if isinstance(owner, str) else None


async def test_a_process_killed_mid_delivery_hands_the_event_on(engine: LocalEngine) -> None:
    name = f"hookprocs_{uuid.uuid4().hex[:8]}"
    hung: dict[str, Any] = {"id": None, "killed": False}

    def answer(received: Received) -> int | None:
        # Every attempt at the second event of product k1 gets no answer until the process
        # delivering it is killed (one that timed out meanwhile is retried, and hangs too).
        if received.product == "k1" and received.sequence == 2 and not hung["killed"]:
            hung["id"] = received.message_id
            return None
        return 200

    async with open_client(ClientSettings(endpoint_url=engine.endpoint_url)) as client:
        await create_table(client, name, stream=True)
        table = TableRef(client, name)
        async with Receiver(answer=answer) as receiver:
            made, secret = await endpoint(table, receiver.url)
            receiver.secret = secret
            with ExitStack() as stack:
                servers = await asyncio.gather(
                    *(
                        asyncio.to_thread(
                            stack.enter_context,
                            live_server(engine.endpoint_url, name, SECRET, log=None, **ENV),
                        )
                        for _ in range(2)
                    )
                )
                for i in range(3):
                    for product in ("k1", "k2"):
                        await create_comment(
                            table, NewComment(product, "en", 4, f"c{i}", f"a{i}{product}")
                        )
                await asyncio.wait_for(
                    receiver.wait_for(lambda got: hung["id"] is not None, 30), 35
                )
                owner = None
                async with asyncio.timeout(20):
                    while owner is None:  # held while in flight; not while backing off
                        owner = await _lane_owner(table, made.endpoint_id, "k1")
                        await asyncio.sleep(0.02)
                pid = int(owner.split(":")[1])
                assert pid in {s.pid for s in servers}
                killed_at = time.time()
                os.kill(pid, signal.SIGKILL)
                hung["killed"] = True
                await asyncio.wait_for(receiver.wait_for(lambda got: len(got) >= 6, 40), 45)
                await asyncio.sleep(0.5)  # nothing more comes
    got = receiver.got
    assert all(r.verified for r in got)
    # Each event taken, in each product's order, and again only when the killed process
    # had it in flight: another product's delivery it made and was killed before recording
    # is sent again by the other process (at least once), nothing else is.
    first: dict[str, Received] = {}
    for r in got:
        if r.message_id in first:
            assert first[r.message_id].at < killed_at, f"{r.message_id} taken twice"
        first.setdefault(r.message_id, r)
    per_product: dict[str | None, list[int]] = {}
    for r in first.values():
        per_product.setdefault(r.product, []).append(r.sequence)
    assert per_product == {"k1": [1, 2, 3], "k2": [1, 2, 3]}
    assert len(first) == 6
    assert len(got) - len(first) <= 1  # one lane besides the hung one was in flight, at most
    # The hung event (its request never answered) was sent again by the other process.
    assert [a.message_id for a in receiver.attempts].count(hung["id"]) >= 2
