"""The webhook endpoints' mutation family, for moderators and the merchant role."""

from __future__ import annotations

import strawberry

from resolvers import webhooks
from resolvers.user_errors import Problems
from schema.context import Info
from schema.user_errors import UserError
from schema.webhooks.types import WebhookEndpoint
from storage.model.webhooks import ENDPOINTS_MAX, FILTER_MAX, URL_MAX, EventType


@strawberry.input(description="A new webhook endpoint.")
class CreateWebhookEndpointInput:
    url: str = strawberry.field(
        description=f"https URL of at most {URL_MAX} characters whose host resolves only to "
        "public addresses."
    )
    events: list[EventType] | None = strawberry.field(
        default=None, description="The event types to receive; null: all of them."
    )
    product_ids: list[strawberry.ID] | None = strawberry.field(
        default=None, description=f"Only these products (at most {FILTER_MAX}); null: all."
    )
    group_ids: list[strawberry.ID] | None = strawberry.field(
        default=None, description=f"Only comments counted in these groups (at most {FILTER_MAX})."
    )
    ratings: list[int] | None = strawberry.field(
        default=None, description="Only comment events of these ratings; null: all."
    )
    enabled: bool | None = strawberry.field(
        default=None, description="Deliver to it at once (the default) or not yet."
    )


@strawberry.type(description="The endpoint made, and its secret, shown this once.")
class CreateWebhookEndpointPayload:
    endpoint: WebhookEndpoint | None = strawberry.field(
        description="The endpoint; null when userErrors is not empty."
    )
    secret: str | None = strawberry.field(
        description="The signing secret (whsec_...): keep it, it is never shown again."
    )
    user_errors: list[UserError] = strawberry.field(
        description=f"Every problem; LIMIT_REACHED at {ENDPOINTS_MAX} endpoints."
    )


@strawberry.input(description="Changes to an endpoint, from the version read.")
class UpdateWebhookEndpointInput:
    id: strawberry.ID = strawberry.field(description="The endpoint.")
    version: int = strawberry.field(description="Its version as read; another: CHANGED.")
    url: str | None = strawberry.field(default=None, description="A new URL; null: kept.")
    events: list[EventType] | None = strawberry.field(
        default=None, description="New event types; null: kept."
    )
    product_ids: list[strawberry.ID] | None = strawberry.field(
        default=None, description="New product filter (empty: all); null: kept."
    )
    group_ids: list[strawberry.ID] | None = strawberry.field(
        default=None, description="New group filter (empty: none); null: kept."
    )
    ratings: list[int] | None = strawberry.field(
        default=None, description="New rating filter (empty: all); null: kept."
    )
    enabled: bool | None = strawberry.field(
        default=None, description="Turn delivery on or off; null: kept."
    )


@strawberry.type(description="The endpoint as changed.")
class UpdateWebhookEndpointPayload:
    endpoint: WebhookEndpoint | None = strawberry.field(
        description="The endpoint; null when userErrors is not empty."
    )
    user_errors: list[UserError] = strawberry.field(description="Every problem.")


@strawberry.input(description="An endpoint to delete or to give a new secret.")
class WebhookEndpointVersionInput:
    id: strawberry.ID = strawberry.field(description="The endpoint.")
    version: int = strawberry.field(description="Its version as read; another: CHANGED.")


@strawberry.type(description="What was deleted.")
class DeleteWebhookEndpointPayload:
    deleted_id: strawberry.ID | None = strawberry.field(
        description="The endpoint deleted; null when userErrors is not empty."
    )
    user_errors: list[UserError] = strawberry.field(description="Every problem.")


@strawberry.type(description="The endpoint with its new secret, shown this once.")
class RotateWebhookSecretPayload:
    endpoint: WebhookEndpoint | None = strawberry.field(
        description="The endpoint; null when userErrors is not empty."
    )
    secret: str | None = strawberry.field(
        description="The new signing secret; the previous one also signs during the grace "
        "period (WEBHOOK_SECRET_GRACE_SECONDS), so receivers can switch without a gap."
    )
    user_errors: list[UserError] = strawberry.field(description="Every problem.")


def _ids(values: list[strawberry.ID] | None) -> list[str] | None:
    return None if values is None else [str(v) for v in values]


def _events(values: list[EventType] | None) -> list[str] | None:
    return None if values is None else [v.value for v in values]


async def create_webhook_endpoint(
    info: Info, input: CreateWebhookEndpointInput
) -> CreateWebhookEndpointPayload:
    given = webhooks.EndpointInput(
        url=input.url,
        events=_events(input.events),
        product_ids=_ids(input.product_ids),
        group_ids=_ids(input.group_ids),
        ratings=input.ratings,
        enabled=input.enabled,
    )
    try:
        made, secret = await webhooks.create(info.context, given)
    except Problems as refused:
        return CreateWebhookEndpointPayload(
            endpoint=None, secret=None, user_errors=UserError.all(refused)
        )
    return CreateWebhookEndpointPayload(
        endpoint=WebhookEndpoint.of(made), secret=secret, user_errors=[]
    )


async def update_webhook_endpoint(
    info: Info, input: UpdateWebhookEndpointInput
) -> UpdateWebhookEndpointPayload:
    given = webhooks.EndpointInput(
        url=input.url,
        events=_events(input.events),
        product_ids=_ids(input.product_ids),
        group_ids=_ids(input.group_ids),
        ratings=input.ratings,
        enabled=input.enabled,
    )
    try:
        changed = await webhooks.update(info.context, str(input.id), input.version, given)
    except Problems as refused:
        return UpdateWebhookEndpointPayload(endpoint=None, user_errors=UserError.all(refused))
    return UpdateWebhookEndpointPayload(endpoint=WebhookEndpoint.of(changed), user_errors=[])


async def delete_webhook_endpoint(
    info: Info, input: WebhookEndpointVersionInput
) -> DeleteWebhookEndpointPayload:
    try:
        deleted = await webhooks.delete(info.context, str(input.id), input.version)
    except Problems as refused:
        return DeleteWebhookEndpointPayload(deleted_id=None, user_errors=UserError.all(refused))
    return DeleteWebhookEndpointPayload(deleted_id=strawberry.ID(deleted), user_errors=[])


async def rotate_webhook_secret(
    info: Info, input: WebhookEndpointVersionInput
) -> RotateWebhookSecretPayload:
    try:
        endpoint, secret = await webhooks.rotate(info.context, str(input.id), input.version)
    except Problems as refused:
        return RotateWebhookSecretPayload(
            endpoint=None, secret=None, user_errors=UserError.all(refused)
        )
    return RotateWebhookSecretPayload(
        endpoint=WebhookEndpoint.of(endpoint), secret=secret, user_errors=[]
    )
