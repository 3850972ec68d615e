"""Review snippets for search engines: a product's (or a group's) schema.org markup as
JSON-LD, serialized for a ``<script type="application/ld+json">`` element of its page.

Search engines show stars under a result from a ``Product`` with ``aggregateRating`` and
``review``, and report markup that breaks their review-snippet guidelines. So the markup is
null when nothing published is counted (no markup without reviews), its counts are the
exact counters, and its reviews are the newest published comments, read from the listing
itself: PENDING and REJECTED comments are never listed. Merchant replies are answers under
a comment, not reviews, and never appear. What it cannot tell apart: a comment written
with a token of the merchant role is stored like any other (comments do not keep their
author's roles), so a shop that reviews its own products must keep that out by moderation.

The value is a string, serialized here once: what must be escaped for a ``<script>``
element is a property of the serialization, not of the data. ``<``, ``>`` and ``&`` are
written as ``\\u003c``, ``\\u003e`` and ``\\u0026`` (so ``</script>``, ``<!--`` and
``<script`` in a review cannot end or reopen the element), and U+2028 and U+2029 as
``\\u2028`` and ``\\u2029`` (line terminators to older JavaScript parsers). Every escape is a
JSON string escape, so the text parses back to exactly the data.

Reads: the counters through the request's stats loader and one page of the listing, by the
listing's own path (storage.reads), as ``Product.comments`` reads them.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from decimal import ROUND_HALF_UP, Decimal
from typing import Any

from resolvers.context import Context
from resolvers.errors import BadUserInput
from resolvers.products.groups import group_id
from resolvers.products.stats import counts
from storage.model import rules
from storage.model.catalogue import NAME_MAX
from storage.model.comments import Comment, ListingFilter, PageRequest, RatingCounts
from storage.model.rules import _check_text
from storage.reads.facet_reader import read_facet_listing
from storage.reads.reader import read_listing

# Reviews the markup carries by default, and at most: a search engine shows one or two,
# and each costs its bytes in every page that embeds the markup.
REVIEWS_DEFAULT = 5
REVIEWS_MAX = 20
BEST_RATING = max(rules.RATINGS)
WORST_RATING = min(rules.RATINGS)
# ratingValue: the exact mean, rounded half up to this many decimals.
DECIMALS = Decimal("0.01")

# What a <script> element's content must not hold as is, and the JSON escapes for them.
_SCRIPT_SAFE = str.maketrans(
    {
        "<": "\\u003c",
        ">": "\\u003e",
        "&": "\\u0026",
        "\u2028": "\\u2028",
        "\u2029": "\\u2029",
    }
)


def reviews_wanted(raw: int | None) -> int:
    """How many reviews the markup carries: 0..REVIEWS_MAX (BAD_USER_INPUT otherwise)."""
    wanted = REVIEWS_DEFAULT if raw is None else raw
    if isinstance(wanted, bool) or not 0 <= wanted <= REVIEWS_MAX:
        raise BadUserInput(f"reviews must be between 0 and {REVIEWS_MAX}")
    return wanted


def shown_name(raw: str | None) -> str | None:
    """The name a client gives the product (the catalogue's rule for names), or None."""
    return _check_text("name", raw, NAME_MAX, NAME_MAX * 4, optional=True)


async def product_markup(
    ctx: Context, pid: str, *, name: str | None, language: str | None, reviews: int | None
) -> str | None:
    """The product's review markup, null when no published comment is counted."""
    size, shown = reviews_wanted(reviews), shown_name(name)
    listing = ListingFilter(rules.validate_product_id(pid), language)
    stats, page = await ctx.storage(
        read_listing(
            ctx.table,
            listing,
            PageRequest(size),
            lambda: counts(ctx, listing.product_id, listing.language),
            tuning=ctx.tuning,
        )
    )
    about = {"@type": "Product", "name": shown or listing.product_id}
    return script_json(markup(about, stats, page.comments))


async def group_markup(
    ctx: Context, gid: str, *, name: str | None, language: str | None, reviews: int | None
) -> str | None:
    """The group's review markup over all its products, null when no published comment of
    them is counted."""
    size, shown = reviews_wanted(reviews), shown_name(name)
    listing = ListingFilter(group_id(gid), language, of_group=True)
    found, page = await ctx.storage(
        read_facet_listing(ctx.table, listing, PageRequest(size), tuning=ctx.tuning)
    )
    about = {
        "@type": "ProductGroup",
        "name": shown or listing.product_id,
        "productGroupID": listing.product_id,
    }
    return script_json(markup(about, found.scope, page.comments))


def markup(
    about: dict[str, Any], stats: RatingCounts, comments: Iterable[Comment]
) -> dict[str, Any] | None:
    """The JSON-LD object: ``about`` (its type and names) with the exact counters and the
    published ``comments`` as reviews; None when nothing is counted."""
    if stats.total == 0:
        return None
    rated = sum(r * n for r, n in zip(rules.RATINGS, stats.by_rating, strict=True))
    mean = (Decimal(rated) / Decimal(stats.total)).quantize(DECIMALS, ROUND_HALF_UP)
    found: dict[str, Any] = {
        "@context": "https://schema.org",
        **about,
        "aggregateRating": {
            "@type": "AggregateRating",
            "ratingValue": float(mean),
            "reviewCount": stats.total,
            "bestRating": BEST_RATING,
            "worstRating": WORST_RATING,
        },
    }
    shown = [review(c) for c in comments if c.published]
    if shown:
        found["review"] = shown
    return found


def review(comment: Comment) -> dict[str, Any]:
    """One comment as a schema.org Review."""
    found: dict[str, Any] = {
        "@type": "Review",
        "author": {"@type": "Person", "name": comment.display_author},
        "datePublished": comment.created_at[:10],
        "reviewRating": {
            "@type": "Rating",
            "ratingValue": comment.rating,
            "bestRating": BEST_RATING,
            "worstRating": WORST_RATING,
        },
        "reviewBody": comment.body,
        "inLanguage": rules.canonical_language(comment.language),
    }
    if comment.title is not None:
        found["name"] = comment.title
    return found


def script_json(value: dict[str, Any] | None) -> str | None:
    """``value`` as JSON that a ``<script>`` element holds verbatim (see the module's
    docstring); None stays None."""
    if value is None:
        return None
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    return text.translate(_SCRIPT_SAFE)
