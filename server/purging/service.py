"""Purging as part of a process: the purgers of the configured caches, started and stopped
with its lifespan, and told what each batch of the stream changed.

Once per change across processes: with a fan-out broker, only the claimed reader's
holder of a shard tells them (server.fanout), after publishing the batch; without one,
every process follows the stream itself and tells them (one process: once). A claim of a
shard by the fan-out's reader (its last holder may have died with purges unsent, or never
purged), a gap in the stream, and a follower's start (it reads from the stream's end) are
"everything": purges may have been lost with them.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Sequence
from contextlib import AsyncExitStack, suppress
from typing import TYPE_CHECKING

from server.http.answer_changes import tags_of_batch
from server.purging.cdn import CloudflareTarget, FastlyTarget, cdn_entry
from server.purging.purger import Purger, Target
from server.purging.targets import VarnishTarget
from server.tasks import cancel_and_wait
from storage.live.stream import Change

if TYPE_CHECKING:
    from server.settings import Settings

log = logging.getLogger("comments.purge")

# Seconds the purges waiting at shutdown may take to go out.
FLUSH_SECONDS = 5.0


class Purging:
    """The purgers of every configured cache, told together."""

    def __init__(self, purgers: Sequence[Purger]) -> None:
        self.purgers = list(purgers)

    def changed(self, changes: Sequence[Change]) -> None:
        tags = tags_of_batch(changes)
        for purger in self.purgers:
            purger.changed(tags)

    def lost(self, reason: str) -> None:
        log.info("purge: everything, %s", reason)
        for purger in self.purgers:
            purger.lost()


async def purged(
    purging: Purging, batches: AsyncIterator[list[Change]]
) -> AsyncIterator[list[Change]]:
    """A follower's batches, each told to ``purging`` as it passes. The first (the follower
    has taken its place, at the stream's end) purges everything: what changed before it
    was read by no one."""
    first = True
    async for batch in batches:
        if first:
            purging.lost("this process starts following the stream")
            first = False
        purging.changed(batch)
        yield batch


def target(url: str, settings: Settings) -> Target:
    """Where the purges of one entry of ``PURGE_URLS`` go (the settings have checked that
    each CDN named has its token)."""
    match cdn_entry(url):
        case ("fastly", service_id):
            assert settings.fastly_api_token is not None
            return FastlyTarget(
                service_id,
                settings.fastly_api_token,
                settings.fastly_api_url,
                soft=settings.fastly_soft_purge,
            )
        case ("cloudflare", zone_id):
            assert settings.cloudflare_api_token is not None
            return CloudflareTarget(
                zone_id, settings.cloudflare_api_token, settings.cloudflare_api_url
            )
        case _:
            return VarnishTarget(url)


async def start_purging(stack: AsyncExitStack, settings: Settings) -> Purging | None:
    """The process's purging, running until the stack closes; None without PURGE_URLS."""
    if not settings.purge_urls:
        return None
    tuning = settings.purge_tuning()
    purgers = [Purger(target(url, settings), tuning) for url in settings.purge_urls]
    tasks = [asyncio.create_task(p.run()) for p in purgers]

    async def stop() -> None:
        await cancel_and_wait(tasks)
        # Bounded: a cache that does not answer must not hold the shutdown up.
        with suppress(TimeoutError):
            await asyncio.wait_for(asyncio.gather(*(p.flush() for p in purgers)), FLUSH_SECONDS)

    stack.push_async_callback(stop)
    log.info("purge: %s", ", ".join(p.target.name for p in purgers))
    return Purging(purgers)
