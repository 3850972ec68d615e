"""The leaderboard of 5-star comments (AP11)."""

from __future__ import annotations

from typing import Self

import strawberry

from resolvers.products import leaderboard
from schema.context import Info
from schema.products.types import Product
from storage.reads.leaders import LeaderEntry


@strawberry.type(description="A place on the leaderboard of 5-star comments.")
class ProductRanking:
    rank: int = strawberry.field(description="1 for the product with the most 5-star comments.")
    five_star_count: int = strawberry.field(description="Exact number of 5-star comments.")
    product: Product = strawberry.field(description="The product ranked.")

    @classmethod
    def of(cls, rank: int, entry: LeaderEntry) -> Self:
        return cls(
            rank=rank, five_star_count=entry.five_star_count, product=Product.of(entry.product_id)
        )


async def top_products(info: Info, first: int) -> list[ProductRanking]:
    entries = await leaderboard.top_products(info.context, first)
    return [ProductRanking.of(rank, e) for rank, e in enumerate(entries, start=1)]
