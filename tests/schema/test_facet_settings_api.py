"""Moderators and merchants change facets through the API: a scope's attribute definitions,
the topic taxonomy and a product's group, each from the revision read, every problem at
its path; anyone else is refused."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import pytest

from resolvers.auth import mint
from storage.engine.table import TableRef
from storage.model.comments import NewComment
from storage.writes import create_comment
from tests.api_helpers import SECRET, Api, running_api
from tests.helpers import FAST, own_table

MERCHANT = mint(SECRET, "shop", roles=["merchant"])
MODERATOR = mint(SECRET, "mod", roles=["moderator"])
SHOPPER = mint(SECRET, "shopper")

DEFINE = """mutation($i: SetAttributeDefinitionsInput!) {
  setAttributeDefinitions(input: $i) {
    definitions { key kind label(language: "de") values { value label } }
    revision
    userErrors { field code message }
  }
}"""
FIT = {
    "key": "fit",
    "kind": "CHOICE",
    "defaultLanguage": "en",
    "labels": [{"language": "en", "text": "Fit"}, {"language": "de", "text": "Passform"}],
    "values": [
        {"value": "small", "labels": [{"language": "en", "text": "Small"}]},
        {"value": "large", "labels": [{"language": "en", "text": "Large"}]},
    ],
}
REVISION = "query($p: ID!) { product(productId: $p) { attributeDefinitionsRevision } }"


@pytest.fixture(scope="module")
async def api(table: TableRef) -> AsyncIterator[tuple[Api, TableRef]]:
    own = await own_table(table, "facetsettings")
    async with running_api(own.client, own.name) as running:
        yield running, own


async def test_definitions_are_set_from_the_revision_read(api: tuple[Api, TableRef]) -> None:
    client, _ = api
    variables: dict[str, Any] = {"i": {"productId": "p-def", "definitions": [FIT], "revision": 0}}
    refused = await client.gql(DEFINE, variables, SHOPPER)
    assert refused["errors"][0]["extensions"]["code"] == "FORBIDDEN"
    done = (await client.data(DEFINE, variables, MERCHANT))["setAttributeDefinitions"]
    assert done["userErrors"] == []
    assert done["revision"] == 1
    assert [(d["key"], d["label"]) for d in done["definitions"]] == [("fit", "Passform")]
    read = await client.data(REVISION, {"p": "p-def"})
    assert read["product"]["attributeDefinitionsRevision"] == 1
    # Made from the revision read before someone else's change: refused, nothing lost.
    again = (await client.data(DEFINE, variables, MODERATOR))["setAttributeDefinitions"]
    assert [(e["field"], e["code"]) for e in again["userErrors"]] == [
        (["input", "revision"], "CHANGED")
    ]


async def test_every_problem_of_the_definitions_is_named_at_its_path(
    api: tuple[Api, TableRef],
) -> None:
    client, _ = api
    bad = {**FIT, "key": "Fit!", "values": [{"value": "only", "labels": []}]}
    variables = {"i": {"productId": "p-bad", "definitions": [bad], "revision": 0}}
    done = (await client.data(DEFINE, variables, MERCHANT))["setAttributeDefinitions"]
    assert done["definitions"] is None
    fields = [e["field"] for e in done["userErrors"]]
    assert ["input", "definitions", "0", "key"] in fields
    assert all(f[:3] == ["input", "definitions", "0"] for f in fields)
    assert any("TOO_FEW_VALUES" in e["message"] for e in done["userErrors"])
    both = {"i": {"definitions": [FIT], "revision": 0}}
    neither = (await client.data(DEFINE, both, MERCHANT))["setAttributeDefinitions"]
    assert neither["userErrors"][0]["message"] == "name exactly one of productId and groupId"


TAXONOMY = """mutation($i: SetTopicTaxonomyInput!) {
  setTopicTaxonomy(input: $i) { revision topics userErrors { field code message } }
}"""
TOPICS = '{ topicTaxonomy { revision defaultLanguage topics { key label(language: "de") } } }'
DOCUMENT = {
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


async def test_the_taxonomy_is_set_and_read_back(api: tuple[Api, TableRef]) -> None:
    client, _ = api
    broken = {"i": {"document": '{"format": 1,', "revision": 0}}
    refused = (await client.data(TAXONOMY, broken, MERCHANT))["setTopicTaxonomy"]
    assert refused["userErrors"][0]["field"] == ["input", "document"]
    wrong = {"i": {"document": json.dumps({**DOCUMENT, "format": 2}), "revision": 0}}
    refused = (await client.data(TAXONOMY, wrong, MERCHANT))["setTopicTaxonomy"]
    assert "format" in refused["userErrors"][0]["message"]
    good = {"i": {"document": json.dumps(DOCUMENT), "revision": 0}}
    assert (await client.gql(TAXONOMY, good, SHOPPER))["errors"][0]["extensions"]["code"] == (
        "FORBIDDEN"
    )
    done = (await client.data(TAXONOMY, good, MODERATOR))["setTopicTaxonomy"]
    assert (done["revision"], done["topics"], done["userErrors"]) == (1, 1, [])
    read = (await client.data(TOPICS))["topicTaxonomy"]
    assert read == {
        "revision": 1,
        "defaultLanguage": "en",
        "topics": [{"key": "battery", "label": "Akkulaufzeit"}],
    }
    stale = (await client.data(TAXONOMY, good, MODERATOR))["setTopicTaxonomy"]
    assert stale["userErrors"][0]["code"] == "CHANGED"


GROUP = """mutation($i: SetProductGroupInput!) {
  setProductGroup(input: $i) {
    product { productId group { groupId } }
    group { groupId stats { total } products(first: 5) { totalCount } }
    complete
    userErrors { field code }
  }
}"""


async def test_a_product_joins_a_group_with_its_comments(api: tuple[Api, TableRef]) -> None:
    client, own = api
    for n in range(4):
        new = NewComment("p-variant", "en", 5, f"great {n}", f"a{n}")
        await create_comment(own, new, backoff=FAST)
    joined = {"i": {"productId": "p-variant", "groupId": "g-model"}}
    assert (await client.gql(GROUP, joined, SHOPPER))["errors"][0]["extensions"]["code"] == (
        "FORBIDDEN"
    )
    done = (await client.data(GROUP, joined, MERCHANT))["setProductGroup"]
    assert done["complete"] is True
    assert done["product"]["group"] == {"groupId": "g-model"}
    assert done["group"]["stats"]["total"] == 4
    assert done["group"]["products"]["totalCount"] == 1
    # Definitions of a grouped product are its group's: setting the product's is refused.
    variables = {"i": {"productId": "p-variant", "definitions": [FIT], "revision": 0}}
    defined = (await client.data(DEFINE, variables, MERCHANT))["setAttributeDefinitions"]
    assert defined["userErrors"][0]["field"] == ["input", "productId"]
    left = {"i": {"productId": "p-variant", "groupId": None}}
    out = (await client.data(GROUP, left, MERCHANT))["setProductGroup"]
    assert (out["complete"], out["group"], out["product"]["group"]) == (True, None, None)
