"""What a process does with the changes it takes in, whether from its own follower of the
stream or from the fan-out broker: the feed's subscribers hear of each batch after the
process's map of answers (server.http.answers) and the purges it sends (server.purging);
a loss ends every subscription with EVENTS_LOST and empties the map.

Purges belong to whoever reads the stream for the process: its own follower (without a
broker, so a loss of its is a purge of everything) or, with a broker, the claimed reader
(server.fanout), which purges what it publishes; a process's receiving side then has no
``purging`` here.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from dataclasses import dataclass

from server.http.answer_changes import telling
from server.http.answers import AnswerCache
from server.observability import metrics
from server.purging.service import Purging, purged
from storage.live.feed import Feed
from storage.live.stream import Change

log = logging.getLogger("comments.live")


@dataclass(frozen=True)
class Listeners:
    feed: Feed
    answers: AnswerCache | None
    purging: Purging | None = None

    def lost(self, reason: str) -> None:
        """Changes went by unread: said, counted, and every consumer starts over."""
        log.warning("live updates: %s", reason)
        self.failed(reason)
        self.feed.interrupt(
            "EVENTS_LOST",
            "Changes of the table were lost to this server; subscribe again and reload.",
        )

    def failed(self, reason: str = "the source of the table's changes failed") -> None:
        """The source failed (the feed ends its subscriptions itself, and follows again)."""
        metrics.stream_gaps()
        if self.answers is not None:
            self.answers.lost()
        if self.purging is not None:
            self.purging.lost(reason)

    def told(self, batches: AsyncIterator[list[Change]]) -> AsyncIterator[list[Change]]:
        """The batches, each told to the purges and the map before the subscribers."""
        if self.purging is not None:
            batches = purged(self.purging, batches)
        return batches if self.answers is None else telling(self.answers, batches)

    def delivered(self, changes: int) -> None:
        metrics.stream_events(changes)
        metrics.stream_lag(self.feed.lag_seconds)
