"""The Subscription root: live comment events of a product page (graphql-transport-ws)."""

from __future__ import annotations

from collections.abc import AsyncGenerator
from enum import Enum
from typing import TYPE_CHECKING, Annotated, Self

import strawberry
from strawberry import relay

from resolvers import live
from resolvers.facets.filters import NONE as NO_FACETS
from schema.comments.orders import CommentOrder
from schema.comments.types import Comment
from schema.context import Info
from schema.products.types import RatingStats
from storage.live.events import EventKind
from storage.live.feed import Delivery
from storage.reads.cursor import Ordering, encode_cursor, position_of

if TYPE_CHECKING:
    from schema.facets.types import CommentFacets


@strawberry.enum(description="What happened to a comment, as the subscriber's listing sees it.")
class CommentEventKind(Enum):
    PUBLISHED = strawberry.enum_value(
        "PUBLISHED",
        description="The comment entered the listing: written (published at once), approved, "
        "restored, edited into the listing's language, ratings or facets, or (watching a "
        "group) its product moved into the group.",
    )
    EDITED = strawberry.enum_value(
        "EDITED",
        description="A comment of the listing changed its text, title, rating, language, "
        "merchant reply, answers or topics and stays in the listing.",
    )
    REMOVED = strawberry.enum_value(
        "REMOVED",
        description="The comment left the listing for any reason: deleted, rejected, sent "
        "back to moderation, edited out of the listing's language, ratings or facets, or "
        "(watching a group) its product moved out of the group.",
    )


@strawberry.type(
    description="One change of a product's or a group's listing, with the counters after it."
)
class CommentEvent:
    kind: CommentEventKind = strawberry.field(description="What happened.")
    comment_id: strawberry.ID = strawberry.field(
        description="The comment's own identifier (Comment.commentId)."
    )
    node_id: strawberry.ID = strawberry.field(
        description="The comment's global id (Comment.id): the key a client cache holds it "
        "under, to evict it on REMOVED."
    )
    comment: Comment | None = strawberry.field(
        description="The comment as it now is; null for REMOVED (a comment that left the "
        "listing is no longer shown to everyone)."
    )
    edge: relay.Edge[Comment] | None = strawberry.field(
        description="The comment as an edge of the listing subscribed to, with its cursor "
        "in the subscription's orderBy (as Product.comments would give it), to put in a "
        "cached list in its place; null for REMOVED."
    )
    stats: RatingStats = strawberry.field(
        description="The counters of the product watched (of the group, watching groupId: "
        "Product.stats or ProductGroup.stats), all languages, whatever the filters and "
        "facets; read after this change (they count it, and may count later ones too)."
    )
    language_stats: RatingStats | None = strawberry.field(
        description="The same counters of the subscription's language, read with `stats`; "
        "null when the subscription names no language."
    )
    total_count: int | None = strawberry.field(
        description="The listing's totalCount after this change, exactly as the same "
        "listing (Product.comments or ProductGroup.comments with these filters and facets) "
        "counts it, from the counters read with `stats`; null when the facets name two or "
        "more values (no counter keeps that count: read it over HTTP)."
    )

    @classmethod
    def of(cls, delivery: Delivery, ordering: Ordering = Ordering.NEWEST) -> Self:
        change = delivery.change
        comment = edge = None
        if delivery.kind is not EventKind.REMOVED and change.after is not None:
            comment = Comment.of(change.after)
            cursor = encode_cursor(position_of(change.after, ordering), ordering)
            edge = relay.Edge(cursor=cursor, node=comment)
        language = delivery.language_counts
        return cls(
            kind=CommentEventKind[delivery.kind.name],
            comment_id=strawberry.ID(change.comment_id),
            node_id=strawberry.ID(str(relay.GlobalID("Comment", change.comment_id))),
            comment=comment,
            edge=edge,
            stats=RatingStats.from_counts(delivery.counts),
            language_stats=None if language is None else RatingStats.from_counts(language),
            total_count=delivery.total,
        )


@strawberry.type(description="Live updates, over WebSocket (graphql-transport-ws) at /graphql.")
class Subscription:
    @strawberry.subscription(
        description="Changes of a product's (or a group's) published comments as they "
        "happen, through any server process: PUBLISHED, EDITED and REMOVED, each with the "
        "counters after it. Name exactly one of productId and groupId. language, ratings, "
        "verifiedOnly and facets narrow the listing watched, as on Product.comments; events "
        "are relative to it (a comment edited out of the ratings or facets watched is "
        "REMOVED); each event's edge carries the comment's cursor in orderBy (MOST_HELPFUL "
        "is refused with facets or a group, as on their listings: BAD_USER_INPUT). "
        "Votes are not events: the most helpful order's changes by votes are not sent. "
        "Events of one comment arrive in order, each once. An error with code EVENTS_LOST, "
        "TOO_SLOW or STORAGE_UNAVAILABLE ends the subscription: subscribe again and reload "
        "the listing, as events may be missing."
    )
    async def comment_events(
        self,
        info: Info,
        product_id: Annotated[
            strawberry.ID | None,
            strawberry.argument(
                description="The product watched: its own published comments (whatever "
                "group it is in), as Product.comments lists them."
            ),
        ] = None,
        language: str | None = None,
        ratings: list[int] | None = None,
        verified_only: bool = False,
        order_by: CommentOrder = CommentOrder.NEWEST,
        group_id: Annotated[
            strawberry.ID | None,
            strawberry.argument(
                description="Instead of productId, the group watched: the comments counted "
                "in it, of all its products, as ProductGroup.comments lists them. A "
                "product's comments enter when a move puts the product in the group, and "
                "leave when one takes it out; facets.productId narrows it to one of its "
                "products' own comments, checked once, when subscribing."
            ),
        ] = None,
        facets: Annotated[
            Annotated[CommentFacets, strawberry.lazy("schema.facets.types")] | None,
            strawberry.argument(
                description="The same facets as Product.comments takes (answers, topic, "
                "photos, incentivized reviews left out, a group's product), checked as "
                "there."
            ),
        ] = None,
    ) -> AsyncGenerator[CommentEvent, None]:
        listing = await live.listing_of(
            info.context,
            None if product_id is None else str(product_id),
            language,
            ratings,
            verified_only,
            group_id=None if group_id is None else str(group_id),
            facets=NO_FACETS if facets is None else facets.checked(),
            order=order_by.stored(),
        )
        events = await live.subscribe(info.context, listing)
        return _events(events, Ordering.of(order_by.stored()))


async def _events(
    deliveries: AsyncGenerator[Delivery, None], ordering: Ordering
) -> AsyncGenerator[CommentEvent, None]:
    try:
        async for delivery in deliveries:
            yield CommentEvent.of(delivery, ordering)
    finally:
        await deliveries.aclose()
