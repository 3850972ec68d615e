"""The Query root."""

from __future__ import annotations

from collections.abc import Awaitable
from typing import cast

import strawberry
from strawberry import relay

from resolvers import webhooks as webhook_resolvers
from resolvers.comments import reads as comment_reads
from resolvers.comments.visibility import reader
from resolvers.facets import summaries
from resolvers.products import groups, stats
from schema import privacy
from schema.comments.connection import CommentConnection
from schema.comments.types import Comment
from schema.context import Info
from schema.facets.types import TopicTaxonomy
from schema.products import leaderboard
from schema.products.groups import ProductGroup
from schema.products.leaderboard import ProductRanking
from schema.products.types import Product
from schema.relay import decode_global_id
from schema.viewer import Viewer
from schema.webhooks.types import WebhookEndpoint
from storage.model import rules
from storage.model.comments import PAGE_SIZE_DEFAULT, PAGE_SIZE_MAX
from storage.reads.leaders import LEADERBOARD_DEFAULT, LEADERBOARD_MAX


async def resolve_node(info: Info, value: str) -> Product | ProductGroup | Comment | None:
    type_name, node_id = decode_global_id(value)
    if type_name == "Product":
        return Product.of(rules.validate_product_id(node_id))
    if type_name == "ProductGroup":
        gid = groups.group_id(node_id)
        return ProductGroup.of(gid) if await groups.exists(info.context, gid) else None
    if type_name == "Comment":
        found = await comment_reads.comment(info.context, node_id)
        return None if found is None else Comment.of(found)
    return None


@strawberry.type(description="Reads: products, their comments and counters, the leaderboard.")
class Query:
    @strawberry.field(description="Refetch any object by its global id; null when unknown.")
    async def node(self, info: Info, id: strawberry.ID) -> relay.Node | None:
        return await resolve_node(info, id)

    @strawberry.field(
        description="Refetch objects by global id, in input order; null for unknown, and null "
        "with its own error for an invalid one (the others still resolve)."
    )
    def nodes(self, info: Info, ids: list[strawberry.ID]) -> list[relay.Node | None]:
        # One awaitable per id, awaited by the executor item by item: an invalid id or a
        # failed read nulls its own entry, with an error whose path ends in its index,
        # instead of failing the whole (non-null) list and with it the response.
        items: list[Awaitable[Product | ProductGroup | Comment | None]] = [
            resolve_node(info, i) for i in ids
        ]
        return cast(list[relay.Node | None], items)

    @strawberry.field(
        description="A product by the shop's own identifier. A product without comments still "
        "resolves, with zero counts."
    )
    def product(self, product_id: strawberry.ID) -> Product | None:
        return Product.of(stats.product_id(product_id))

    @strawberry.field(
        description="A group of products (variants that share their reviews) by the shop's "
        "own identifier; null when no product has ever been in it."
    )
    async def product_group(self, info: Info, group_id: strawberry.ID) -> ProductGroup | None:
        gid = groups.group_id(group_id)
        return ProductGroup.of(gid) if await groups.exists(info.context, gid) else None

    @strawberry.field(
        description="The shop's topic taxonomy: its topics' keys and labels, and the "
        "revision setTopicTaxonomy changes from."
    )
    async def topic_taxonomy(self, info: Info) -> TopicTaxonomy | None:
        return TopicTaxonomy.of(await summaries.taxonomy(info.context))

    @strawberry.field(description="A comment by its own identifier; null when it does not exist.")
    async def comment(self, info: Info, comment_id: strawberry.ID) -> Comment | None:
        found = await comment_reads.comment(info.context, comment_id)
        return None if found is None else Comment.of(found)

    @strawberry.field(description="The signed-in viewer; null without a valid token.")
    def viewer(self, info: Info) -> Viewer | None:
        who = reader(info.context)
        return None if who is None else Viewer.of(who)

    @strawberry.field(
        description="PENDING comments, oldest first, for moderators (FORBIDDEN otherwise). "
        f"first: 0..{PAGE_SIZE_MAX} (default {PAGE_SIZE_DEFAULT})."
    )
    async def moderation_queue(
        self, info: Info, first: int | None = None, after: str | None = None
    ) -> CommentConnection | None:
        listing = await comment_reads.moderation_queue(info.context, first=first, after=after)
        return CommentConnection.from_listing(listing)

    export_author: str | None = strawberry.field(
        resolver=privacy.export_author,
        description="Moderators only (FORBIDDEN otherwise): everything the author with this "
        "token subject made (comments in every status, votes, reports), as a JSON document "
        "to hand to them; see the privacy requests page of the docs for its fields.",
    )
    author_erasure: privacy.AuthorErasure | None = strawberry.field(
        resolver=privacy.author_erasure,
        description="Moderators only: an erasure by its requestId; null when there is none.",
    )

    @strawberry.field(
        description="The leaderboard: products with the most 5-star comments, most first; "
        f"1 <= first <= {LEADERBOARD_MAX}."
    )
    async def top_products(
        self, info: Info, first: int = LEADERBOARD_DEFAULT
    ) -> list[ProductRanking] | None:
        return await leaderboard.top_products(info, first)

    @strawberry.field(
        description="The shop's webhook endpoints, for moderators and merchants (FORBIDDEN "
        "otherwise); secrets are never shown here."
    )
    async def webhook_endpoints(self, info: Info) -> list[WebhookEndpoint] | None:
        found = await webhook_resolvers.endpoints(info.context)
        return [WebhookEndpoint.of(e) for e in found]
