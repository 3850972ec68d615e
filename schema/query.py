"""The Query root."""

from __future__ import annotations

import strawberry
from strawberry import relay

from resolvers import listing
from resolvers.errors import BadUserInput
from schema.comment import Comment
from schema.context import Info
from schema.product import Product, ProductRanking
from storage import keys


def decode_global_id(value: str) -> tuple[str, str]:
    """(type name, id) of a Relay global id; BAD_USER_INPUT when it is not one."""
    try:
        gid = relay.GlobalID.from_id(value)
    except relay.GlobalIDValueError as exc:  # strawberry raises it for base64 errors too
        raise BadUserInput("not a valid global id") from exc
    return gid.type_name, gid.node_id


async def resolve_node(info: Info, value: str) -> Product | Comment | None:
    type_name, node_id = decode_global_id(value)
    if type_name == "Product":
        return Product.of(keys.validate_product_id(node_id))
    if type_name == "Comment":
        found = await listing.comment(info.context, node_id)
        return None if found is None else Comment.of(found)
    return None


@strawberry.type(description="Reads: products, their comments and counters, the leaderboard.")
class Query:
    @strawberry.field(description="Refetch any object by its global id; null when unknown.")
    async def node(self, info: Info, id: strawberry.ID) -> relay.Node | None:
        return await resolve_node(info, id)

    @strawberry.field(description="Refetch objects by global id, in input order; null for unknown.")
    async def nodes(self, info: Info, ids: list[strawberry.ID]) -> list[relay.Node | None]:
        import asyncio

        return list(await asyncio.gather(*(resolve_node(info, i) for i in ids)))

    @strawberry.field(
        description="A product by the shop's own identifier. A product without comments still "
        "resolves, with zero counts."
    )
    def product(self, product_id: strawberry.ID) -> Product:
        return Product.of(listing.product_id(product_id))

    @strawberry.field(
        description="A comment by its own identifier (AP4); null when it does not exist."
    )
    async def comment(self, info: Info, comment_id: strawberry.ID) -> Comment | None:
        found = await listing.comment(info.context, comment_id)
        return None if found is None else Comment.of(found)

    @strawberry.field(
        description="Leaderboard (AP11): products with the most 5-star comments, most first; "
        "1 <= first <= 100."
    )
    async def top_products(self, info: Info, first: int = 10) -> list[ProductRanking]:
        entries = await listing.top_products(info.context, first)
        return [ProductRanking.of(rank, e) for rank, e in enumerate(entries, start=1)]
