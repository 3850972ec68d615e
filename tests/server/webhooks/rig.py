"""A table with its stream, and webhook workers (a claimed reader and a deliverer each)
running in this process, for the webhook tests."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager, suppress
from dataclasses import dataclass
from typing import Any

from server.webhooks.delivery import Deliverer, DeliveryTuning
from server.webhooks.outbox import Outbox
from server.webhooks.transport import Policy, Sender
from storage.base.types import DynamoClient
from storage.engine.table import TableRef
from storage.live.claimed import ClaimedReader
from storage.model.indexes import table_definition
from storage.model.webhooks import Endpoint, EventType, SecretEntry, new_endpoint_id, new_secret
from storage.writes.webhook_endpoints import create_endpoint

FAST = DeliveryTuning(
    concurrency=8,
    per_endpoint=4,
    lease_seconds=5.0,
    poll_seconds=0.05,
    retry_base_seconds=0.05,
    retry_max_seconds=0.3,
    horizon_seconds=3600.0,
)
DEV = Policy(allow_loopback=True, allow_http=True)


async def streamed_table(client: DynamoClient) -> tuple[TableRef, str]:
    name = f"hooks_{uuid.uuid4().hex[:10]}"
    await client.create_table(**table_definition(name))
    for _ in range(400):
        described = (await client.describe_table(TableName=name))["Table"]
        statuses = [described["TableStatus"]]
        statuses += [g["IndexStatus"] for g in described.get("GlobalSecondaryIndexes", [])]
        if all(s == "ACTIVE" for s in statuses):
            return TableRef(client, name), described["LatestStreamArn"]
        await asyncio.sleep(0.05)
    raise AssertionError("the table did not become active")


async def endpoint(
    table: TableRef, url: str, secret: str | None = None, **filters: Any
) -> tuple[Endpoint, str]:
    secret = secret or new_secret()
    made = Endpoint(
        endpoint_id=new_endpoint_id(),
        url=url,
        events=filters.pop("events", frozenset(EventType)),
        secrets=(SecretEntry(secret),),
        created_at="2026-01-01T00:00:00Z",
        **filters,
    )
    return await create_endpoint(table, made), secret


@dataclass(slots=True)
class Worker:
    reader: ClaimedReader
    deliverer: Deliverer
    outbox: Outbox
    tasks: list[asyncio.Task[None]]


@asynccontextmanager
async def workers(
    table: TableRef,
    streams: Any,
    arn: str,
    n: int = 2,
    *,
    tuning: DeliveryTuning = FAST,
    policy: Policy = DEV,
    genesis: float = 0.0,
) -> AsyncIterator[list[Worker]]:
    """``n`` workers as separate owners sharing the table, stopped when the block ends."""
    running: list[Worker] = []
    senders: list[Sender] = []
    try:
        for i in range(n):
            owner = f"test-{i}-{uuid.uuid4().hex[:6]}"
            outbox = Outbox(table)
            reader = ClaimedReader(
                table,
                streams,
                arn,
                "webhooks",
                owner,
                outbox.on_batch,
                lease_seconds=tuning.lease_seconds,
                poll_seconds=0.05,
                genesis=genesis,
            )
            sender = Sender(policy, connect_seconds=1.0, read_seconds=1.0)
            senders.append(sender)
            deliverer = Deliverer(table, owner, sender, tuning)
            tasks = [asyncio.create_task(reader.run()), asyncio.create_task(deliverer.run())]
            running.append(Worker(reader, deliverer, outbox, tasks))
        yield running
    finally:
        for worker in running:
            for task in worker.tasks:
                task.cancel()
            for task in worker.tasks:
                with suppress(asyncio.CancelledError):
                    await asyncio.wait_for(task, 10)
        for sender in senders:
            await sender.aclose()
