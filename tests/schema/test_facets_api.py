"""Facets through the API: a product's comments filtered by answers, a topic, photos and
incentivized reviews, with exact totals and EXPLAIN; the comment's own answers, topics and
mark; the shop's attribute definitions, the summary of answers and "customers mention"."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from resolvers.auth import mint
from storage.engine.table import TableRef
from storage.model.attributes import parse_definitions
from storage.model.comments import Comment, ListingFilter, NewComment, Order, PageRequest
from storage.model.facets import FacetValue, Scope
from storage.model.topics import Taxonomy
from storage.ops.group_move import move_product
from storage.reads.reader import list_comments
from storage.writes import create_comment
from storage.writes.facet_settings import save_definitions, save_taxonomy
from tests.api_helpers import SECRET, Api, running_api
from tests.helpers import FAST, oracle, own_table, stamp

SMALL = FacetValue.attribute("fit", "small")
LARGE = FacetValue.attribute("fit", "large")
BATTERY = FacetValue.topic("battery")
PID = "p-facets-api"

DEFINITIONS = [
    {
        "key": "fit",
        "kind": "CHOICE",
        "defaultLanguage": "en",
        "label": {"en": "How does it fit?", "de": "Wie sitzt es?"},
        "values": [
            {"value": "small", "label": {"en": "Small", "de": "Klein"}},
            {"value": "true-to-size", "label": {"en": "True to size"}},
            {"value": "large", "label": {"en": "Large"}},
        ],
    }
]
TAXONOMY = {
    "format": 1,
    "defaultLanguage": "en",
    "topics": [
        {
            "key": "battery",
            "labels": {"en": "Battery life", "de": "Akkulaufzeit"},
            "words": {"en": ["battery"], "de": ["Akku"]},
        }
    ],
}


@pytest.fixture(scope="module")
async def own(table: TableRef) -> TableRef:
    return await own_table(table, "facetapi")


@pytest.fixture(scope="module")
async def shop(own: TableRef) -> AsyncIterator[tuple[Api, list[Comment]]]:
    await save_definitions(own, Scope.product(PID), parse_definitions(DEFINITIONS), revision=0)
    await save_taxonomy(own, Taxonomy.from_document(TAXONOMY), revision=0)
    made = []
    for n in range(24):
        facets = {SMALL if n % 3 == 0 else LARGE}
        if n % 2 == 0:
            facets.add(BATTERY)
        new = NewComment(
            PID,
            ["en", "de"][n % 2],
            [5, 4, 1, 2, 5, 3][n % 6],
            f"body {n}",
            f"author-{n}",
            verified=n % 4 == 0,
            created_at=stamp(n),
            facets=frozenset(facets),
            incentivized=n % 5 == 0,
        )
        made.append((await create_comment(own, new, backoff=FAST)).comment)
    async with running_api(own.client, own.name) as api:
        yield api, made


PAGE = """query($p: ID!, $f: CommentFacets, $l: String, $r: [Int!], $v: Boolean! = false,
          $o: CommentOrder! = NEWEST, $n: Int = 50) {
  product(productId: $p) {
    comments(facets: $f, language: $l, ratings: $r, verifiedOnly: $v, orderBy: $o, first: $n) {
      totalCount
      nodes { commentId attributes { key value } topics incentivized }
      plan { strategy explain }
    }
  }
}"""


def _listing(**kwargs: Any) -> ListingFilter:
    return ListingFilter(PID, **kwargs)


@pytest.mark.parametrize(
    ("facets", "extra", "listing"),
    [
        (
            {"attributes": [{"key": "fit", "value": "small"}]},
            {},
            _listing(facets=frozenset({SMALL})),
        ),
        ({"topic": "battery"}, {"l": "en"}, _listing(language="en", facets=frozenset({BATTERY}))),
        (
            {"topic": "battery", "attributes": [{"key": "fit", "value": "large"}]},
            {"r": [1, 2, 3, 4, 5]},
            _listing(facets=frozenset({BATTERY, LARGE})),
        ),
        (
            {"excludeIncentivized": True},
            {"v": True},
            _listing(verified_only=True, exclude_incentivized=True),
        ),
        (
            {"topic": "battery", "excludeIncentivized": True, "productId": PID},
            {"o": "LOWEST_RATING"},
            _listing(facets=frozenset({BATTERY}), exclude_incentivized=True),
        ),
        ({"withPhotos": False, "excludeIncentivized": False}, {}, _listing()),
    ],
)
async def test_a_filtered_listing_is_brute_force_with_an_exact_total(
    shop: tuple[Api, list[Comment]],
    facets: dict[str, Any],
    extra: dict[str, Any],
    listing: ListingFilter,
) -> None:
    api, made = shop
    data = await api.data(PAGE, {"p": PID, "f": facets, **extra})
    connection = data["product"]["comments"]
    order = Order[extra.get("o", "NEWEST")]
    want = oracle(made, listing, order)
    assert [n["commentId"] for n in connection["nodes"]] == [c.comment_id for c in want]
    assert connection["totalCount"] == len(want)
    by_id = {c.comment_id: c for c in made}
    for node in connection["nodes"]:
        c = by_id[node["commentId"]]
        assert node["incentivized"] == c.incentivized
        assert node["topics"] == sorted(f.key for f in c.facets if f.kind.value == "t")
        assert [(a["key"], a["value"]) for a in node["attributes"]] == [
            (f.key, f.value) for f in sorted(c.facets, key=lambda f: f.token) if f.kind.value == "a"
        ]
    if listing.faceted:
        assert "AP19" in connection["plan"]["explain"]


async def test_photos_list_nothing_until_photos_exist(shop: tuple[Api, list[Comment]]) -> None:
    api, _ = shop
    data = await api.data(PAGE, {"p": PID, "f": {"withPhotos": True}})
    assert data["product"]["comments"]["totalCount"] == 0
    assert data["product"]["comments"]["nodes"] == []


@pytest.mark.parametrize(
    ("variables", "why"),
    [
        ({"f": {"productId": "another-product"}}, "productId"),
        ({"f": {"topic": "Battery Life"}}, "facets.topic"),
        (
            {
                "f": {
                    "attributes": [
                        {"key": "fit", "value": "small"},
                        {"key": "fit", "value": "large"},
                    ]
                }
            },
            "one value per attribute",
        ),
        ({"f": {"topic": "battery"}, "o": "MOST_HELPFUL"}, "most helpful"),
    ],
)
async def test_bad_facets_are_refused_with_a_clear_error(
    shop: tuple[Api, list[Comment]], variables: dict[str, Any], why: str
) -> None:
    api, _ = shop
    body = await api.gql(PAGE, {"p": PID, **variables})
    (error,) = body["errors"]
    assert error["extensions"]["code"] == "BAD_USER_INPUT"
    assert why in error["message"]


SUMMARY = """query($p: ID!, $l: String, $r: [Int!], $v: Boolean! = false) {
  product(productId: $p) {
    attributeDefinitions {
      key kind label(language: "de") values { value label(language: "de-CH") }
    }
    attributeSummary(language: $l, ratings: $r, verifiedOnly: $v) {
      key answered values { value count }
    }
    topics(language: $l, ratings: $r, verifiedOnly: $v, first: 5) {
      topic label(language: "de") count positive negative
    }
  }
}"""


@pytest.mark.parametrize(
    "variables", [{}, {"l": "de"}, {"r": [4, 5]}, {"v": True}, {"l": "en", "r": [1, 2], "v": True}]
)
async def test_definitions_and_summaries_are_exact(
    shop: tuple[Api, list[Comment]], variables: dict[str, Any]
) -> None:
    api, made = shop
    data = (await api.data(SUMMARY, {"p": PID, **variables}))["product"]
    (fit,) = data["attributeDefinitions"]
    assert (fit["key"], fit["kind"], fit["label"]) == ("fit", "CHOICE", "Wie sitzt es?")
    assert [v["label"] for v in fit["values"]] == ["Klein", "True to size", "Large"]
    ratings = variables.get("r")
    listed = oracle(
        made,
        ListingFilter(
            PID,
            variables.get("l"),
            frozenset(ratings) if ratings else None,
            variables.get("v", False),
        ),
    )
    small = sum(1 for c in listed if SMALL in c.facets)
    large = sum(1 for c in listed if LARGE in c.facets)
    assert data["attributeSummary"] == [
        {
            "key": "fit",
            "answered": small + large,
            "values": [
                {"value": "small", "count": small},
                {"value": "true-to-size", "count": 0},
                {"value": "large", "count": large},
            ],
        }
    ]
    battery = [c for c in listed if BATTERY in c.facets]
    want = []
    if battery:
        want = [
            {
                "topic": "battery",
                "label": "Akkulaufzeit",
                "count": len(battery),
                "positive": sum(1 for c in battery if c.rating >= 4),
                "negative": sum(1 for c in battery if c.rating <= 2),
            }
        ]
    assert data["topics"] == want


TWO = """query($p: ID!, $n: Int!) {
  product(productId: $p) {
    comments(facets: {topic: "battery", attributes: [{key: "fit", value: "small"}]}, first: $n) {
      nodes { commentId }
      %s
    }
  }
}"""


async def test_a_count_of_several_values_is_priced_before_it_reads(
    shop: tuple[Api, list[Comment]], own: TableRef
) -> None:
    _, made = shop
    want = oracle(made, ListingFilter(PID, facets=frozenset({BATTERY, SMALL})))
    # A budget the page fits exactly (one call of counters, then 4 rounds x 5 ratings).
    async with running_api(own.client, own.name, max_query_cost=21) as tight:
        page = await tight.data(TWO % "", {"p": PID, "n": 2})
        assert len(page["product"]["comments"]["nodes"]) == min(2, len(want))
        body = await tight.gql(TWO % "totalCount", {"p": PID, "n": 2})
        (error,) = body["errors"]
        assert error["extensions"]["code"] == "QUERY_TOO_COMPLEX"
        assert "Leave totalCount out" in error["message"]
    async with running_api(own.client, own.name, max_query_cost=100) as roomy:
        counted = await roomy.data(TWO % "totalCount", {"p": PID, "n": 2})
        assert counted["product"]["comments"]["totalCount"] == len(want)


CREATE = """mutation($i: CreateCommentInput!) {
  createComment(input: $i) {
    comment { commentId attributes { key value } topics incentivized }
    userErrors { field code message }
  }
}"""
UPDATE = """mutation($i: UpdateCommentInput!) {
  updateComment(input: $i) {
    comment { attributes { key value } topics incentivized }
    userErrors { field code message }
  }
}"""


def _new(**extra: Any) -> dict[str, Any]:
    return {"productId": PID, "rating": 5, "language": "de", "body": "Der Akku hält", **extra}


async def test_answers_are_checked_stored_and_replaced_and_topics_tagged(
    shop: tuple[Api, list[Comment]],
) -> None:
    api, _ = shop
    author = mint(SECRET, "answerer")
    bad = [{"key": "fit", "value": "huge"}, {"key": "colour", "value": "red"}]
    refused = (await api.data(CREATE, {"i": _new(attributes=bad)}, author))["createComment"]
    assert refused["comment"] is None
    fields = [e["field"] for e in refused["userErrors"]]
    assert fields == [["input", "attributes", "0", "value"], ["input", "attributes", "1", "key"]]
    assert {e["code"] for e in refused["userErrors"]} == {"INVALID"}
    assert "VALUE_NOT_ALLOWED" in refused["userErrors"][0]["message"]

    good = [{"key": "fit", "value": "small"}]
    made = (await api.data(CREATE, {"i": _new(attributes=good)}, author))["createComment"]
    comment = made["comment"]
    assert made["userErrors"] == []
    assert comment["attributes"] == [{"key": "fit", "value": "small"}]
    assert comment["topics"] == ["battery"]  # "Akku" is a German word of the topic
    assert comment["incentivized"] is False
    cid = comment["commentId"]
    why = "query($c: ID!) { comment(commentId: $c) { topicMatches { topic word field text } } }"
    moderator = mint(SECRET, "mod", roles=["moderator"])
    seen = await api.data(why, {"c": cid}, moderator)
    assert seen["comment"]["topicMatches"] == [
        {"topic": "battery", "word": "Akku", "field": "body", "text": "Akku"}
    ]
    hidden = await api.data(why, {"c": cid}, author)
    assert hidden["comment"]["topicMatches"] is None

    kept = await api.data(UPDATE, {"i": {"id": cid, "rating": 4}}, author)
    assert kept["updateComment"]["comment"]["attributes"] == [{"key": "fit", "value": "small"}]
    moved = await api.data(
        UPDATE, {"i": {"id": cid, "attributes": [{"key": "fit", "value": "large"}]}}, author
    )
    assert moved["updateComment"]["comment"]["attributes"] == [{"key": "fit", "value": "large"}]
    cleared = await api.data(UPDATE, {"i": {"id": cid, "attributes": []}}, author)
    assert cleared["updateComment"]["comment"]["attributes"] == []
    retext = await api.data(UPDATE, {"i": {"id": cid, "body": "Passt gut"}}, author)
    assert retext["updateComment"]["comment"]["topics"] == []  # re-tagged from the new text


async def test_incentivized_is_the_authors_word_or_the_campaigns(
    shop: tuple[Api, list[Comment]],
) -> None:
    api, _ = shop
    said = await api.data(CREATE, {"i": _new(incentivized=True)}, mint(SECRET, "sampler"))
    assert said["createComment"]["comment"]["incentivized"] is True
    campaign = mint(SECRET, "tester", incentivized=[PID])
    forced = await api.data(CREATE, {"i": _new(incentivized=False)}, campaign)
    assert forced["createComment"]["comment"]["incentivized"] is True
    other = mint(SECRET, "tester2", incentivized=["another-product"])
    plain = await api.data(CREATE, {"i": _new()}, other)
    assert plain["createComment"]["comment"]["incentivized"] is False


GROUP = """query($g: ID!, $f: CommentFacets, $n: Int = 50, $after: String) {
  productGroup(groupId: $g) {
    id groupId
    products(first: 1, after: $after) {
      totalCount nodes { productId } pageInfo { hasNextPage endCursor }
    }
    stats { total histogram { rating count } }
    comments(facets: $f, first: $n) {
      totalCount nodes { commentId productId }
      plan { explain }
    }
    topics { topic count }
  }
}"""


async def test_a_group_lists_counts_and_summarises_all_its_products(
    shop: tuple[Api, list[Comment]], own: TableRef
) -> None:
    api, _ = shop
    group, variant = "g-facets-api", "p-facets-api-blue"
    extra = [
        (
            await create_comment(
                own,
                NewComment(variant, "en", 4, f"blue {n}", f"blue-{n}", facets=frozenset({BATTERY})),
                backoff=FAST,
            )
        ).comment
        for n in range(3)
    ]
    for pid in (PID, variant):
        await move_product(own, pid, group)
    everything = [c for pid in (PID, variant) for c in await _published(own, pid)]
    data = (await api.data(GROUP, {"g": group}))["productGroup"]
    assert data["groupId"] == group
    assert data["products"]["totalCount"] == 2
    assert [p["productId"] for p in data["products"]["nodes"]] == [PID]
    rest = await api.data(GROUP, {"g": group, "after": data["products"]["pageInfo"]["endCursor"]})
    assert [p["productId"] for p in rest["productGroup"]["products"]["nodes"]] == [variant]
    assert not rest["productGroup"]["products"]["pageInfo"]["hasNextPage"]
    assert data["stats"]["total"] == len(everything)
    listed = data["comments"]["nodes"]
    assert {n["commentId"] for n in listed} == {c.comment_id for c in everything}
    assert data["comments"]["totalCount"] == len(everything)
    assert f"scope=G:{group}" in data["comments"]["plan"]["explain"]
    battery = sum(1 for c in everything if BATTERY in c.facets)
    assert {t["topic"]: t["count"] for t in data["topics"]} == {"battery": battery}
    # Narrowed to one variant: that product's own comments.
    blue = await api.data(GROUP, {"g": group, "f": {"productId": variant}})
    nodes = blue["productGroup"]["comments"]["nodes"]
    assert {n["commentId"] for n in nodes} == {c.comment_id for c in extra}
    outside = await api.gql(GROUP, {"g": group, "f": {"productId": "not-in-it"}})
    assert outside["errors"][0]["extensions"]["code"] == "BAD_USER_INPUT"
    # A product shows its group; a group that never had products is null.
    mine = await api.data(GROUP_OF, {"p": variant})
    assert mine["product"]["group"] == {"groupId": group}
    none = await api.data('{ productGroup(groupId: "no-such-group") { groupId } }')
    assert none["productGroup"] is None
    node = await api.data(NODE, {"id": data["id"]})
    assert node["node"] == {"id": data["id"]}


GROUP_OF = "query($p: ID!) { product(productId: $p) { group { groupId } } }"
NODE = "query($id: ID!) { node(id: $id) { id } }"


async def _published(table: TableRef, pid: str) -> list[Comment]:
    page = await list_comments(table, ListingFilter(pid), PageRequest(100))
    return list(page.comments)


async def test_topic_labels_come_from_the_processs_copy_of_the_taxonomy(
    shop: tuple[Api, list[Comment]],
) -> None:
    # The taxonomy (up to 256 KiB) is read once and then only its head, every few
    # seconds: a second summary within them reads the counter items alone.
    api, _ = shop
    query = 'query($p: ID!) { product(productId: $p) { topics { topic label(language: "de") } } }'
    first = await api.gql(query, {"p": PID})
    again = await api.gql(query, {"p": PID})
    assert again["data"] == first["data"]
    assert again["data"]["product"]["topics"][0]["label"] == "Akkulaufzeit"
    calls = again["extensions"]["storage"]["callsByOperation"]
    assert calls == {"query": 1}, calls
