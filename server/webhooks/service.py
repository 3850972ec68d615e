"""The webhook worker of one process, started and stopped with its lifespan: the claimed
stream reader that writes events (``outbox``) and the deliverer (``delivery``), sharing
one owner name (host, pid and a random part: unique per start)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from contextlib import AsyncExitStack
from typing import TYPE_CHECKING, Any

from resolvers.webhook_rules import WebhookRules
from server.observability import metrics
from server.tasks import cancel_and_wait, stream_when_on
from server.webhooks.delivery import Deliverer
from server.webhooks.outbox import Outbox
from server.webhooks.transport import Lookups, Refused, Sender, resolve_checked
from storage.engine.table import TableRef
from storage.live.claimed import ClaimedReader

if TYPE_CHECKING:
    from server.settings import Settings

log = logging.getLogger("comments.webhooks")

READER = "webhooks"


async def start_webhooks(
    stack: AsyncExitStack, table: TableRef, streams: Any, settings: Settings, owner: str
) -> None:
    """Run the worker until the stack closes (its leases are given back then)."""
    sender = Sender(
        settings.webhook_policy,
        connect_seconds=settings.webhook_connect_seconds,
        read_seconds=settings.webhook_read_seconds,
    )
    stack.push_async_callback(sender.aclose)
    tuning = settings.delivery_tuning
    deliverer = Deliverer(table, owner, sender, tuning, on_outcome=metrics.webhook_delivery)
    outbox = Outbox(table)

    async def read() -> None:
        arn = await stream_when_on(
            table, "webhooks", "the table has no stream; no events are written"
        )
        reader = ClaimedReader(
            table,
            streams,
            arn,
            READER,
            owner,
            outbox.on_batch,
            lease_seconds=tuning.lease_seconds,
            poll_seconds=settings.stream_poll_seconds,
            on_gap=events_lost,
        )
        await reader.run()

    def events_lost(shard_id: str, reason: str) -> None:
        # Their events can never be written: said loudly and counted (CommentsStreamGaps),
        # since receivers will see a hole in those products' sequence numbers.
        log.error("webhooks: shard %s: %s; their events are lost", shard_id, reason)
        metrics.stream_gaps()

    async def keep(what: str, run: Callable[[], Awaitable[None]]) -> None:
        while True:
            try:
                await run()
            except asyncio.CancelledError:
                raise
            except Exception:  # the worker must outlive what fails it; said, then again
                log.exception("webhooks: the %s failed; starting it again", what)
                await asyncio.sleep(tuning.poll_seconds * 10)

    tasks = [
        asyncio.create_task(keep("stream reader", read)),
        asyncio.create_task(keep("deliverer", deliverer.run)),
    ]

    async def stop() -> None:
        await cancel_and_wait(tasks)

    stack.push_async_callback(stop)
    log.info("webhooks: worker %s started", owner)


def endpoint_rules(settings: Settings) -> WebhookRules:
    """The rules registration checks an endpoint's URL by: the delivery's own (the host
    resolved, every address checked), so what is refused at delivery is refused here."""
    policy = settings.webhook_policy
    # Threads of their own: a merchant's name whose server never answers holds these, not
    # the threads the DynamoDB client's lookups wait for.
    lookups = Lookups()

    async def check_url(url: str) -> str | None:
        try:
            await resolve_checked(url, policy, lookups)
        except Refused as exc:
            return str(exc)
        return None

    return WebhookRules(check_url=check_url, grace_seconds=settings.webhook_secret_grace_seconds)
