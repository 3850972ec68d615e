"""Live updates: one subscriber's comment events, from the process's feed of the stream.

A subscription is registered with the feed when it is accepted, before its first event is
awaited, so that nothing written after the subscription was set up is missed, and is
withdrawn whatever ends it (the client completes it or goes away, the feed ends it). Each
event is resolved as a request of its own (``Context.renew``): the operation's cost is its
budget of storage calls per event, and nothing read for one event is served to the next.
That budget is paid for once, when the subscription starts, by its connection, product and
process, and subscribers sharing a document share this execution (server.http.event_groups):
the work of an event does not grow with the subscribers who receive it.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Sequence

from resolvers.context import Context
from resolvers.errors import (
    LiveUpdatesUnavailable,
    SubscriptionEnded,
    TooManySubscriptions,
)
from storage.live.events import Listing
from storage.live.feed import Delivery, Ended, Feed, Subscription, TooManySubscribers
from storage.model import rules


def listing_of(
    product_id: str,
    language: str | None,
    ratings: Sequence[int] | None,
    verified_only: bool = False,
) -> Listing:
    """The listing a subscriber watches, from the subscription's arguments (InvalidInput,
    BAD_USER_INPUT to clients, when one is not acceptable)."""
    return Listing(
        rules.validate_product_id(product_id),
        None if language is None else rules.validate_language(language),
        rules.validate_ratings(None if ratings is None else frozenset(ratings)),
        verified_only,
    )


async def subscribe(context: Context, listing: Listing) -> AsyncGenerator[Delivery, None]:
    """Register a subscriber of ``listing`` now and return its events. A process that has
    just started is given the storage timeout to take its place in the stream."""
    feed = context.feed
    if feed is None or not await feed.wait_following(context.storage_timeout):
        raise LiveUpdatesUnavailable(
            "This server does not deliver live updates right now; retry later, or reload."
        )
    try:
        subscription = feed.subscribe(listing)
    except TooManySubscribers as exc:
        raise TooManySubscriptions(
            "This server holds as many subscriptions as it may; retry later."
        ) from exc
    return _events(context, feed, subscription)


async def _events(
    context: Context, feed: Feed, subscription: Subscription
) -> AsyncGenerator[Delivery, None]:
    try:
        async for delivery in subscription:
            # The event is resolved as a request of its own.
            context.renew()
            yield delivery
    except Ended as ended:
        raise SubscriptionEnded(ended.code, str(ended)) from ended
    finally:
        feed.unsubscribe(subscription)
