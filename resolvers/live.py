"""Live updates: one subscriber's comment events, from the process's feed of the stream.

A subscription is registered with the feed when it is accepted, before its first event is
awaited, so that nothing written after the subscription was set up is missed, and is
withdrawn whatever ends it (the client completes it or goes away, the feed ends it). Each
event is resolved as a request of its own (``Context.renew``): the operation's cost is its
budget of storage calls per event, and nothing read for one event is served to the next.
That budget is paid for once, when the subscription starts, by its connection, product and
process, and subscribers sharing a document share this execution (server.http.event_groups):
the work of an event does not grow with the subscribers who receive it.

A subscriber watches a product's listing or a group's, with the filters and facets a
listing takes, checked as the listing checks them (``listing_of``).
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Sequence

from resolvers.context import Context
from resolvers.errors import (
    BadUserInput,
    LiveUpdatesUnavailable,
    SubscriptionEnded,
    TooManySubscriptions,
)
from resolvers.facets.filters import NONE as NO_FACETS
from resolvers.facets.filters import Facets
from resolvers.products import groups
from storage.base.errors import InvalidInput
from storage.live.events import Listing
from storage.live.feed import Delivery, Ended, Feed, Subscription, TooManySubscribers
from storage.model import rules
from storage.model.comments import Order


async def listing_of(
    context: Context,
    product_id: str | None,
    language: str | None,
    ratings: Sequence[int] | None,
    verified_only: bool = False,
    *,
    group_id: str | None = None,
    facets: Facets = NO_FACETS,
    order: Order = Order.NEWEST,
) -> Listing:
    """The listing a subscriber watches, from the subscription's arguments, checked as
    Product.comments and ProductGroup.comments check theirs (BAD_USER_INPUT naming the
    argument when one is not acceptable). A group's listing narrowed to one of its
    products (``facets.productId``) is that product's own listing, as on the group's
    listing: its membership is read once, now."""
    if (product_id is None) == (group_id is None):
        raise BadUserInput("Name exactly one of productId and groupId: what to watch.")
    of_group = group_id is not None
    if group_id is None:
        scope = rules.validate_product_id(product_id)
    else:
        try:
            scope = rules.validate_product_id(group_id)
        except InvalidInput as exc:
            raise BadUserInput(f"groupId: {exc}") from exc
    if of_group and facets.product_id is not None:
        scope, of_group = await groups.narrowed(context, scope, facets.product_id), False
    elif facets.product_id is not None and facets.product_id != scope:
        raise BadUserInput(
            "facets.productId narrows a group's listing; on a product's own listing it may "
            "only name that product"
        )
    listing = Listing(
        scope,
        None if language is None else rules.validate_language(language),
        rules.validate_ratings(None if ratings is None else frozenset(ratings)),
        verified_only,
        facets.values,
        facets.exclude_incentivized,
        of_group,
    )
    if order is Order.MOST_HELPFUL and listing.as_filter().faceted:
        raise BadUserInput(
            "orderBy: MOST_HELPFUL is not offered on facet or group listings (as on "
            "Product.comments); watch another order."
        )
    return listing


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
