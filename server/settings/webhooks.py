"""Webhooks: whether this process writes and delivers them, and how (server.webhooks).

Defaults are those of ``server.webhooks.delivery`` and ``server.webhooks.transport``,
read from there.
"""

from __future__ import annotations

from typing import Self

from pydantic import Field, model_validator
from pydantic_settings import BaseSettings

from server.settings.common import FROM_ENVIRONMENT
from server.webhooks.delivery import DeliveryTuning

_D = DeliveryTuning()


class WebhookSettings(BaseSettings):
    """The webhook worker of each process (its claimed stream reader and its deliveries)."""

    model_config = FROM_ENVIRONMENT

    # On: this process takes part in writing webhook events from the table's stream (one
    # claimed reader per shard across all processes) and in delivering them. Off: the
    # endpoints can still be registered; nothing is written or sent by this process.
    webhooks: bool = False
    # Deliveries in flight at once in this process, and to one endpoint.
    webhook_concurrency: int = Field(default=_D.concurrency, ge=1, le=1000)
    webhook_endpoint_concurrency: int = Field(default=_D.per_endpoint, ge=1, le=100)
    # Seconds to connect to a receiver, and to wait for each read of its answer.
    webhook_connect_seconds: float = Field(default=5.0, gt=0, le=60)
    webhook_read_seconds: float = Field(default=10.0, gt=0, le=120)
    # Seconds a process holds a lane or a stream shard without renewing; another takes
    # it over after that. Must outlast one delivery (the host's lookup and the connection,
    # each within the connect timeout, and two reads: 2 x connect + 2 x read).
    webhook_lease_seconds: float = Field(default=_D.lease_seconds, ge=1, le=3600)
    # Seconds between looks for due lanes.
    webhook_poll_seconds: float = Field(default=_D.poll_seconds, gt=0, le=60)
    # Backoff after a failed delivery: full jitter over base x 2^attempt, at most max.
    webhook_retry_base_seconds: float = Field(default=_D.retry_base_seconds, gt=0, le=3600)
    webhook_retry_max_seconds: float = Field(default=_D.retry_max_seconds, gt=0, le=86400)
    # Seconds an event is retried before it is kept as failed (replayable).
    webhook_retry_horizon_seconds: float = Field(default=_D.horizon_seconds, gt=0, le=7 * 86400)
    # Seconds the secret replaced by rotateWebhookSecret still signs deliveries.
    webhook_secret_grace_seconds: float = Field(default=86400, ge=0, le=30 * 86400)
    # Deliveries to loopback addresses and over plain http (tests, development).
    # Unset: allowed in development, refused in production.
    webhook_allow_loopback: bool | None = None

    @model_validator(mode="after")
    def _lease_outlasts_a_delivery(self) -> Self:
        longest = 2 * self.webhook_connect_seconds + 2 * self.webhook_read_seconds
        if self.webhook_lease_seconds <= longest:
            raise ValueError(
                "WEBHOOK_LEASE_SECONDS must exceed 2 x WEBHOOK_CONNECT_SECONDS + 2 x "
                f"WEBHOOK_READ_SECONDS ({longest:g}): a lease must outlast one delivery"
            )
        return self

    @property
    def delivery_tuning(self) -> DeliveryTuning:
        return DeliveryTuning(
            concurrency=self.webhook_concurrency,
            per_endpoint=self.webhook_endpoint_concurrency,
            lease_seconds=self.webhook_lease_seconds,
            poll_seconds=self.webhook_poll_seconds,
            retry_base_seconds=self.webhook_retry_base_seconds,
            retry_max_seconds=self.webhook_retry_max_seconds,
            horizon_seconds=self.webhook_retry_horizon_seconds,
        )
