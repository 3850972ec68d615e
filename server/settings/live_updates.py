"""Live updates: following the table's stream, and what subscriptions may hold and cost.

Defaults are those of ``storage.live.feed`` where it has one, read from there; the budgets
are explained in ``server.http.event_groups``.
"""

from __future__ import annotations

from pydantic import Field, field_validator
from pydantic_settings import BaseSettings

from server.settings.common import FROM_ENVIRONMENT
from storage.live.feed import DEFAULT_QUEUE


class LiveUpdateSettings(BaseSettings):
    """The stream each process follows, and the subscriptions it serves."""

    model_config = FROM_ENVIRONMENT

    # Live updates: each process follows the table's stream (a table made with
    # CREATE_TABLE gets one; migrate-table turns it on for an older one) and serves the
    # commentEvents subscription over WebSocket. Off: no stream is followed, subscriptions
    # are refused with LIVE_UPDATES_UNAVAILABLE, and a table this start creates has none.
    live_updates: bool = True
    # Seconds between polls of a quiet stream (each poll is one GetRecords per open shard;
    # DynamoDB throttles a shard read by more than two readers at once, see the README).
    stream_poll_seconds: float = Field(default=0.25, gt=0, le=10)
    # The broker that fans the stream's changes out to every process (docs/scale.md): a
    # Redis URL (redis://, rediss:// with TLS, as ElastiCache's in-transit encryption
    # asks). Set: each shard is read once, by a claimed reader (lease items in the table),
    # which publishes its changes there, and every process takes them from there instead of
    # reading the stream itself. Unset: every process reads every shard (right for one
    # process; serve --workers N in development starts redis-server on loopback itself).
    fanout_url: str | None = None
    # Seconds a shard's reader holds it without renewing: a reader's process that dies is
    # replaced by another within this (its subscribers, and every process's, get
    # EVENTS_LOST then).
    fanout_lease_seconds: float = Field(default=30.0, ge=1, le=600)
    # Subscriptions one WebSocket connection, and one process, may hold.
    subscriptions_per_connection: int = Field(default=10, ge=1, le=1000)
    subscriptions_per_process: int = Field(default=10_000, ge=1, le=1_000_000)
    # What live updates may cost, in points: the storage calls one event of a subscription
    # may make (schema.cost's estimate of its document) plus one for resolving it at all.
    # Charged once, when the subscription starts: per subscription (its document), per
    # connection (its subscriptions), per product (or group) watched, per client and per
    # process (the distinct resolutions: subscribers sharing a document, variables and view
    # share one). Refused over any of them: QUERY_TOO_COMPLEX for the first two,
    # TOO_MANY_SUBSCRIPTIONS for the others (server.http.event_groups).
    subscription_event_cost: int = Field(default=5, ge=0, le=100)
    subscription_connection_cost: int = Field(default=20, ge=1, le=10_000)
    subscription_product_cost: int = Field(default=200, ge=1, le=1_000_000)
    subscription_process_cost: int = Field(default=5000, ge=1, le=10_000_000)
    # The points of the groups one client (an IPv4 address, an IPv6 /64) started and that
    # still run: joining a running group is free, so viewers of a page share it, and no
    # one client takes a product's or the process's budget.
    subscription_client_cost: int = Field(default=40, ge=1, le=1_000_000)
    # Bytes of JSON one subscription event may hold (and MAX_RESPONSE_BYTES, if smaller):
    # an event is one comment and the counters, whose texts at their limits come to well
    # under this; a larger one ends its subscription with QUERY_TOO_COMPLEX.
    subscription_event_bytes: int = Field(default=128 * 1024, ge=1024, le=64 * 1024 * 1024)
    # Events waiting for one subscriber before it is ended as TOO_SLOW.
    subscription_queue: int = Field(default=DEFAULT_QUEUE, ge=1, le=10_000)
    # Seconds a connection may stay without a subscription (then closed, 4000), and may
    # take to send connection_init (then closed, 4408).
    subscription_idle_seconds: float = Field(default=300, gt=0, le=86400)
    connection_init_seconds: float = Field(default=10, gt=0, le=600)

    @field_validator("fanout_url")
    @classmethod
    def _a_redis_url(cls, value: str | None) -> str | None:
        if value is None or value == "":
            return None
        if not value.startswith(("redis://", "rediss://", "unix://")):
            raise ValueError("FANOUT_URL: a Redis URL (redis://, rediss:// or unix://)")
        return value
