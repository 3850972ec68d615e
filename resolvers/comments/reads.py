"""Reading comments: a product's listing page, and one comment by id."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

from resolvers.context import Context
from resolvers.pages import page_request
from resolvers.products.stats import counts
from storage import keys
from storage.executor import Page
from storage.model import Comment, Direction, ListingFilter
from storage.reads import list_comments


@dataclass(frozen=True, slots=True)
class Listing:
    """One page of a listing with what the connection needs around it."""

    page: Page
    total: int
    has_next: bool
    has_previous: bool
    show_plan: bool  # the viewer may see how storage answered (EXPLAIN)


async def comments(
    ctx: Context,
    pid: str,
    *,
    language: str | None,
    ratings: list[int] | None,
    first: int | None,
    after: str | None,
    last: int | None,
    before: str | None,
) -> Listing:
    """One page of a product's comments; totals and plan come from the same stats read."""
    listing = ListingFilter(pid, language, None if ratings is None else frozenset(ratings))
    request = page_request(first, after, last, before)
    if listing.ratings is None:
        # One partition whatever the counts: read the page while the loader reads them.
        stats, page = await asyncio.gather(
            counts(ctx, listing.product_id, listing.language),
            ctx.storage(list_comments(ctx.table, listing, request)),
        )
    else:
        stats = await counts(ctx, listing.product_id, listing.language)
        page = await ctx.storage(
            list_comments(ctx.table, listing, request, stats=stats, tuning=ctx.tuning)
        )
    # Relay: the flag for the direction of travel is exact; the other one says whether the
    # client came from a cursor (items may exist on that side), without a read to prove it.
    if request.direction is Direction.FORWARD:
        has_next, has_previous = page.has_more, after is not None
    else:
        has_next, has_previous = before is not None, page.has_more
    return Listing(page, stats.matching(listing.ratings), has_next, has_previous, ctx.may_explain())


async def comment(ctx: Context, comment_id: str) -> Comment | None:
    """A comment by id, or None; through the request's comment loader."""
    return await ctx.storage(ctx.loaders.comments.load(keys.validate_comment_id(comment_id)))
