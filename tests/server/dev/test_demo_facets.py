"""The demo's facets: a group of variants, the shop's questions answered, topics mentioned
in five languages, incentivized reviews, all written by the write path and exact; what
GraphiQL shows of them is counted against the reviews themselves."""

from __future__ import annotations

from collections import Counter
from collections.abc import AsyncIterator, Iterable
from typing import Any

import pytest

from server.dev import demo
from server.dev.demo import demo_comments
from server.dev.demo_facets import (
    GROUP_DEFINITIONS,
    GROUP_ID,
    HEADPHONES,
    HEADPHONES_DEFINITIONS,
    TAXONOMY,
    VARIANTS,
    FacetReview,
    facet_reviews,
)
from server.dev.seeding import seed_demo, seed_facets
from storage.base.errors import InvalidInput
from storage.engine.table import TableRef
from storage.model.attributes import parse_definitions, validate_answers
from storage.model.tagging import tagged_text
from storage.model.topics import Tagger, Taxonomy
from storage.ops.verify import verify
from tests.api_helpers import Api, running_api
from tests.helpers import own_table

REVIEWS = facet_reviews()
LANGUAGES = ("en", "de", "fr", "es", "ja")
# A slice of the demo's comments beside the reviews: the two loaders share the table.
BESIDE = 60


def test_the_same_seed_gives_the_same_reviews() -> None:
    assert facet_reviews() == REVIEWS
    assert facet_reviews(seed=7) != REVIEWS


def test_every_review_is_tagged_with_the_topics_it_was_written_for() -> None:
    tagger = Tagger.for_taxonomy(Taxonomy.from_document(TAXONOMY))
    for review in REVIEWS:
        new = review.new
        tagging = tagger.tag(tagged_text(new.title, new.body), new.language)
        assert set(tagging.topics) == review.topics, (new.language, new.title, new.body)
    assert {r.new.language for r in REVIEWS} == set(LANGUAGES)


def test_every_answer_is_one_the_products_questions_allow() -> None:
    group = parse_definitions(GROUP_DEFINITIONS)
    headphones = parse_definitions(HEADPHONES_DEFINITIONS)
    for review in REVIEWS:
        definitions = headphones if review.new.product_id == HEADPHONES else group
        validate_answers(definitions, list(review.answers))  # InvalidFields otherwise


def test_the_reviews_are_spread_over_ratings_languages_and_kinds() -> None:
    assert {r.new.product_id for r in REVIEWS} == {HEADPHONES, *VARIANTS}
    assert set(Counter(r.new.rating for r in REVIEWS)) == {1, 2, 3, 4, 5}
    incentivized = [r for r in REVIEWS if r.new.incentivized]
    assert 0 < len(incentivized) < len(REVIEWS) // 2
    assert any(r.new.verified for r in REVIEWS)
    assert any(r.answers for r in REVIEWS)
    assert any(not r.answers for r in REVIEWS)
    # Authors of their own: the demo authors' listings (the tour shows Ana's) stay as they were.
    assert not {r.new.author_name for r in REVIEWS} & {a.capitalize() for a in demo.AUTHORS}


@pytest.fixture(scope="module")
async def seeded(table: TableRef) -> AsyncIterator[tuple[TableRef, Api]]:
    fresh = await own_table(table, "demo_facets")
    comments = list(demo_comments(0))[:BESIDE]
    assert await seed_demo(fresh, comments, REVIEWS) == BESIDE + len(REVIEWS)
    async with running_api(fresh.client, fresh.name) as api:
        yield fresh, api


async def test_the_seeded_reviews_are_exact(seeded: tuple[TableRef, Api]) -> None:
    fresh, _ = seeded
    report = await verify(fresh)
    assert report.exact, report.describe()
    assert report.comments == BESIDE + len(REVIEWS)


async def test_seeding_the_reviews_again_is_refused(seeded: tuple[TableRef, Api]) -> None:
    fresh, _ = seeded
    with pytest.raises(InvalidInput, match="already have comments: demo-headphones"):
        await seed_facets(fresh, REVIEWS)
    report = await verify(fresh)
    assert report.exact, report.describe()


GROUP = """{
  productGroup(groupId: "demo-runner") {
    products { totalCount nodes { productId } }
    stats { total }
    attributeDefinitions { key }
    attributeSummary { key answered values { value count } }
    all: comments(first: 1) { totalCount }
    red: comments(facets: {productId: "demo-runner-red"}, first: 1) { totalCount }
    honest: comments(facets: {excludeIncentivized: true}, first: 100) {
      totalCount nodes { incentivized }
    }
  }
  product(productId: "demo-runner-red") { group { groupId } attributeDefinitions { key } }
}"""


async def test_the_group_holds_its_variants_and_their_answers(seeded: tuple[TableRef, Api]) -> None:
    _, api = seeded
    data = await api.data(GROUP)
    group = data["productGroup"]
    reviews = [r for r in REVIEWS if r.new.product_id in VARIANTS]
    assert [p["productId"] for p in group["products"]["nodes"]] == sorted(VARIANTS)
    assert group["products"]["totalCount"] == len(VARIANTS)
    assert group["stats"]["total"] == group["all"]["totalCount"] == len(reviews)
    assert group["red"]["totalCount"] == sum(r.new.product_id == VARIANTS[0] for r in reviews)
    honest = [r for r in reviews if not r.new.incentivized]
    assert 0 < len(honest) < len(reviews)
    assert group["honest"]["totalCount"] == len(honest)
    assert not any(node["incentivized"] for node in group["honest"]["nodes"])
    keys = ["fit", "comfort", "would-recommend"]
    assert [d["key"] for d in group["attributeDefinitions"]] == keys
    assert group["attributeSummary"] == _summary(reviews, GROUP_DEFINITIONS)
    assert group["attributeSummary"][0]["answered"] > 0
    red = data["product"]
    assert red["group"] == {"groupId": GROUP_ID}
    assert [d["key"] for d in red["attributeDefinitions"]] == keys


TOPICS = """query($language: String) {
  product(productId: "demo-headphones") {
    topics(language: $language) { topic count positive negative }
  }
  productGroup(groupId: "demo-runner") {
    topics(language: $language) { topic count positive negative }
  }
}"""


@pytest.mark.parametrize("language", [None, *LANGUAGES])
async def test_customers_mention_topics_in_every_language(
    seeded: tuple[TableRef, Api], language: str | None
) -> None:
    _, api = seeded
    data = await api.data(TOPICS, {"language": language})
    in_language = [r for r in REVIEWS if language in (None, r.new.language)]
    headphones = [r for r in in_language if r.new.product_id == HEADPHONES]
    grouped = [r for r in in_language if r.new.product_id in VARIANTS]
    for found, reviews in ((data["product"], headphones), (data["productGroup"], grouped)):
        assert _by_topic(found["topics"]) == _mentions(reviews)
        assert sum(t["count"] for t in found["topics"]) > 0
    if language is None:  # praise and complaints of one topic, side by side
        assert any(t["positive"] and t["negative"] for t in data["product"]["topics"])


LISTING = """{
  product(productId: "demo-headphones") {
    all: comments(first: 1) { totalCount }
    honest: comments(facets: {topic: "battery-life", excludeIncentivized: true}, first: 100) {
      totalCount nodes { topics incentivized }
    }
  }
}"""


async def test_leaving_out_incentivized_reviews_changes_the_listing(
    seeded: tuple[TableRef, Api],
) -> None:
    _, api = seeded
    product = (await api.data(LISTING))["product"]
    reviews = [r for r in REVIEWS if r.new.product_id == HEADPHONES]
    assert product["all"]["totalCount"] == len(reviews)
    battery = [r for r in reviews if "battery-life" in r.topics]
    honest = [r for r in battery if not r.new.incentivized]
    assert 0 < len(honest) < len(battery)
    assert product["honest"]["totalCount"] == len(honest)
    for node in product["honest"]["nodes"]:
        assert "battery-life" in node["topics"]
        assert not node["incentivized"]


def _mentions(reviews: Iterable[FacetReview]) -> dict[str, tuple[int, int, int]]:
    """Per topic: (mentions, of them rated 4-5, of them rated 1-2), by brute force."""
    found: dict[str, tuple[int, int, int]] = {}
    for review in reviews:
        rating = review.new.rating
        for topic in review.topics:
            n, positive, negative = found.get(topic, (0, 0, 0))
            found[topic] = (n + 1, positive + (rating >= 4), negative + (rating <= 2))
    return found


def _by_topic(topics: list[dict[str, Any]]) -> dict[str, tuple[int, int, int]]:
    return {t["topic"]: (t["count"], t["positive"], t["negative"]) for t in topics if t["count"]}


def _summary(reviews: Iterable[FacetReview], definitions: list[dict[str, Any]]) -> list[Any]:
    """attributeSummary by brute force: each question's values in display order."""
    given = Counter((a["key"], a["value"]) for r in reviews for a in r.answers)
    summary = []
    for definition in parse_definitions(definitions):
        counts = [(v.value, given[definition.key, v.value]) for v in definition.values]
        values = [{"value": value, "count": n} for value, n in counts]
        answered = sum(n for _, n in counts)
        summary.append({"key": definition.key, "answered": answered, "values": values})
    return summary
