"""Google's product review feed (schema 2.4): the document's head and tail, and one review.

The feed is written as text, a review at a time, never held as a document: ``head``,
``REVIEWS_OPEN``, ``REVIEWS_CLOSE`` and ``FEED_CLOSE`` frame it, ``review_xml`` gives one
``<review>`` element, in the element order of Google's schema (``product_reviews.xsd``
beside this module, an xs:sequence). Pure: it formats what it is given.

Texts are made safe for XML 1.0 here, whatever storage holds:

- characters XML 1.0 cannot carry at all (C0 controls but tab, line feed and carriage
  return; U+FFFE, U+FFFF; unpaired surrogates) are dropped, not replaced: they have no
  meaning a reader could see, and a replacement character would put noise in a review;
- ``&``, ``<`` and ``>`` become entities (so ``]]>`` cannot close anything), and a carriage
  return ``&#13;``, which a parser would otherwise turn into a line feed;
- everything else (quotes, U+2028, emoji, right-to-left text and its marks) is written as
  it is, in UTF-8: all are characters XML 1.0 allows in text.

A text left empty or blank by that (storage refuses such texts, so only a damaged item
could) is written as ``-`` where the schema requires a text (content, the reviewer's
name is then the shop's word for anonymous), and left out where it is optional (title).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Final

from storage.model.catalogue import CatalogueLine
from storage.model.comments import ANONYMOUS, Comment

SCHEMA_VERSION: Final = "2.4"
SCHEMA_LOCATION: Final = (
    "http://www.google.com/shopping/reviews/schema/product/2.4/product_reviews.xsd"
)
RATING_MIN: Final = 1
RATING_MAX: Final = 5
# What XML 1.0 cannot carry (its Char production, inverted).
_ILLEGAL = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")
_ESCAPES = str.maketrans({"&": "&amp;", "<": "&lt;", ">": "&gt;", "\r": "&#13;"})
_ATTRIBUTE_ESCAPES = str.maketrans(
    {
        "&": "&amp;",
        "<": "&lt;",
        ">": "&gt;",
        '"': "&quot;",
        "\r": "&#13;",
        "\n": "&#10;",
        "\t": "&#9;",
    }
)


def clean(text: str) -> str:
    """``text`` without the characters XML 1.0 cannot carry."""
    return _ILLEGAL.sub("", text)


def text(value: str) -> str:
    """``value`` as XML character data."""
    return clean(value).translate(_ESCAPES)


def attribute(value: str) -> str:
    """``value`` as the inside of a double-quoted XML attribute."""
    return clean(value).translate(_ATTRIBUTE_ESCAPES)


def _present(value: str | None) -> str | None:
    """The value made safe, or None when nothing readable is left of it."""
    if value is None:
        return None
    cleaned = clean(value)
    return cleaned if cleaned.strip() else None


@dataclass(frozen=True, slots=True)
class Publisher:
    """Who the feed is from: the publisher (the shop) and, when one is used, the aggregator."""

    name: str
    favicon: str | None = None
    aggregator: str | None = None


def head(publisher: Publisher) -> str:
    """The feed up to its first review."""
    lines = [
        '<?xml version="1.0" encoding="UTF-8"?>',
        '<feed xmlns:vc="http://www.w3.org/2007/XMLSchema-versioning"'
        ' xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance"'
        f' xsi:noNamespaceSchemaLocation="{SCHEMA_LOCATION}">',
        f"  <version>{SCHEMA_VERSION}</version>",
    ]
    if publisher.aggregator is not None:
        lines.append(f"  <aggregator><name>{text(publisher.aggregator)}</name></aggregator>")
    favicon = "" if publisher.favicon is None else f"<favicon>{text(publisher.favicon)}</favicon>"
    lines.append(f"  <publisher><name>{text(publisher.name)}</name>{favicon}</publisher>")
    return "\n".join(lines) + "\n"


# Around the reviews; a feed without any leaves ``<reviews>`` out (the schema wants at
# least one review in it).
REVIEWS_OPEN: Final = "  <reviews>\n"
REVIEWS_CLOSE: Final = "  </reviews>\n"
FEED_CLOSE: Final = "</feed>\n"


@dataclass(frozen=True, slots=True)
class FeedReview:
    """One review as the feed states it."""

    comment: Comment
    review_url: str
    review_url_singleton: bool  # the page shows this review alone (else a group of them)
    product_url: str
    product: CatalogueLine | None  # the catalogue's line for its product, when it has one
    withdrawn: bool = False  # sent to take it down (is_spam): no longer published


def review_xml(review: FeedReview) -> str:
    """One ``<review>`` element, its children in the schema's order, ending with a newline."""
    c = review.comment
    name = _present(c.author_name)
    out = ["    <review>", f"      <review_id>{text(c.comment_id)}</review_id>"]
    anonymous = "true" if name is None else "false"
    shown = ANONYMOUS if name is None else name
    out.append(f'      <reviewer><name is_anonymous="{anonymous}">{text(shown)}</name></reviewer>')
    out.append(f"      <is_verified_purchase>{_bool(c.verified)}</is_verified_purchase>")
    out.append(f"      <is_incentivized_review>{_bool(c.incentivized)}</is_incentivized_review>")
    out.append(f"      <review_timestamp>{text(c.created_at)}</review_timestamp>")
    title = _present(c.title)
    if title is not None:
        out.append(f"      <title>{text(title)}</title>")
    out.append(f"      <content>{text(_present(c.body) or '-')}</content>")
    out.append(f"      <review_language>{text(c.language)}</review_language>")
    kind = "singleton" if review.review_url_singleton else "group"
    out.append(f'      <review_url type="{kind}">{text(review.review_url)}</review_url>')
    out.append(
        f'      <ratings><overall min="{RATING_MIN}" max="{RATING_MAX}">{c.rating}</overall>'
        "</ratings>"
    )
    out.append("      <products>")
    out.append("        <product>")
    out.extend(_product_ids(review.product))
    product_name = None if review.product is None else _present(review.product.name)
    if product_name is not None:
        out.append(f"          <product_name>{text(product_name)}</product_name>")
    out.append(f"          <product_url>{text(review.product_url)}</product_url>")
    out.append("        </product>")
    out.append("      </products>")
    out.append(f"      <is_spam>{_bool(review.withdrawn)}</is_spam>")
    out.append("    </review>")
    return "\n".join(out) + "\n"


def _product_ids(line: CatalogueLine | None) -> list[str]:
    if line is None:
        return []
    ids = [
        (plural, singular, _present(value))
        for plural, singular, value in (
            ("gtins", "gtin", line.gtin),
            ("mpns", "mpn", line.mpn),
            ("skus", "sku", line.sku),
            ("brands", "brand", line.brand),
        )
    ]
    present = [
        f"            <{plural}><{singular}>{text(value)}</{singular}></{plural}>"
        for plural, singular, value in ids
        if value is not None
    ]
    if not present:
        return []
    return ["          <product_ids>", *present, "          </product_ids>"]


def _bool(value: bool) -> str:
    return "true" if value else "false"
