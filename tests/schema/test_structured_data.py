"""Review markup for search engines (Product.structuredData, ProductGroup.structuredData):
embedded in a page's ``<script type="application/ld+json">`` and read back with extruct as
crawlers read it, it carries the exact counters and the newest published reviews; hostile
review text neither ends the element nor changes on the way; nothing is marked up without
published reviews; it reads storage as the listing does."""

from __future__ import annotations

import json
from collections.abc import Callable
from decimal import ROUND_HALF_UP, Decimal
from html.parser import HTMLParser
from typing import Any

import extruct
import pytest
from graphql import parse

from resolvers.products.snippets import REVIEWS_MAX, markup, script_json
from schema import build_schema
from schema.cost import estimate
from storage.engine.table import TableRef
from storage.model import rules
from storage.model.comments import Comment, ModerationMode, NewComment, RatingCounts
from storage.ops.group_move import move_product
from storage.writes import create_comment
from storage.writes.moderate import Decision, moderate_comment
from storage.writes.reply import reply_to_comment
from tests.api_helpers import Api
from tests.helpers import FAST, stamp

# Everything a review may hold that could end a script element, open a comment in it, end
# a JavaScript string or line, or change on the way through an encoder.
HOSTILE = (
    'She said "fine" \\ </script><script>alert(1)</script> <!-- open <script>x</script> '
    "&amp; & \u2028 line \u2029 para \U0001f600 \u200f\u05e9\u05dc\u05d5\u05dd\u200e "
    "</SCRIPT > ]]> \\u003c"
)
HOSTILE_TITLE = "</script><!--"
SCHEMA = build_schema()._schema

PRODUCT = """query($p: ID!, $n: Int, $l: String, $name: String) {
  product(productId: $p) {
    structuredData(reviews: $n, language: $l, name: $name)
    stats(language: $l) { total }
  }
}"""
GROUP = """query($g: ID!, $n: Int) {
  productGroup(groupId: $g) { structuredData(reviews: $n) stats { total } }
}"""


def page_with(markup_text: str) -> str:
    """A product page as a frontend renders it: the markup pasted into its script element."""
    return (
        "<!doctype html><html><head><title>Shoe</title>"
        f'<script type="application/ld+json">{markup_text}</script>'
        "</head><body><h1>Shoe</h1></body></html>"
    )


class Elements(HTMLParser):
    """The start tags of a page, as an HTML parser reads them (a script element's content
    ends at the first ``</script``)."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)


def crawled(markup_text: str) -> dict[str, Any]:
    """The one JSON-LD item a crawler reads from the page, and the page has one script."""
    html = page_with(markup_text)
    elements = Elements()
    elements.feed(html)
    elements.close()
    assert elements.tags.count("script") == 1
    items = extruct.extract(html, syntaxes=["json-ld"], uniform=False)["json-ld"]
    assert len(items) == 1
    item: dict[str, Any] = items[0]
    return item


def mean(ratings: list[int]) -> float:
    exact = Decimal(sum(ratings)) / Decimal(len(ratings))
    return float(exact.quantize(Decimal("0.01"), ROUND_HALF_UP))


def expected_review(c: Comment) -> dict[str, Any]:
    review: dict[str, Any] = {
        "@type": "Review",
        "author": {"@type": "Person", "name": c.author_name or "Anonymous"},
        "datePublished": c.created_at[:10],
        "reviewRating": {"@type": "Rating", "ratingValue": c.rating, "bestRating": 5},
        "reviewBody": c.body,
        "inLanguage": rules.canonical_language(c.language),
    }
    review["reviewRating"]["worstRating"] = 1
    if c.title is not None:
        review["name"] = c.title
    return review


async def write(
    table: TableRef,
    pid: str,
    n: int,
    rating: int,
    *,
    body: str | None = None,
    language: str = "en",
    title: str | None = None,
    author_name: str | None = "Ann",
    mode: ModerationMode = ModerationMode.POST,
) -> Comment:
    new = NewComment(
        pid,
        language,
        rating,
        body or f"review {n} of {pid}",
        f"author-{n}",
        title=title,
        author_name=author_name,
        created_at=stamp(n),
    )
    return (await create_comment(table, new, moderation=mode, backoff=FAST)).comment


async def test_a_crawler_reads_the_exact_counters_and_the_newest_published_reviews(
    api: Api, table: TableRef, product_id: str
) -> None:
    published = [
        await write(table, product_id, 0, 5, author_name=None),
        await write(table, product_id, 1, 4, title="Good", language="de"),
        await write(table, product_id, 2, 1),
        await write(table, product_id, 3, 2, language="pt-BR"),
        await write(table, product_id, 4, 5),
        await write(table, product_id, 5, 3, title="Ok"),
    ]
    pending = await write(table, product_id, 10, 1, body="pending words", mode=ModerationMode.PRE)
    rejected = await write(table, product_id, 11, 1, body="rejected words", mode=ModerationMode.PRE)
    await moderate_comment(table, rejected.comment_id, Decision.REJECT, moderator="mod")
    # The newest published review is the hostile one; a merchant answers another.
    published.append(
        await write(table, product_id, 9, 4, body=HOSTILE, title=HOSTILE_TITLE, author_name="<b>")
    )
    await reply_to_comment(table, published[4].comment_id, "merchant words", merchant_name="Shop")

    body = await api.gql(PRODUCT, {"p": product_id, "n": 5})
    data = body["data"]["product"]
    text = data["structuredData"]
    # Nothing in it a script element or a JavaScript parser could stop at.
    assert not {"<", ">", "&", "\u2028", "\u2029"} & set(text)
    item = crawled(text)
    assert item["@context"] == "https://schema.org"
    assert (item["@type"], item["name"]) == ("Product", product_id)
    assert item["aggregateRating"] == {
        "@type": "AggregateRating",
        "ratingValue": mean([c.rating for c in published]),
        "reviewCount": len(published),
        "bestRating": 5,
        "worstRating": 1,
    }
    assert data["stats"]["total"] == len(published)
    newest = sorted(published, key=lambda c: c.created_at, reverse=True)[:5]
    assert item["review"] == [expected_review(c) for c in newest]
    # The hostile text came through intact, and is the first review.
    assert item["review"][0]["reviewBody"] == HOSTILE
    assert item["review"][0]["name"] == HOSTILE_TITLE
    # Only published comments: neither the pending nor the rejected one, nor a reply.
    for words in (pending.body, rejected.body, "merchant words"):
        assert words not in json.dumps(json.loads(text), ensure_ascii=False)
    # The text a JSON parser reads is exactly the data (the escapes are JSON's own).
    assert json.loads(text) == item


async def test_the_markup_reads_the_stats_loader_and_one_page_of_the_listing(
    api: Api, table: TableRef, product_id: str
) -> None:
    for n in range(8):
        await write(table, product_id, n, 1 + n % 5)
    body = await api.gql(PRODUCT, {"p": product_id, "n": 3})
    # The stats field and the markup share the loader's read; the page is one Query.
    assert body["extensions"]["storage"]["callsByOperation"] == {"batch_get_item": 1, "query": 1}
    assert body["extensions"]["storage"]["calls"] == 2
    assert len(crawled(body["data"]["product"]["structuredData"])["review"]) == 3


async def test_no_published_review_no_markup(api: Api, table: TableRef, product_id: str) -> None:
    assert (await api.data(PRODUCT, {"p": product_id}))["product"]["structuredData"] is None
    await write(table, product_id, 0, 5, body="waits for a moderator", mode=ModerationMode.PRE)
    assert (await api.data(PRODUCT, {"p": product_id}))["product"]["structuredData"] is None
    group = await api.data(GROUP, {"g": f"g-{product_id}"})
    assert group["productGroup"] is None or group["productGroup"]["structuredData"] is None


async def test_a_language_name_and_number_of_reviews(
    api: Api, table: TableRef, product_id: str
) -> None:
    await write(table, product_id, 0, 5, language="de")
    await write(table, product_id, 1, 2, language="de")
    await write(table, product_id, 2, 1, language="en")
    asked = {"p": product_id, "l": "DE", "n": 0, "name": "Schuh </script> Größe 42"}
    item = crawled((await api.data(PRODUCT, asked))["product"]["structuredData"])
    assert item["name"] == "Schuh </script> Größe 42"
    assert item["aggregateRating"]["reviewCount"] == 2
    assert item["aggregateRating"]["ratingValue"] == 3.5
    assert "review" not in item  # reviews: 0 marks up the counters alone
    one = crawled((await api.data(PRODUCT, {**asked, "n": 1}))["product"]["structuredData"])
    assert [r["inLanguage"] for r in one["review"]] == ["de"]
    assert (await api.data(PRODUCT, {**asked, "l": "fr"}))["product"]["structuredData"] is None
    for bad in ({"n": REVIEWS_MAX + 1}, {"n": -1}, {"name": "x" * 151}, {"name": "bell \x07"}):
        assert await api.error_code(PRODUCT, {**asked, **bad}) == "BAD_USER_INPUT"


async def test_a_groups_markup_covers_its_variants(
    api: Api, table: TableRef, product_id: str
) -> None:
    group, red, blue = f"g-{product_id}", f"{product_id}-red", f"{product_id}-blue"
    for variant in (red, blue):
        await move_product(table, variant, group, pause=0.01, backoff=FAST)
    written = [
        await write(table, red, 0, 5),
        await write(table, blue, 1, 2, title="Runs small"),
        await write(table, red, 2, 4, language="de"),
    ]
    await write(table, blue, 3, 1, body="still pending", mode=ModerationMode.PRE)
    body = await api.gql(GROUP, {"g": group, "n": 5})
    data = body["data"]["productGroup"]
    item = crawled(data["structuredData"])
    assert (item["@type"], item["name"], item["productGroupID"]) == ("ProductGroup", group, group)
    assert item["aggregateRating"]["reviewCount"] == data["stats"]["total"] == 3
    assert item["aggregateRating"]["ratingValue"] == mean([c.rating for c in written])
    newest = sorted(written, key=lambda c: c.created_at, reverse=True)
    assert item["review"] == [expected_review(c) for c in newest]
    # The group read by productGroup and its stats' counter item (two GetItems), then the
    # listing's path: its counter items (one TransactGetItems) and one Query per rating
    # that has comments (5, 4 and 2), within what the estimate priced.
    storage = body["extensions"]["storage"]
    assert storage["callsByOperation"] == {"get_item": 2, "transact_get_items": 1, "query": 3}
    assert storage["calls"] <= body["extensions"]["cost"]["requested"]


@pytest.mark.parametrize(
    ("serialize", "safe"),
    [
        pytest.param(script_json, True, id="served"),
        # The check is able to fail: what a JSON library writes breaks out of the element.
        pytest.param(lambda value: json.dumps(value, ensure_ascii=False), False, id="plain"),
    ],
)
def test_only_the_escaped_serialization_survives_a_script_element(
    serialize: Callable[[dict[str, Any]], str | None], safe: bool
) -> None:
    comment = Comment("c1", "p1", "he", 5, HOSTILE_TITLE, HOSTILE, "a1", stamp(0))
    value = markup(
        {"@type": "Product", "name": "p1"}, RatingCounts("p1", None, (0, 0, 0, 0, 1)), [comment]
    )
    assert value is not None
    text = serialize(value)
    assert text is not None
    if safe:
        assert crawled(text) == value
        return
    with pytest.raises(AssertionError):
        crawled(text)


def test_the_rating_is_the_exact_mean_rounded_half_up() -> None:
    counts = RatingCounts("p", None, (1, 0, 0, 0, 7))  # 36 / 8 = 4.5
    found = markup({"@type": "Product", "name": "p"}, counts, [])
    assert found is not None
    assert found["aggregateRating"]["ratingValue"] == 4.5
    assert "review" not in found
    third = markup({}, RatingCounts("p", None, (0, 0, 0, 1, 2)), [])  # 14 / 3 = 4.666...
    assert third is not None
    assert third["aggregateRating"]["ratingValue"] == 4.67
    eighth = markup({}, RatingCounts("p", None, (0, 0, 1, 0, 7)), [])  # 38 / 8 = 4.75
    assert eighth is not None
    assert eighth["aggregateRating"]["ratingValue"] == 4.75
    assert markup({}, RatingCounts("p", None, (0, 0, 0, 0, 0)), []) is None
    assert script_json(None) is None
    assert rules.RATINGS == (1, 2, 3, 4, 5)


@pytest.mark.parametrize(
    ("query", "points", "nodes"),
    [
        # The counters and one partition's page, as Product.comments(first: 5); the
        # product and the string's product and reviews.
        ('{ product(productId: "p") { structuredData } }', 2, 1 + 1 + 5),
        ('{ product(productId: "p") { structuredData(reviews: 0, language: "de") } }', 2, 2),
        # Out of range: refused when it runs, priced at its maximum.
        ('{ product(productId: "p") { structuredData(reviews: 1000) } }', 2, 2 + REVIEWS_MAX),
        # A group's: as its comments, a facet listing over every rating's partition.
        ('{ productGroup(groupId: "g") { structuredData } }', 1 + 1 + 2 * 5, 1 + 1 + 5),
        # Under a list, each copy counts.
        (
            '{ nodes(ids: ["a", "b"]) { ... on Product { structuredData(reviews: 20) } } }',
            2 + 2 * 2,
            2 * (1 + 1 + REVIEWS_MAX),
        ),
    ],
)
def test_the_markup_is_priced_as_its_listing(query: str, points: int, nodes: int) -> None:
    found = estimate(SCHEMA, parse(query), None, None)
    assert (found.points, found.nodes) == (points, nodes)
    # It reads a page: a subscription's events may not select it.
    assert found.listings
