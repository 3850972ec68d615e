"""Cost limits: the estimate as a table, refusal before anything is read, and the accepted
estimate enforced while the request runs."""

from __future__ import annotations

import base64
import uuid
from typing import Any

import pytest
from graphql import GraphQLList, GraphQLObjectType, get_nullable_type, parse

from schema import build_schema
from schema.cost import (
    MUTATION_STORAGE_CALLS,
    RULES,
    Estimate,
    Refusal,
    estimate,
)
from storage.base.errors import CallBudgetExceeded
from storage.base.types import Response
from storage.engine.metering import Meter
from storage.engine.table import TableRef
from storage.engine.wrapping import ClientWrapper
from storage.model.comments import NewComment
from storage.model.items import ITEMS_PER_RESPONSE
from storage.reads.leaders import LEADERBOARD_CALLS
from tests.api_helpers import Api, running_api, token
from tests.helpers import create_many, stamp

SCHEMA = build_schema()._schema


def gid(type_name: str, node_id: str) -> str:
    return base64.b64encode(f"{type_name}:{node_id}".encode()).decode()


@pytest.mark.parametrize(
    ("query", "variables", "points", "nodes"),
    [
        # No storage at all; the product is one object.
        ('{ product(productId: "p") { productId } }', None, 0, 1),
        ("{ __typename }", None, 0, 0),
        # Counters: one read.
        ('{ product(productId: "p") { stats { total } } }', None, 1, 2),
        # A page with no filter: counters + one query; the page holds 20 comments.
        ('{ product(productId: "p") { comments { nodes { body } } } }', None, 2, 22),
        # Three ratings: counters + three queries in each of two rounds.
        (
            '{ product(productId: "p") { comments(ratings: [1, 2, 5]) { totalCount } } }',
            None,
            1 + 2 * 3,
            2,
        ),
        # Orders: newest, oldest and most helpful read one partition without a filter; a
        # rating order reads each rating's partition in turn, priced as a fan-out over them.
        ('{ product(productId: "p") { comments(orderBy: OLDEST) { totalCount } } }', None, 2, 2),
        (
            '{ product(productId: "p") { comments(orderBy: MOST_HELPFUL) { totalCount } } }',
            None,
            2,
            2,
        ),
        (
            '{ product(productId: "p") { comments(orderBy: HIGHEST_RATING) { totalCount } } }',
            None,
            1 + 2 * 5,
            2,
        ),
        (
            'query($o: CommentOrder!) { product(productId: "p") '
            "{ comments(orderBy: $o, ratings: [1, 2]) { totalCount } } }",
            {"o": "LOWEST_RATING"},
            1 + 2 * 2,
            2,
        ),
        # Repeated ratings count once (one partition); all five is no filter.
        ('{ product(productId: "p") { comments(ratings: [4, 4]) { totalCount } } }', None, 2, 2),
        (
            '{ product(productId: "p") { comments(ratings: [1, 2, 3, 4, 5]) { totalCount } } }',
            None,
            2,
            2,
        ),
        # Nested under a page of 10: each comment's product page runs 10 times.
        (
            '{ product(productId: "p") { comments(first: 10) '
            "{ nodes { product { comments(first: 3) { totalCount } } } } } }",
            None,
            2 + 10 * 2,
            1 + 1 + 10 * (1 + 1 + 1),
        ),
        # Connections under edges multiply the same way; last counts like first.
        (
            '{ product(productId: "p") { comments(last: 4) '
            "{ edges { node { product { stats { total } } } } } } }",
            None,
            2 + 4 * 1,
            1 + 1 + 4 * 4,
        ),
        # Leaderboard: every shard (a bound), then `first` products.
        (
            "{ topProducts(first: 7) { product { stats { total } lastCommentedAt } } }",
            None,
            LEADERBOARD_CALLS + 7 * 2,
            7 * 3,
        ),
        # nodes: one lookup per id; below, the dearer of the two types each id can be.
        (
            '{ nodes(ids: ["a", "b", "c"]) { ... on Product { stats { total } } ...C } } '
            "fragment C on Comment { product { stats { total } } }",
            None,
            3 + 3 * 1,
            3 * 3,
        ),
        # Variables are coerced before counting. first: 0 still reads each partition's
        # lookahead item (for hasNextPage): counters + two ratings in each of two rounds.
        (
            'query($r: [Int!], $n: Int) { product(productId: "p") '
            "{ comments(ratings: $r, first: $n) { nodes { product { stats { total } } } } } }",
            {"r": [2, 3], "n": 0},
            1 + 2 * 2,
            2,
        ),
        # Aliases each cost.
        (
            '{ a: product(productId: "p") { comments(ratings: [4, 5], first: 1) { totalCount } } '
            'b: product(productId: "p") { comments(ratings: [1, 2], first: 1) { totalCount } } }',
            None,
            2 * (1 + 2 * 2),
            4,
        ),
        # A page too large for one DynamoDB response (1 MB) takes a call per response.
        (
            '{ product(productId: "p") { comments(first: 100) { totalCount } } }',
            None,
            1 + -(-101 // ITEMS_PER_RESPONSE),
            2,
        ),
        # Every object of the response counts: edges, their nodes, the page's nodes.
        (
            '{ product(productId: "p") { comments(first: 100) '
            "{ edges { cursor node { body product { productId } } } nodes { body } } } }",
            None,
            1 + -(-101 // ITEMS_PER_RESPONSE),
            1 + 1 + 100 * 3 + 100,
        ),
        # An object that renders a field three times (aliases) counts three times.
        (
            '{ product(productId: "p") { comments { nodes { body b: body c: body } } } }',
            None,
            2,
            2 + 20 * 3,
        ),
        (
            'mutation { deleteComment(input: {id: "x"}) { product { stats { total } } } }',
            None,
            MUTATION_STORAGE_CALLS + 1,
            3,
        ),
    ],
)
def test_estimate(query: str, variables: dict[str, Any] | None, points: int, nodes: int) -> None:
    found = estimate(SCHEMA, parse(query), None, variables)
    assert (found.points, found.nodes) == (points, nodes)
    # Listings are named: a subscription may not select one under an event.
    assert bool(found.listings) == ("comments" in query or "moderationQueue" in query)


@pytest.mark.parametrize(
    ("arguments", "points"),
    [
        # The product's or group's counters come with every event, read once per batch for
        # every subscriber: nothing of the subscription's own.
        ('productId: "p"', 0),
        ('groupId: "g"', 0),
        ('productId: "p", language: "en", ratings: [4, 5]', 0),
        # Facets: the listing's counter items, read together, for its count.
        ('productId: "p", facets: {topic: "battery"}', 1),
        ('productId: "p", facets: {excludeIncentivized: true}', 1),
        ('groupId: "g", facets: {topic: "battery", withPhotos: true}', 1),
        # A group narrowed to a product: that product's group is read, once.
        ('groupId: "g", facets: {productId: "p"}', 2),
    ],
)
def test_a_subscription_is_priced_by_what_each_event_reads(arguments: str, points: int) -> None:
    query = f"subscription {{ commentEvents({arguments}) {{ kind totalCount }} }}"
    found = estimate(SCHEMA, parse(query), None, None)
    assert (found.points, found.listings) == (points, frozenset())
    # Fields under the event add theirs.
    nested = query.replace("totalCount", "comment { product { stats { total } } }")
    assert estimate(SCHEMA, parse(nested), None, None).points == points + 1


def test_every_list_field_and_every_storage_read_has_a_rule() -> None:
    # A list field without a rule would be counted as one value; a new field that reads
    # storage without one would cost nothing.
    lists = {
        (name, field_name)
        for name, type_ in SCHEMA.type_map.items()
        if isinstance(type_, GraphQLObjectType) and not name.startswith("__")
        for field_name, field in type_.fields.items()
        if isinstance(get_nullable_type(field.type), GraphQLList)
    }
    assert lists <= set(RULES)
    assert {("Product", "stats"), ("Product", "comments"), ("Query", "nodes")} <= set(RULES)


def test_variables_that_do_not_coerce_are_refused() -> None:
    query = 'query($n: Int) { product(productId: "p") { comments(first: $n) { totalCount } } }'
    with pytest.raises(Refusal) as refused:
        estimate(SCHEMA, parse(query), None, {"n": "many"})
    assert "many" in refused.value.errors[0].message


def test_the_named_operation_is_the_one_counted() -> None:
    doc = parse(
        'query Cheap { product(productId: "p") { productId } } '
        'query Dear { product(productId: "p") { stats { total } } }'
    )
    assert estimate(SCHEMA, doc, "Cheap", None).points == 0
    assert estimate(SCHEMA, doc, "Dear", None).points == 1


# The cost bypass: a null into a non-null argument made the whole estimate None,
# and then nothing was enforced (about 10,000 storage queries ran).
BYPASS = """query($c: ID = "x", $ids: [ID!]!) {
  bad: comment(commentId: $c) { title }
  nodes(ids: $ids) { ... on Product { comments(first: 100) { nodes { product {
    comments(first: 100) { nodes { title body } } } } } } }
}"""


def test_a_field_whose_arguments_do_not_coerce_is_priced_at_its_worst() -> None:
    hot = gid("Product", "sku-hot")
    found = estimate(SCHEMA, parse(BYPASS), None, {"c": None, "ids": [hot] * 100})
    assert found.points > 100 * 100 * 6
    # ids null into [ID!]! cannot be read: the worst case, a hundred ids, is priced.
    unreadable = estimate(
        SCHEMA,
        parse(
            'query($ids: [ID!] = ["x"]) { nodes(ids: $ids) { ... on Product { stats { total } } } }'
        ),
        None,
        {"ids": None},
    )
    assert unreadable == Estimate(100 + 100 * 1, 100 * 2, frozenset())


@pytest.mark.parametrize(
    "args",
    [
        "first: 0, before: $c",
        "first: -7",
        "first: 1000",
        "last: 5, after: $c",
        "first: 1, last: 1",
    ],
)
def test_invalid_page_arguments_are_priced_at_their_worst(args: str) -> None:
    query = (
        'query($c: String) { product(productId: "p") { comments(' + args + ") "
        "{ nodes { product { stats { total } } } } } }"
    )
    found = estimate(SCHEMA, parse(query), None, {"c": "cursor"})
    assert found.points >= 1 + 100 * 1


def test_invalid_ratings_are_priced_as_the_widest_fan_out() -> None:
    # The widest fan-out reads all five ratings (verified only; otherwise naming all five
    # is no filter): the counters, then two rounds of five queries.
    query = '{ product(productId: "p") { comments(ratings: [0, 9]) { totalCount } } }'
    assert estimate(SCHEMA, parse(query), None, None).points == 1 + 2 * 5


@pytest.mark.parametrize(
    ("args", "points"),
    [
        ("first: 20", 1 + 1),  # one partition
        ("verifiedOnly: false", 1 + 1),
        ("verifiedOnly: true", 1 + 2 * 5),  # a fan-out over the five verified ratings
        ("verifiedOnly: true, ratings: [4, 5]", 1 + 2 * 2),
        ("verifiedOnly: true, ratings: [5]", 1 + 1),
    ],
)
def test_verified_only_is_priced_as_the_fan_out_it_reads(args: str, points: int) -> None:
    query = '{ product(productId: "p") { comments(' + args + ") { totalCount } } }"
    assert estimate(SCHEMA, parse(query), None, None).points == points


def test_a_verified_filter_in_a_variable_is_priced_at_its_value() -> None:
    query = (
        'query($v: Boolean!) { product(productId: "p") { comments(verifiedOnly: $v) '
        "{ totalCount } } }"
    )
    assert estimate(SCHEMA, parse(query), None, {"v": True}).points == 1 + 2 * 5
    assert estimate(SCHEMA, parse(query), None, {"v": False}).points == 1 + 1


@pytest.fixture(scope="module")
async def seeded(table: TableRef) -> str:
    """A product of this module's own, seeded once: the tests that use it only read."""
    product_id = f"p-{uuid.uuid4().hex[:12]}"
    await create_many(
        table,
        [
            NewComment(product_id, "en", 1 + n % 5, f"b{n}", f"u{n}", created_at=stamp(n))
            for n in range(30)
        ],
    )
    return product_id


async def test_the_cost_bypass_is_refused_before_any_read(api: Api, seeded: str) -> None:
    body = await api.gql(BYPASS, {"c": None, "ids": [gid("Product", seeded)] * 100})
    assert body["data"] is None
    (error,) = body["errors"]
    assert error["extensions"]["code"] == "QUERY_TOO_COMPLEX"
    assert body["extensions"]["storage"]["calls"] == 0


async def test_variables_that_do_not_coerce_run_nothing(api: Api, seeded: str) -> None:
    body = await api.gql(
        "query($p: ID!, $n: Int) { product(productId: $p) { comments(first: $n) { totalCount } } }",
        {"p": seeded, "n": "many"},
    )
    assert body["data"] is None
    assert body["errors"][0]["extensions"]["code"] == "BAD_USER_INPUT"
    assert body["extensions"]["storage"]["calls"] == 0


@pytest.mark.parametrize(
    "field",
    [
        'product(productId: "$P") { comments(first: 0) { totalCount pageInfo { hasNextPage } } }',
        'product(productId: "$P") { comments(first: 0, ratings: [1, 2, 3]) { totalCount } }',
        'product(productId: "$P") { comments(last: 0, verifiedOnly: true) { totalCount } }',
        "viewer { comments(first: 0) { totalCount pageInfo { hasNextPage } } }",
        "moderationQueue(first: 0) { totalCount pageInfo { hasNextPage } }",
    ],
)
async def test_an_empty_page_is_priced_at_the_reads_it_makes(
    api: Api, seeded: str, field: str
) -> None:
    # An empty page still reads one item per partition to answer hasNextPage: the estimate
    # must admit those reads, or the field fails for a reason the client cannot fix.
    body = await api.gql("{ " + field.replace("$P", seeded) + " }", token=token(moderator=True))
    assert "errors" not in body, body["errors"]
    storage, cost = body["extensions"]["storage"], body["extensions"]["cost"]
    assert storage["calls"] <= cost["requested"]
    assert storage["refusedCalls"] == 0


# The large response: 100 comments, each with its product's 50 newest (5,100
# comments), under the point budget but not under the node budget.
WIDE = """query($p: ID!) { product(productId: $p) { comments(first: 100, language: "en") {
  nodes { product { comments(first: 50) { nodes { body } } } } } } }"""


async def test_a_response_too_large_is_refused_before_any_read(api: Api, seeded: str) -> None:
    body = await api.gql(WIDE, {"p": seeded})
    assert body["data"] is None
    (error,) = body["errors"]
    assert error["extensions"] == {"code": "QUERY_TOO_COMPLEX", "nodes": 5302, "nodeBudget": 1000}
    assert "5302 objects" in error["message"]
    assert body["extensions"]["storage"]["calls"] == 0


HEAVY = """
{ topProducts(first: 13) { product { comments(ratings: [1, 2, 3, 4], first: 100)
  { totalCount } } } }"""


async def test_over_budget_is_refused_before_any_read(api: Api) -> None:
    body = await api.gql(HEAVY)
    assert body["data"] is None
    (error,) = body["errors"]
    points = LEADERBOARD_CALLS + 13 * (1 + 2 * 4 * -(-101 // ITEMS_PER_RESPONSE))
    assert error["extensions"] == {"code": "QUERY_TOO_COMPLEX", "cost": points, "budget": 500}
    assert str(points) in error["message"]
    assert body["extensions"]["storage"]["calls"] == 0


async def test_accepted_requests_report_their_cost(api: Api, product_id: str) -> None:
    body = await api.gql(
        "query($p: ID!) { product(productId: $p) { comments(ratings: [4, 5]) { totalCount } } }",
        {"p": product_id},
    )
    assert "errors" not in body
    assert body["extensions"]["cost"] == {
        "requested": 5,
        "budget": 500,
        "nodes": 2,
        "nodeBudget": 1000,
    }


async def test_the_budget_is_configured(table: TableRef, product_id: str) -> None:
    query = "query($p: ID!) { product(productId: $p) { stats { total } lastCommentedAt } }"
    async with running_api(table.client, table.name, max_query_cost=1) as small:
        body = await small.gql(query, {"p": product_id})
    assert body["errors"][0]["extensions"]["code"] == "QUERY_TOO_COMPLEX"
    assert body["errors"][0]["extensions"]["cost"] == 2


def test_the_meter_refuses_calls_beyond_its_budget() -> None:
    meter = Meter(budget=2)
    meter.admit("query")
    meter.admit("query")
    with pytest.raises(CallBudgetExceeded):
        meter.admit("get_item")
    assert (meter.started, meter.refused) == (2, 1)
    Meter().admit("query")  # no budget: no limit


class _OneItemPerResponse(ClientWrapper):
    """Every query answers one item and a continuation key, as DynamoDB does when a page of
    large items crosses 1 MB: the read takes many more calls than a page normally does."""

    async def _call(self, operation: str, kwargs: dict[str, Any]) -> Response:
        if operation == "query":
            kwargs = {**kwargs, "Limit": 1}
        return await super()._call(operation, kwargs)


async def test_calls_beyond_the_accepted_cost_are_not_made(table: TableRef, seeded: str) -> None:
    product = gid("Product", seeded)
    query = """query($ids: [ID!]!) {
      cheap: nodes(ids: $ids) { ... on Product { stats { total } } }
      dear: nodes(ids: $ids) { ... on Product { comments { nodes { body } } } }
    }"""
    async with running_api(_OneItemPerResponse(table.client), table.name) as api:
        body = await api.gql(query, {"ids": [product]})
    # The cheap field is answered; the page, which would have taken 21 queries, fails
    # alone, and no call beyond the accepted estimate was made.
    assert body["data"]["cheap"] == [{"stats": {"total": 30}}]
    assert body["data"]["dear"] == [{"comments": None}]
    (error,) = body["errors"]
    assert error["extensions"]["code"] == "QUERY_TOO_COMPLEX"
    assert error["path"] == ["dear", 0, "comments"]
    storage = body["extensions"]["storage"]
    assert storage["calls"] == body["extensions"]["cost"]["requested"] == 5
    assert storage["refusedCalls"] >= 1


async def test_the_response_object_budget_is_the_setting(table: TableRef) -> None:
    query = '{ product(productId: "p1") { comments(first: 10) { nodes { title } } } }'
    async with running_api(table.client, table.name, max_response_nodes=5) as small:
        body = await small.gql(query)
        assert body["errors"][0]["extensions"]["code"] == "QUERY_TOO_COMPLEX"
    async with running_api(table.client, table.name, max_response_nodes=50) as roomy:
        assert "errors" not in await roomy.gql(query)
