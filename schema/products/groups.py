"""ProductGroup: products that share their reviews (variants of one model), with listings,
stats and summaries over all of them, and the connection of its products."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Self

import strawberry
from strawberry import relay

from resolvers import read_set
from resolvers.comments import reads as comment_reads
from resolvers.facets import summaries
from resolvers.facets.filters import NONE as NO_FACETS
from resolvers.products import groups, snippets
from schema.comments.orders import CommentOrder
from schema.context import Info
from schema.products.types import STRUCTURED_DATA, Product, RatingStats
from storage.model.comments import PAGE_SIZE_DEFAULT, PAGE_SIZE_MAX

if TYPE_CHECKING:
    from schema.comments.connection import CommentConnection
    from schema.facets.types import (
        AttributeDefinition,
        AttributeDistribution,
        CommentFacets,
        TopicMention,
    )


@strawberry.type(description="A product in a group's list of products.")
class ProductEdge:
    cursor: str = strawberry.field(description="Opaque position of this product in the list.")
    node: Product = strawberry.field(description="The product.")


@strawberry.type(description="A page of a group's products, by product id.")
class ProductConnection:
    edges: list[ProductEdge] = strawberry.field(description="The products of this page.")
    nodes: list[Product] = strawberry.field(description="The products of this page, in order.")
    page_info: relay.PageInfo = strawberry.field(description="Where this page stands.")
    total_count: int = strawberry.field(description="Exact number of products in the group.")


@strawberry.type(
    description="Products that share their reviews (variants of one model); each comment "
    "keeps the product it was written on."
)
class ProductGroup(relay.Node):
    group_id: strawberry.ID = strawberry.field(description="The shop's identifier of the group.")

    @classmethod
    def resolve_id(cls, root: Self, *, info: Info) -> str:
        return str(root.group_id)

    @classmethod
    def of(cls, group_id: str) -> Self:
        read_set.group(group_id)
        return cls(group_id=strawberry.ID(group_id))

    @strawberry.field(
        description=f"The group's products by product id; first: 0..{PAGE_SIZE_MAX} "
        f"(default {PAGE_SIZE_DEFAULT})."
    )
    async def products(
        self, info: Info, first: int | None = None, after: str | None = None
    ) -> ProductConnection | None:
        page = await groups.members(info.context, self.group_id, first=first, after=after)
        if page is None:
            return ProductConnection(
                edges=[],
                nodes=[],
                page_info=relay.PageInfo(
                    has_next_page=False,
                    has_previous_page=False,
                    start_cursor=None,
                    end_cursor=None,
                ),
                total_count=0,
            )
        edges = [
            ProductEdge(cursor=c, node=Product.of(p))
            for p, c in zip(page.product_ids, page.cursors, strict=True)
        ]
        return ProductConnection(
            edges=edges,
            nodes=[e.node for e in edges],
            page_info=relay.PageInfo(
                has_next_page=page.has_next,
                has_previous_page=page.has_previous,
                start_cursor=page.cursors[0] if page.cursors else None,
                end_cursor=page.cursors[-1] if page.cursors else None,
            ),
            total_count=page.total,
        )

    @strawberry.field(
        description="Counters of the published comments of all its products per rating; "
        "language null means all languages; verifiedOnly counts verified purchases only."
    )
    async def stats(
        self, info: Info, language: str | None = None, verified_only: bool = False
    ) -> RatingStats | None:
        counts = await groups.stats(info.context, self.group_id, language)
        return RatingStats.from_counts(counts.only_verified() if verified_only else counts)

    @strawberry.field(
        description="The published comments of all its products, as Product.comments lists "
        "a product's: the same filters, facets, orders and cursors; facets.productId narrows "
        "it to one of its products. MOST_HELPFUL is not offered (BAD_USER_INPUT)."
    )
    async def comments(
        self,
        info: Info,
        language: str | None = None,
        ratings: list[int] | None = None,
        verified_only: bool = False,
        facets: Annotated[CommentFacets, strawberry.lazy("schema.facets.types")] | None = None,
        order_by: CommentOrder = CommentOrder.NEWEST,
        first: int | None = None,
        after: str | None = None,
        last: int | None = None,
        before: str | None = None,
    ) -> Annotated[CommentConnection, strawberry.lazy("schema.comments.connection")] | None:
        from schema.comments.connection import CommentConnection

        page = await comment_reads.comments(
            info.context,
            self.group_id,
            language=language,
            ratings=ratings,
            first=first,
            after=after,
            last=last,
            before=before,
            verified_only=verified_only,
            order=order_by.stored(),
            facets=NO_FACETS if facets is None else facets.checked(),
            of_group=True,
        )
        return CommentConnection.from_listing(page)

    @strawberry.field(
        description=f"{STRUCTURED_DATA} Here a ProductGroup (productGroupID: the group's id) "
        "over the published comments of all its products, as its stats and comments count "
        "and list them."
    )
    async def structured_data(
        self,
        info: Info,
        name: str | None = None,
        language: str | None = None,
        reviews: int | None = None,
    ) -> str | None:
        return await snippets.group_markup(
            info.context, self.group_id, name=name, language=language, reviews=reviews
        )

    @strawberry.field(
        description="The attributes the shop asks reviewers of the group's products, in "
        "display order; null when they could not be read."
    )
    async def attribute_definitions(
        self, info: Info
    ) -> list[Annotated[AttributeDefinition, strawberry.lazy("schema.facets.types")]] | None:
        from schema.facets.types import AttributeDefinition

        scope = summaries.group_scope(self.group_id)
        return [AttributeDefinition.of(d) for d in await summaries.definitions(info.context, scope)]

    @strawberry.field(
        description="The revision of its attribute definitions (0: none set yet), which "
        "setAttributeDefinitions changes from."
    )
    async def attribute_definitions_revision(self, info: Info) -> int:
        scope = summaries.group_scope(self.group_id)
        return await summaries.definitions_revision(info.context, scope)

    @strawberry.field(
        description="How the published comments of all its products answered each attribute: "
        "exact counts for any language, ratings and verified filter."
    )
    async def attribute_summary(
        self,
        info: Info,
        language: str | None = None,
        ratings: list[int] | None = None,
        verified_only: bool = False,
    ) -> list[Annotated[AttributeDistribution, strawberry.lazy("schema.facets.types")]] | None:
        from schema.facets.types import AttributeDistribution

        found = await summaries.attribute_summary(
            info.context,
            summaries.group_scope(self.group_id),
            language=language,
            ratings=ratings,
            verified_only=verified_only,
        )
        return [AttributeDistribution.of(d) for d in found]

    @strawberry.field(
        description='"Customers mention" over all its products: topics most mentioned first, '
        "with exact counts of all, positive (4-5 stars) and negative (1-2 stars) mentions."
    )
    async def topics(
        self,
        info: Info,
        language: str | None = None,
        ratings: list[int] | None = None,
        verified_only: bool = False,
        first: int | None = None,
    ) -> list[Annotated[TopicMention, strawberry.lazy("schema.facets.types")]] | None:
        from schema.facets.types import TopicMention

        found = await summaries.topics(
            info.context,
            summaries.group_scope(self.group_id),
            language=language,
            ratings=ratings,
            verified_only=verified_only,
            first=first,
        )
        return [TopicMention.of(m) for m in found]
