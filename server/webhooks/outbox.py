"""Writing webhook events from the stream, once: the claimed reader's batch handler.

Each batch of one shard's changes becomes events (``storage.live.webhook_events``), the
shop's endpoints are read once for the batch, and each event is recorded in order
(``storage.writes.webhook_outbox.record_event``): numbered in its product's sequence and
made due for every endpoint that wants it. A batch read again (its shard handed on after
its holder died) records nothing new.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from storage.engine.table import TableRef
from storage.live.stream import Change
from storage.live.webhook_events import webhook_event
from storage.reads.webhooks import list_endpoints
from storage.writes.webhook_outbox import record_event


@dataclass(slots=True)
class Outbox:
    table: TableRef
    recorded: int = 0
    repeated: int = 0

    async def on_batch(self, changes: Sequence[Change]) -> None:
        events = [e for e in (webhook_event(c) for c in changes) if e is not None]
        if not events:
            return
        endpoints = await list_endpoints(self.table)
        for event in events:
            number = await record_event(self.table, event, endpoints)
            if number is None:
                self.repeated += 1
            else:
                self.recorded += 1
