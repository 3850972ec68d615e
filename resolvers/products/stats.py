"""A product's id from a client, its counters and when it was last commented on."""

from __future__ import annotations

from resolvers.context import Context
from storage.model import rules
from storage.model.comments import RatingCounts


def product_id(raw: str) -> str:
    """A product id from a client, validated (BAD_USER_INPUT otherwise)."""
    return rules.validate_product_id(raw)


async def counts(ctx: Context, pid: str, language: str | None) -> RatingCounts:
    """Counters of a product, all languages or one, through the request's stats loader."""
    lang = None if language is None else rules.validate_language(language)
    return await ctx.storage(ctx.loaders.stats.load((rules.validate_product_id(pid), lang)))


async def last_commented_at(ctx: Context, pid: str) -> str | None:
    """When the product's newest comment was written; None without comments."""
    return await ctx.storage(ctx.loaders.last_commented.load(rules.validate_product_id(pid)))
