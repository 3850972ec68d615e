"""The fan-out of one process, started and stopped with its lifespan (``FANOUT_URL``): a
claimed stream reader whose shards' changes it publishes on the broker, and the
subscription that hands every process's changes to its feed (``storage.live.fanout``).

Why Redis pub/sub: every process needs every change once, within a fraction of a second,
and nothing after a gap but the knowledge that there was one (its subscribers reload).
Pub/sub does exactly that, on a broker that costs one small node (ElastiCache's smallest
nodes, a few tens of dollars a month) and a millisecond a hop; Kinesis Data Streams for
DynamoDB with enhanced fan-out would replace the claimed reader, but charges per shard
hour, per consumer (each process) per shard hour and per GB read by each, grows with the
processes, and needs each process to be a registered consumer (about 20 per stream).

The broker's connection is watched: lost, or made again (redis-py makes it again by
itself), it is a gap, never silence. While it is down the feed is not following
(subscriptions are refused as when the stream is unreachable) and the process is still
ready: it serves queries from the table, its snapshot dropped at every failed attempt.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Sequence
from contextlib import AsyncExitStack, suppress
from typing import TYPE_CHECKING, Any

from redis.asyncio import Redis
from redis.asyncio.client import PubSub
from redis.asyncio.connection import Connection

from server.http.answers import AnswerCache
from server.listeners import Listeners
from server.observability import metrics
from server.purging.service import Purging
from server.tasks import cancel_and_wait, stream_when_on
from storage.live.claimed import ClaimedReader
from storage.live.fanout import Publisher, Receiver
from storage.live.feed import Feed
from storage.live.stream import Change

if TYPE_CHECKING:
    from server.settings import Settings

log = logging.getLogger("comments.fanout")

READER = "fanout"
# Seconds between health checks of a quiet subscription (redis-py pings the broker).
HEALTH_SECONDS = 5


def channel(table: str) -> str:
    """The channel of one table's changes: processes of several tables may share a broker."""
    return f"comments:changes:{table}"


class Reconnected(Exception):
    """The broker's connection was made again: messages may have been lost meanwhile."""


class _WatchedPubSub(PubSub):
    """redis-py's subscription, counting its connections: the first is the start, every
    later one a reconnection after messages may have been lost."""

    connects = 0

    async def on_connect(self, connection: Connection) -> None:
        self.connects += 1
        await super().on_connect(connection)


async def start_fanout(
    stack: AsyncExitStack,
    feed: Feed,
    streams: Any,
    settings: Settings,
    owner: str,
    answers: AnswerCache | None = None,
    purging: Purging | None = None,
) -> None:
    """Publish the shards this process holds and feed it everyone's, until the stack closes.
    The process's map of answers (server.http.answers) is told of each batch first, and of
    every loss, as with a follower of its own. The caches in front (``purging``) are told
    of the batches of the shards this process holds, once published: once per change."""
    url = settings.fanout_url
    assert url is not None
    name = channel(feed.table.name)
    publishing: Redis = Redis.from_url(url, health_check_interval=HEALTH_SECONDS)
    stack.push_async_callback(publishing.aclose)

    async def publish(data: bytes) -> None:
        await publishing.publish(name, data)

    publisher = Publisher(owner, publish)

    async def on_batch(changes: Sequence[Change]) -> None:
        await publisher.on_batch(changes)
        if purging is not None:
            purging.changed(changes)

    saying: set[asyncio.Task[None]] = set()

    def reader_gap(shard: str, reason: str) -> None:
        # Every process must hear of it (their subscribers, their maps of answers): said on
        # the channel at once, as a message of no changes, rather than left for a hole in
        # the numbers that only the next change would show.
        log.warning("fan-out reader: shard %s: %s", shard, reason)
        task = asyncio.create_task(publisher.lost(shard, reason))
        saying.add(task)
        task.add_done_callback(saying.discard)
        if purging is not None:
            purging.lost(f"shard {shard}: {reason}")

    def claimed(shard_id: str, taken_over: bool) -> None:
        # Everything, at every claim: a holder that died may have left purges unsent, and
        # one that let go cleanly may not have purged at all (a rolling deploy that turns
        # PURGE_URLS on), while processes with it were answering with a long s-maxage.
        if purging is not None:
            how = "taken over from a holder that stopped" if taken_over else "claimed"
            purging.lost(f"shard {shard_id} {how}")

    # The receiving side: purges are the reader's (on_batch, reader_gap, claimed).
    told = Listeners(feed, answers)

    async def read() -> None:
        arn = await stream_when_on(
            feed.table, "fan-out", "the table has no stream; nothing is published"
        )
        reader = ClaimedReader(
            feed.table,
            streams,
            arn,
            READER,
            owner,
            on_batch,
            lease_seconds=settings.fanout_lease_seconds,
            poll_seconds=settings.stream_poll_seconds,
            on_gap=reader_gap,
            on_claim=claimed,
        )
        await reader.run()

    def batches() -> AsyncIterator[list[Change]]:
        return told.told(_received())

    async def _received() -> AsyncIterator[list[Change]]:
        client: Redis = Redis.from_url(url, health_check_interval=HEALTH_SECONDS)
        pubsub = _WatchedPubSub(client.connection_pool)
        try:
            await pubsub.subscribe(name)
            receiver = Receiver(told.lost)
            # Subscribed: from now on nothing published is missed.
            yield []
            while True:
                message = await pubsub.get_message(
                    ignore_subscribe_messages=True, timeout=settings.stream_poll_seconds
                )
                if pubsub.connects > 1:
                    raise Reconnected("the broker's connection was made again")
                if message is None or message.get("type") != "message":
                    yield []
                    continue
                changes = receiver.take(message["data"])
                metrics.fanout_received(len(changes))
                yield changes
        finally:
            with suppress(Exception):
                await pubsub.aclose()  # type: ignore[no-untyped-call]
            with suppress(Exception):
                await client.aclose()

    async def keep_reading() -> None:
        while True:
            try:
                await read()
            except asyncio.CancelledError:
                raise
            except Exception:  # the reader must outlive what fails it; said, then again
                log.exception("fan-out: the stream reader failed; starting it again")
                await asyncio.sleep(1.0)

    tasks = [
        asyncio.create_task(keep_reading()),
        asyncio.create_task(feed.follow(batches, on_batch=told.delivered, on_failure=told.failed)),
    ]

    async def stop() -> None:
        await cancel_and_wait(tasks)
        feed.interrupt("EVENTS_LOST", "The server is shutting down; subscribe again.")

    stack.push_async_callback(stop)
    log.info("fan-out: reader %s publishing on %s", owner, name)
