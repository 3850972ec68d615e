"""The webhook endpoint as the API shows it: never its secrets, only how many sign."""

from __future__ import annotations

import time
from typing import Self

import strawberry

from storage.model.webhooks import Endpoint, EventType

WebhookEventType = strawberry.enum(
    EventType,
    name="WebhookEventType",
    description="What a webhook event says (its payload's type: comment.published, ...).",
)


@strawberry.type(description="A receiver of the shop's webhook events and what it asked for.")
class WebhookEndpoint:
    id: strawberry.ID = strawberry.field(description="The endpoint's id (ep_...).")
    url: str = strawberry.field(description="Where events are POSTed (https).")
    events: list[EventType] = strawberry.field(description="The event types it receives.")
    product_ids: list[strawberry.ID] = strawberry.field(
        description="Only events of these products (or of groupIds); empty: every product."
    )
    group_ids: list[strawberry.ID] = strawberry.field(
        description="Only events of comments counted in these groups (or of productIds)."
    )
    ratings: list[int] = strawberry.field(
        description="Only comment events of these ratings; empty: every rating."
    )
    enabled: bool = strawberry.field(description="Whether events are delivered to it.")
    disabled_reason: str | None = strawberry.field(
        description="Why delivery turned it off (it answered 410 Gone); null otherwise."
    )
    version: int = strawberry.field(
        description="Its version: changes name the version read (CHANGED otherwise)."
    )
    created_at: str = strawberry.field(description="When it was registered (ISO-8601 UTC).")
    signing_secrets: int = strawberry.field(
        description="How many secrets sign each delivery now: 2 during a rotation's grace "
        "period, else 1. The secrets themselves are shown only when made."
    )

    @classmethod
    def of(cls, e: Endpoint) -> Self:
        return cls(
            id=strawberry.ID(e.endpoint_id),
            url=e.url,
            events=sorted(e.events, key=lambda t: t.value),
            product_ids=[strawberry.ID(p) for p in sorted(e.product_ids)],
            group_ids=[strawberry.ID(g) for g in sorted(e.group_ids)],
            ratings=sorted(e.ratings),
            enabled=e.enabled,
            disabled_reason=e.disabled_reason,
            version=e.version,
            created_at=e.created_at,
            signing_secrets=len(e.signing_secrets(time.time())),
        )
