"""Product and its counters."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Self

import strawberry
from strawberry import relay

from resolvers import read_set
from resolvers.comments import reads as comment_reads
from resolvers.facets import summaries
from resolvers.facets.filters import NONE as NO_FACETS
from resolvers.products import groups, snippets, stats
from schema.comments.orders import CommentOrder
from schema.context import Info
from schema.scalars import DateTime
from storage.model import rules
from storage.model.catalogue import NAME_MAX
from storage.model.comments import PAGE_SIZE_DEFAULT, PAGE_SIZE_MAX, RatingCounts

# What structuredData is, said once for both types that offer it.
STRUCTURED_DATA = (
    "Review markup for search engines (schema.org JSON-LD): a String of JSON the server has "
    'serialized for a <script type="application/ld+json"> element, to paste verbatim, never '
    "parsed and re-serialized (it writes <, >, & and U+2028/U+2029 as \\u escapes; a JSON "
    "library would not, and a review could end the element). aggregateRating holds the exact "
    "counters of published comments (ratingValue: the mean to 2 decimals), review the newest "
    "published comments. Null without published comments. language: that language's only; "
    f"reviews: how many, 0..{snippets.REVIEWS_MAX} (default {snippets.REVIEWS_DEFAULT}); "
    f"name: the name the page shows (at most {NAME_MAX} characters), else the id: the "
    "service stores no names. Merchant replies are never reviews; a comment written with a "
    "merchant token cannot be told apart."
)

if TYPE_CHECKING:
    from schema.comments.connection import CommentConnection
    from schema.facets.types import (
        AttributeDefinition,
        AttributeDistribution,
        CommentFacets,
        TopicMention,
    )
    from schema.products.groups import ProductGroup


@strawberry.type(description="How many comments carry one rating.")
class RatingCount:
    rating: int = strawberry.field(description="The rating, 1 to 5.")
    count: int = strawberry.field(description="Exact number of comments with this rating.")


@strawberry.type(description="Counts per rating for a product, all languages or one.")
class RatingStats:
    language: str | None = strawberry.field(
        description="The language counted, or null for all languages."
    )
    total: int = strawberry.field(description="Exact number of comments counted.")
    average: float | None = strawberry.field(description="Mean rating, null when total is 0.")
    histogram: list[RatingCount] = strawberry.field(
        description="Always five entries, ratings 5 down to 1."
    )

    @classmethod
    def from_counts(cls, counts: RatingCounts) -> Self:
        return cls(
            language=None if counts.language is None else rules.canonical_language(counts.language),
            total=counts.total,
            average=counts.average,
            histogram=[
                RatingCount(rating=r, count=counts.count(r)) for r in reversed(rules.RATINGS)
            ],
        )


@strawberry.type(description="A product, by the shop's own identifier. Comments hang off it.")
class Product(relay.Node):
    product_id: strawberry.ID = strawberry.field(description="The shop's identifier.")

    @classmethod
    def resolve_id(cls, root: Self, *, info: Info) -> str:
        return str(root.product_id)

    @classmethod
    def of(cls, product_id: str) -> Self:
        read_set.product(product_id)
        return cls(product_id=strawberry.ID(product_id))

    @strawberry.field(
        description="Counters of published comments per rating; language null "
        "means all languages; verifiedOnly counts verified purchases only."
    )
    async def stats(
        self, info: Info, language: str | None = None, verified_only: bool = False
    ) -> RatingStats | None:
        counts = await stats.counts(info.context, self.product_id, language)
        return RatingStats.from_counts(counts.only_verified() if verified_only else counts)

    @strawberry.field(
        description="The product's published comments, newest first unless orderBy says "
        "otherwise. ratings: any subset of 1..5 (empty or null = all); verifiedOnly keeps "
        f"verified purchases. first/last: 0..{PAGE_SIZE_MAX} (default {PAGE_SIZE_DEFAULT}). "
        "Cursors are opaque keyset positions of their order: another order refuses them "
        "(BAD_USER_INPUT). Every order costs the same at any depth."
    )
    async def comments(
        self,
        info: Info,
        language: str | None = None,
        ratings: list[int] | None = None,
        verified_only: bool = False,
        order_by: CommentOrder = CommentOrder.NEWEST,
        first: int | None = None,
        after: str | None = None,
        last: int | None = None,
        before: str | None = None,
        facets: Annotated[CommentFacets, strawberry.lazy("schema.facets.types")] | None = None,
    ) -> Annotated[CommentConnection, strawberry.lazy("schema.comments.connection")] | None:
        from schema.comments.connection import CommentConnection

        page = await comment_reads.comments(
            info.context,
            self.product_id,
            language=language,
            ratings=ratings,
            first=first,
            after=after,
            last=last,
            before=before,
            verified_only=verified_only,
            order=order_by.stored(),
            facets=NO_FACETS if facets is None else facets.checked(),
        )
        return CommentConnection.from_listing(page)

    @strawberry.field(description=STRUCTURED_DATA)
    async def structured_data(
        self,
        info: Info,
        name: str | None = None,
        language: str | None = None,
        reviews: int | None = None,
    ) -> str | None:
        return await snippets.product_markup(
            info.context, self.product_id, name=name, language=language, reviews=reviews
        )

    @strawberry.field(
        description="The group of products (variants) this product belongs to; null when it "
        "belongs to none."
    )
    async def group(
        self, info: Info
    ) -> Annotated[ProductGroup, strawberry.lazy("schema.products.groups")] | None:
        from schema.products.groups import ProductGroup

        found = await groups.group_of(info.context, self.product_id)
        return None if found is None else ProductGroup.of(found)

    @strawberry.field(
        description="The attributes the shop asks reviewers of this product (its group's, "
        "when it has one), in display order; null when they could not be read."
    )
    async def attribute_definitions(
        self, info: Info
    ) -> list[Annotated[AttributeDefinition, strawberry.lazy("schema.facets.types")]] | None:
        from schema.facets.types import AttributeDefinition

        ctx = info.context
        defined = await summaries.definitions(ctx, await summaries.defining(ctx, self.product_id))
        return [AttributeDefinition.of(d) for d in defined]

    @strawberry.field(
        description="The revision of the definitions attributeDefinitions shows (0: none set "
        "yet), which setAttributeDefinitions changes from."
    )
    async def attribute_definitions_revision(self, info: Info) -> int:
        ctx = info.context
        return await summaries.definitions_revision(
            ctx, await summaries.defining(ctx, self.product_id)
        )

    @strawberry.field(
        description="How the product's published comments answered each attribute: exact "
        "counts for any language, ratings and verified filter, in the definitions' order "
        "(then answers whose value the shop has retired)."
    )
    async def attribute_summary(
        self,
        info: Info,
        language: str | None = None,
        ratings: list[int] | None = None,
        verified_only: bool = False,
    ) -> list[Annotated[AttributeDistribution, strawberry.lazy("schema.facets.types")]] | None:
        from schema.facets.types import AttributeDistribution

        ctx = info.context
        found = await summaries.attribute_summary(
            ctx,
            summaries.product_scope(self.product_id),
            language=language,
            ratings=ratings,
            verified_only=verified_only,
            defined_in=await summaries.defining(ctx, self.product_id),
        )
        return [AttributeDistribution.of(d) for d in found]

    @strawberry.field(
        description='"Customers mention": the topics the product\'s published comments '
        "mention, most mentioned first, with exact counts of all, positive (4-5 stars) and "
        "negative (1-2 stars) mentions for any language, ratings and verified filter; "
        "first: how many (all when null)."
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
            summaries.product_scope(self.product_id),
            language=language,
            ratings=ratings,
            verified_only=verified_only,
            first=first,
        )
        return [TopicMention.of(m) for m in found]

    @strawberry.field(
        description="When the newest comment still shown was written; null without comments. "
        "Read from the listing itself, so it follows deletes."
    )
    async def last_commented_at(self, info: Info) -> DateTime | None:
        last = await stats.last_commented_at(info.context, self.product_id)
        return None if last is None else DateTime(last)
