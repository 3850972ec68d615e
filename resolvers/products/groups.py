"""Product groups: a product's group, a group's products, its stats and its listing."""

from __future__ import annotations

from dataclasses import dataclass

from resolvers import read_set
from resolvers.context import Context
from resolvers.errors import BadUserInput
from resolvers.pages import page_size
from storage.model import rules
from storage.model.comments import RatingCounts
from storage.model.facet_counts import GROUP_LISTING, FacetCounts
from storage.model.facets import Scope
from storage.reads.cursor import Ordering, decode_cursor, encode_cursor
from storage.reads.facet_reader import counter_key
from storage.reads.groups import group_members, group_size, product_group


def group_id(raw: str) -> str:
    """A group id from a client, validated (BAD_USER_INPUT otherwise): the product ids' rule."""
    return rules.validate_product_id(raw)


async def group_of(ctx: Context, pid: str) -> str | None:
    """The group the product belongs to now; None when it belongs to none."""
    read_set.membership()
    return await ctx.storage(product_group(ctx.table, rules.validate_product_id(pid)))


@dataclass(frozen=True, slots=True)
class MembersPage:
    product_ids: tuple[str, ...]
    cursors: tuple[str, ...]
    has_next: bool
    has_previous: bool
    total: int


async def members(
    ctx: Context, gid: str, *, first: int | None, after: str | None
) -> MembersPage | None:
    """A page of the group's products by product id, with the group's exact count; None
    when no product has ever been in the group (no such group)."""
    read_set.group(gid)
    read_set.membership()
    size = page_size(first, after)
    position = None if after is None else decode_cursor(after, Ordering.MEMBERS)
    found = await ctx.storage(group_members(ctx.table, group_id(gid), size=size, after=position))
    if found.total is None:
        return None
    cursors = tuple(encode_cursor(p, Ordering.MEMBERS) for p in found.product_ids)
    return MembersPage(found.product_ids, cursors, found.has_more, after is not None, found.total)


async def exists(ctx: Context, gid: str) -> bool:
    """Whether the group has ever had a product (its count item exists)."""
    read_set.group(gid)
    return await ctx.storage(group_size(ctx.table, group_id(gid))) is not None


async def stats(ctx: Context, gid: str, language: str | None) -> RatingCounts:
    """The group's counters: its listing's counter item (every variant's published
    comments counted in it), all languages or one."""
    read_set.group(gid)
    lang = None if language is None else rules.validate_language(language)
    scope = Scope.group(group_id(gid))
    response = await ctx.storage(
        ctx.table.client.get_item(TableName=ctx.table.name, Key=counter_key(scope, GROUP_LISTING))
    )
    counts = FacetCounts.of_item(scope, GROUP_LISTING, response.get("Item"))
    return counts.as_rating_counts(gid, lang)


async def narrowed(ctx: Context, gid: str, pid: str) -> str:
    """The product a group's listing is narrowed to (``facets.productId``): one of the
    group's, else BAD_USER_INPUT."""
    product = rules.validate_product_id(pid)
    if await group_of(ctx, product) != gid:
        raise BadUserInput(f"facets.productId: product {product!r} is not in group {gid!r}")
    return product
