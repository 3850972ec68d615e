"""Document limits: fragments that expand exponentially, page arguments that conflict, lists
too long to coerce, several operations without a name."""

from __future__ import annotations

from typing import Any

import pytest
from graphql import (
    FragmentDefinitionNode,
    OperationDefinitionNode,
    parse,
    specified_rules,
    validate,
)
from graphql.execution.values import VariableValues

from resolvers.errors import BadUserInput
from resolvers.pages import page_request
from schema import build_schema
from schema.cost import WORST, Estimator, estimate
from schema.limits import (
    LIST_MAX,
    VARIABLE_VALUES_MAX,
    Shape,
    check_variable_sizes,
    depth_limit,
    size_limit,
)
from storage.model.comments import PAGE_SIZE_MAX
from storage.reads.cursor import encode_cursor
from tests.api_helpers import Api

SCHEMA = build_schema()._schema
POS = "2025-06-01T12:00:00.000Z#0123456789abcdef0123456789abcdef"
CURSOR = encode_cursor(POS)


def bomb(fragments: int, base: str = "__typename") -> str:
    """The issue's shape: each fragment spreads the previous one twice, so the document
    expands to 2**(fragments - 1) copies of ``base`` in a few hundred bytes."""
    parts = [f"fragment F0 on Query {{ {base} }}"]
    parts += [f"fragment F{n} on Query {{ ...F{n - 1} ...F{n - 1} }}" for n in range(1, fragments)]
    return f"{{ ...F{fragments - 1} }} " + " ".join(parts)


def _parts(document: str) -> tuple[OperationDefinitionNode, dict[str, FragmentDefinitionNode]]:
    parsed = parse(document)
    (operation,) = [d for d in parsed.definitions if isinstance(d, OperationDefinitionNode)]
    fragments = {
        d.name.value: d for d in parsed.definitions if isinstance(d, FragmentDefinitionNode)
    }
    return operation, fragments


def test_the_shape_walks_each_fragment_once() -> None:
    operation, fragments = _parts(bomb(24))
    shape = Shape(fragments)
    assert shape.measure(operation.selection_set) == (0, 2**23)
    assert set(shape.walks) == set(fragments)
    assert max(shape.walks.values()) == 1


def test_the_estimator_walks_each_fragment_once() -> None:
    operation, fragments = _parts(bomb(24, 'product(productId: "p") { stats { total } }'))
    estimator = Estimator(SCHEMA, fragments, VariableValues({}, {}))
    assert SCHEMA.query_type is not None
    tally = estimator.selection_set(SCHEMA.query_type, operation.selection_set, WORST)
    # Every copy is priced (execution would merge them; the size limit refuses them first).
    assert tally.points == 2**23
    assert max(estimator.walks.values()) == 1


def test_a_fragment_bomb_is_refused_by_its_expanded_size() -> None:
    errors = validate(SCHEMA, parse(bomb(40)), [*specified_rules, size_limit(2000)])
    (error,) = errors
    assert error.extensions == {"code": "QUERY_TOO_COMPLEX"}
    assert str(2**39) in error.message
    # The depth rule gets through it too (it is 0 levels deep), and so does the estimator.
    assert validate(SCHEMA, parse(bomb(40)), [depth_limit(12)]) == []
    assert estimate(SCHEMA, parse(bomb(40)), None, None).points == 0


def test_fragments_used_many_times_are_fine() -> None:
    page = "fragment C on Comment { commentId rating body author createdAt }"
    query = (
        "query($p: ID!) { product(productId: $p) { comments(first: 5) { edges { node { ...C } } "
        "nodes { ...C product { comments(first: 2) { nodes { ...C } } } } } } } " + page
    )
    assert validate(SCHEMA, parse(query), [*specified_rules, size_limit(2000)]) == []


async def test_the_issues_fragment_bomb_is_refused_over_http(api: Api) -> None:
    response = await api.http.post("/graphql", json={"query": bomb(40)})
    body = response.json()
    assert body["errors"][0]["extensions"]["code"] == "QUERY_TOO_COMPLEX"
    assert "data" not in body or body["data"] is None
    # A small bomb (2**9 copies) is under the limit and answered.
    small = (await api.http.post("/graphql", json={"query": bomb(10)})).json()
    assert small["data"] == {"__typename": "Query"}


# --- first with before ----------------------------------------------------------------


@pytest.mark.parametrize("first", [0, -7, 20, 1000])
def test_first_with_before_is_refused(first: int) -> None:
    with pytest.raises(BadUserInput, match="first goes with after; use last with before"):
        page_request(first=first, before=CURSOR)


PAGE_ARGUMENTS = [
    {"first": first, "after": after, "last": last, "before": before}
    for first in (None, 0, 5, -7, 1000)
    for last in (None, 0, 7, 101)
    for after in (None, CURSOR)
    for before in (None, CURSOR)
]


@pytest.mark.parametrize("args", PAGE_ARGUMENTS, ids=repr)
def test_the_estimator_prices_the_page_storage_reads(args: dict[str, Any]) -> None:
    try:
        expected = page_request(**args).size
    except BadUserInput:
        expected = PAGE_SIZE_MAX  # execution refuses it; the estimate is its worst case
    query = (
        "query($first: Int, $after: String, $last: Int, $before: String) "
        '{ product(productId: "p") { comments(first: $first, after: $after, last: $last, '
        "before: $before) { nodes { product { productId } } } } }"
    )
    # The product, the connection, then a comment and its product per comment of the page.
    nodes = estimate(SCHEMA, parse(query), None, args).nodes
    assert (nodes - 2) // 2 == expected


FIRST_BEFORE = """query($p: ID!, $c: String) { product(productId: $p) {
  comments(first: 0, before: $c) { nodes { product {
    comments(first: 0, before: $c) { nodes { product {
      comments(first: 0, before: $c) { totalCount } } } } } } } } }"""


async def test_first_with_before_over_http(api: Api, product_id: str) -> None:
    one = await api.gql(
        "query($p: ID!, $c: String) { product(productId: $p) { comments(first: 3, before: $c) "
        "{ totalCount } } }",
        {"p": product_id, "c": CURSOR},
    )
    assert one["errors"][0]["extensions"]["code"] == "BAD_USER_INPUT"
    assert one["errors"][0]["message"] == "first goes with after; use last with before"
    assert one["extensions"]["storage"]["calls"] == 0
    # Three levels deep the worst case of each page is priced, and refused before a read.
    deep = await api.gql(FIRST_BEFORE, {"p": product_id, "c": CURSOR})
    assert deep["errors"][0]["extensions"]["code"] == "QUERY_TOO_COMPLEX"
    assert deep["extensions"]["storage"]["calls"] == 0


# --- list lengths -----------------------------------------------------------------------


PAGE = """query($p: ID!, $r: [Int!]) {
  product(productId: $p) { comments(ratings: $r) { totalCount } } }"""


@pytest.mark.parametrize(
    ("query", "variables"),
    [
        # Literals: ratings takes five values at most, ids a hundred, any list a hundred.
        (
            '{ product(productId: "p") { comments(ratings: [1, 2, 3, 4, 5, 1]) { totalCount } } }',
            {},
        ),
        ("{ nodes(ids: [" + ", ".join(['"x"'] * 101) + "]) { id } }", {}),
        (
            "query($r: [Int!] = [" + ", ".join(["1"] * 101) + ']) { product(productId: "p") '
            "{ comments(ratings: $r) { totalCount } } }",
            {},
        ),
        # Variables: checked before they are coerced, and again once coerced.
        (PAGE, {"p": "p", "r": [1, 2, 3, 4, 5] * 100_000}),
        (PAGE, {"p": "p", "r": [1, 2, 3, 4, 5, 5]}),
        (PAGE, {"p": "p", "r": [1], "junk": [list(range(100))] * 50}),
    ],
    ids=["ratings-literal", "ids-literal", "default", "ratings-500k", "ratings-6", "many-values"],
)
async def test_lists_too_long_are_refused(api: Api, query: str, variables: dict[str, Any]) -> None:
    response = await api.http.post("/graphql", json={"query": query, "variables": variables})
    body = response.json()
    assert body["errors"][0]["extensions"]["code"] == "QUERY_TOO_COMPLEX", body["errors"]
    assert body.get("data") is None
    assert body.get("extensions", {}).get("storage", {}).get("calls", 0) == 0


def test_variable_sizes() -> None:
    assert check_variable_sizes({"ids": ["x"] * LIST_MAX, "n": 5}) is None
    too_long = check_variable_sizes({"input": {"nested": [[1] * (LIST_MAX + 1)]}})
    assert too_long is not None
    assert too_long.extensions == {
        "code": "QUERY_TOO_COMPLEX",
        "length": LIST_MAX + 1,
        "maximum": LIST_MAX,
    }
    many = check_variable_sizes({f"v{n}": [1] * 50 for n in range(VARIABLE_VALUES_MAX // 50)})
    assert many is not None
    assert "values" in many.message
    wide = check_variable_sizes({f"k{n}": n for n in range(VARIABLE_VALUES_MAX + 1)})
    assert wide is not None


# --- several operations -------------------------------------------------------------------


TWO = """query Counts { product(productId: "p-two") { stats { total } } }
query Last { product(productId: "p-two") { lastCommentedAt } }"""


async def test_several_operations_need_an_operation_name(api: Api) -> None:
    body = (await api.http.post("/graphql", json={"query": TWO})).json()
    assert body.get("data") is None
    (error,) = body["errors"]
    assert error["extensions"]["code"] == "BAD_USER_INPUT"
    assert "operationName" in error["message"]
    assert body["extensions"]["storage"]["calls"] == 0
    named = (await api.http.post("/graphql", json={"query": TWO, "operationName": "Last"})).json()
    assert named["data"] == {"product": {"lastCommentedAt": None}}
