"""Reading comments: a product's listing page, and one comment by id."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from resolvers import read_set
from resolvers.comments.visibility import visible
from resolvers.context import Context
from resolvers.errors import BadUserInput, Forbidden, QueryTooComplex, Unauthenticated
from resolvers.facets.filters import NONE as NO_FACETS
from resolvers.facets.filters import Facets
from resolvers.pages import page_request
from resolvers.products import groups
from resolvers.products.stats import counts
from storage.model import rules
from storage.model.comments import Comment, Direction, ListingFilter, Order, PageRequest
from storage.reads.cursor import Ordering
from storage.reads.executor import Page
from storage.reads.facet_reader import (
    count_calls,
    count_facet_listing,
    count_plan,
    read_facet_listing,
)
from storage.reads.planner import Plan
from storage.reads.reader import author_comments, author_total, queue_length, read_listing
from storage.reads.reader import moderation_queue as read_queue

# A listing's exact total, or how to count it when asked (a listing with several facet
# values: its count reads entries, so it is read only for a request that selects it).
Total = int | Callable[[], Awaitable[int]]


@dataclass(frozen=True, slots=True)
class Listing:
    """One page of a listing with what the connection needs around it."""

    page: Page
    total: Total
    has_next: bool
    has_previous: bool
    show_plan: bool  # the viewer may see how storage answered (EXPLAIN)
    ordering: Ordering  # the order its cursors belong to


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
    verified_only: bool = False,
    order: Order = Order.NEWEST,
    facets: Facets = NO_FACETS,
    of_group: bool = False,
) -> Listing:
    """One page of a product's published comments in ``order`` (or a group's: ``of_group``
    and ``pid`` is the group's id); totals and plan come from the same stats read (the
    verified counters for ``verified_only``), or from the facet counters of a facet
    listing. A group's listing narrowed to one of its products (``facets.productId``) is
    that product's own listing."""
    if of_group and facets.product_id is not None:
        pid, of_group = await groups.narrowed(ctx, pid, facets.product_id), False
    elif facets.product_id is not None and facets.product_id != pid:
        raise BadUserInput(
            "facets.productId narrows a group's listing; on a product's own listing it may "
            "only name that product"
        )
    listing = ListingFilter(
        pid,
        language,
        None if ratings is None else frozenset(ratings),
        verified_only,
        facets.values,
        facets.exclude_incentivized,
        of_group,
    )
    ordering = Ordering.of(order)
    request = page_request(first, after, last, before, ordering=ordering)
    if listing.faceted:
        return await _facet_listing(ctx, listing, request, after, before, order, ordering)
    # The counters come through the request's loader (one read for every product and
    # language of the request), alongside the page's queries where storage can plan
    # without waiting for them.
    stats, page = await ctx.storage(
        read_listing(
            ctx.table,
            listing,
            request,
            lambda: counts(ctx, listing.product_id, listing.language),
            tuning=ctx.tuning,
            order=order,
        )
    )
    if verified_only:
        stats = stats.only_verified()
    total = stats.matching(listing.ratings)
    return _listing(ctx, page, total, request, after, before, ordering)


async def _facet_listing(
    ctx: Context,
    listing: ListingFilter,
    request: PageRequest,
    after: str | None,
    before: str | None,
    order: Order,
    ordering: Ordering,
) -> Listing:
    """A page of a facet listing. Its total comes from the counters with one facet value;
    with several it is counted from the entries, only when asked for, within the budget."""
    counts, page = await ctx.storage(
        read_facet_listing(ctx.table, listing, request, tuning=ctx.tuning, order=order)
    )
    known = counts.total(listing)
    total: Total = known if known is not None else _counter(ctx, count_plan(listing, counts))
    return _listing(ctx, page, total, request, after, before, ordering)


def _counter(ctx: Context, plan: Plan) -> Callable[[], Awaitable[int]]:
    """``totalCount`` of a listing with several facet values: its entries counted, priced
    first (QUERY_TOO_COMPLEX before any read when the request cannot afford it)."""

    async def count() -> int:
        calls = count_calls(plan)
        if not ctx.afford_storage_calls(calls):
            raise QueryTooComplex(
                f"Counting these comments could take {calls} storage calls, more than this "
                "request has left. Leave totalCount out: the page itself stays within budget "
                "without it."
            )
        return await ctx.storage(count_facet_listing(ctx.table, plan))

    return count


def _listing(
    ctx: Context,
    page: Page,
    total: Total,
    request: PageRequest,
    after: str | None,
    before: str | None,
    ordering: Ordering,
) -> Listing:
    # Relay: the flag for the direction of travel is exact; the other one says whether the
    # client came from a cursor (items may exist on that side), without a read to prove it.
    if request.direction is Direction.FORWARD:
        has_next, has_previous = page.has_more, after is not None
    else:
        has_next, has_previous = before is not None, page.has_more
    return Listing(page, total, has_next, has_previous, ctx.may_explain(), ordering)


async def comment(ctx: Context, comment_id: str) -> Comment | None:
    """A comment by id, or None when it does not exist or the viewer may not see it;
    through the request's comment loader."""
    valid = rules.validate_comment_id(comment_id)
    read_set.comment(valid)
    found = await ctx.storage(ctx.loaders.comments.load(valid))
    return visible(ctx, found)


async def viewer_comments(
    ctx: Context,
    author_id: str,
    *,
    first: int | None,
    after: str | None,
    last: int | None,
    before: str | None,
) -> Listing:
    """The viewer's own comments in every status, newest first, with their exact total."""
    request = page_request(first, after, last, before, ordering=Ordering.AUTHOR)
    total, page = await asyncio.gather(
        ctx.storage(author_total(ctx.table, author_id)),
        ctx.storage(author_comments(ctx.table, author_id, request)),
    )
    return _listing(ctx, page, total, request, after, before, Ordering.AUTHOR)


async def moderation_queue(ctx: Context, *, first: int | None, after: str | None) -> Listing:
    """PENDING comments, oldest first, for moderators (FORBIDDEN for anyone else)."""
    who = ctx.viewer()
    if who is None:
        raise Unauthenticated("the moderation queue needs an Authorization: Bearer <token>")
    if not who.is_moderator:
        raise Forbidden("only moderators may read the moderation queue")
    request = page_request(first, after, None, None, ordering=Ordering.QUEUE)
    total, page = await asyncio.gather(
        ctx.storage(queue_length(ctx.table)),
        ctx.storage(read_queue(ctx.table, request)),
    )
    return _listing(ctx, page, total, request, after, None, Ordering.QUEUE)
