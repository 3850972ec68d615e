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

from schema import build_schema
from schema.limits import (
    LIST_MAX,
    VARIABLE_VALUES_MAX,
    Shape,
    check_variable_sizes,
    depth_limit,
    size_limit,
)
from storage.cursor import encode_cursor
from storage.errors import InvalidPageRequest
from storage.model import PageRequest
from tests.api_helpers import Api

SCHEMA = build_schema()._schema
POS = "2025-06-01T12:00:00.000Z#abc"
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


def test_a_fragment_bomb_is_refused_by_its_expanded_size() -> None:
    errors = validate(SCHEMA, parse(bomb(40)), [*specified_rules, size_limit(2000)])
    (error,) = errors
    assert error.extensions == {"code": "QUERY_TOO_COMPLEX"}
    assert str(2**39) in error.message
    # The depth rule gets through it too (it is 0 levels deep).
    assert validate(SCHEMA, parse(bomb(40)), [depth_limit(12)]) == []


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
    assert body.get("data") is None
    # A small bomb (2**9 copies) is under the limit and answered.
    small = (await api.http.post("/graphql", json={"query": bomb(10)})).json()
    assert small["data"] == {"__typename": "Query"}


# --- first with before ----------------------------------------------------------------


@pytest.mark.parametrize("first", [0, -7, 20, 1000])
def test_first_with_before_is_refused(first: int) -> None:
    with pytest.raises(InvalidPageRequest, match="first goes with after; use last with before"):
        PageRequest.from_relay(first=first, before=CURSOR)


# --- list lengths -----------------------------------------------------------------------


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
    ],
    ids=["ratings-literal", "ids-literal", "default"],
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
