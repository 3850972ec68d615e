"""Property: no accepted request makes more storage calls than its cost estimate.

Random documents from `schema.graphql` (hypothesis-graphql: queries, and mutations with a
token), run in process over DynamoDB Local against a table of their own, seeded with a
busy product (skewed ratings, three languages), a small one and an empty one. Arguments
are steered to hostile values: ids of the real products and comments, cursors of real
comments, empty, negative and huge pages, repeated ratings; and some literals become
variables, sent as given or as null into a non-null argument (a nullable variable with a
default, which validation lets through). For every response the storage calls the meter
counted (`extensions.storage.calls`) must not exceed the estimate (`extensions.cost`),
and the run-time enforcement must never have fired (`refusedCalls` 0): on realistic data
the estimate alone is right.
"""

from __future__ import annotations

import base64
import hashlib
import random
from collections import Counter
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import graphql
import hypothesis_graphql
import pytest
from graphql import (
    ArgumentNode,
    DocumentNode,
    NameNode,
    NonNullTypeNode,
    ObjectFieldNode,
    OperationDefinitionNode,
    TypeInfo,
    TypeInfoVisitor,
    ValueNode,
    VariableDefinitionNode,
    VariableNode,
    Visitor,
    print_ast,
    value_from_ast_untyped,
    visit,
)
from hypothesis import event, given, settings
from hypothesis import strategies as st
from hypothesis_graphql import nodes

from storage.engine.table import TableRef
from storage.model import keys
from storage.model.comments import Comment
from storage.ops.bulk import load_new_products
from storage.reads.cursor import encode_cursor
from tests.api_helpers import Api, running_api, token
from tests.helpers import own_table

SDL = (Path(__file__).resolve().parents[2] / "schema.graphql").read_text()
SCHEMA = graphql.build_schema(SDL)
BUSY, SMALL, EMPTY = "sku-busy", "sku-small", "sku-empty"
LANGUAGES = ["en", "en", "en", "de", "de", "fr"]
# J-shaped, as product reviews are: mostly 5 and 4, a bump at 1.
RATINGS = [5] * 9 + [4] * 5 + [3] * 2 + [2] * 2 + [1] * 3


def _gid(type_name: str, node_id: str) -> str:
    return base64.b64encode(f"{type_name}:{node_id}".encode()).decode()


def _seed() -> list[Comment]:
    rng = random.Random(11)
    made = []
    for product, count in ((BUSY, 160), (SMALL, 7)):
        for n in range(count):
            made.append(
                Comment(
                    # Ids of the shape this layer generates (cursors are checked for it).
                    comment_id=hashlib.sha256(f"{product}-{n}".encode()).hexdigest()[:32],
                    product_id=product,
                    language=rng.choice(LANGUAGES),
                    rating=rng.choice(RATINGS),
                    title=None if n % 3 else f"title {n}",
                    body=f"comment {n} on {product}",
                    author_id=f"author-{n % 9}",
                    created_at=keys.format_timestamp(
                        keys.parse_timestamp("2025-01-01T00:00:00.000Z").replace(
                            day=1 + n % 28, hour=n % 24, minute=n % 60
                        )
                    ),
                )
            )
    return made


SEEDED = _seed()


def _some_comments() -> list[Comment]:
    busy = [c for c in SEEDED if c.product_id == BUSY]
    return busy[::40] + [c for c in SEEDED if c.product_id == SMALL][:2]


SOME = _some_comments()
GLOBAL_IDS = [_gid("Product", BUSY), _gid("Product", SMALL), _gid("Product", EMPTY)]
GLOBAL_IDS += [_gid("Comment", c.comment_id) for c in SOME]
CURSORS = [encode_cursor(c.sort_key) for c in SOME]
PAGES = [0, 1, 2, 5, 5, 20, 20, 22, 23, 50, 100, 100, 101, 1000, -7]


def _text(values: list[str]) -> st.SearchStrategy[ValueNode]:
    return st.sampled_from(values).map(nodes.String)


def _input(fields: dict[str, st.SearchStrategy[ValueNode]]) -> st.SearchStrategy[ValueNode]:
    def build(values: dict[str, ValueNode]) -> ValueNode:
        return nodes.Object(
            [ObjectFieldNode(name=NameNode(value=k), value=v) for k, v in values.items()]
        )

    return st.fixed_dictionaries(fields).map(build)


# Arguments steered, most of the time, to values that get past the resolvers' checks
# (real products, comments and cursors) or to the hostile ones the estimate must price:
# empty, huge and conflicting pages, repeated ratings, many ids.
STEER: dict[str, st.SearchStrategy[ValueNode]] = {
    "productId": _text([BUSY, SMALL, EMPTY]),
    "commentId": _text([c.comment_id for c in SOME] + ["nope"]),
    "id": _text(GLOBAL_IDS),
    "ids": st.lists(_text(GLOBAL_IDS), min_size=1, max_size=12).map(nodes.List),
    "language": _text(["en", "en", "de", "fr", "it"]),
    "after": _text(CURSORS),
    "before": _text(CURSORS),
    "first": st.sampled_from(PAGES).map(nodes.Int),
    "last": st.sampled_from(PAGES).map(nodes.Int),
    "ratings": st.lists(st.integers(1, 5), max_size=5).map(
        lambda rs: nodes.List([nodes.Int(r) for r in rs])
    ),
    "input": st.one_of(
        _input(
            {
                "productId": _text([BUSY, SMALL]),
                "rating": st.integers(1, 5).map(nodes.Int),
                "language": _text(["en", "de"]),
                "body": _text(["new comment"]),
            }
        ),
        _input({"id": _text(GLOBAL_IDS + [c.comment_id for c in SOME])}),
    ),
}


class _Arguments(Visitor):
    """Collects each argument with its input type."""

    def __init__(self, info: TypeInfo) -> None:
        super().__init__()
        self.info = info
        self.found: list[tuple[ArgumentNode, graphql.GraphQLInputType]] = []

    def enter_argument(self, node: ArgumentNode, *_: Any) -> None:
        argument = self.info.get_argument()
        if argument is not None:
            self.found.append((node, argument.type))


class _Replace(Visitor):
    def __init__(self, values: dict[int, ValueNode], definitions: list[Any]) -> None:
        super().__init__()
        self.values = values
        self.definitions = definitions

    def leave_argument(self, node: ArgumentNode, *_: Any) -> ArgumentNode | None:
        value = self.values.get(id(node))
        return None if value is None else ArgumentNode(name=node.name, value=value)

    def leave_operation_definition(self, node: OperationDefinitionNode, *_: Any) -> Any:
        return OperationDefinitionNode(
            operation=node.operation,
            name=node.name,
            variable_definitions=tuple(self.definitions),
            directives=node.directives,
            selection_set=node.selection_set,
        )


@st.composite
def requests(draw: st.DrawFn) -> tuple[str, dict[str, Any], bool]:
    """A document, its variables, and whether it is a mutation (sent with a token)."""
    mutation = draw(st.integers(0, 5)) == 0
    make = hypothesis_graphql.mutations if mutation else hypothesis_graphql.queries
    document: DocumentNode = draw(make(SCHEMA, print_ast=lambda d: d, allow_x00=False))
    info = TypeInfo(SCHEMA)
    arguments = _Arguments(info)
    visit(document, TypeInfoVisitor(info, arguments))
    replaced: dict[int, ValueNode] = {}
    definitions: list[VariableDefinitionNode] = []
    variables: dict[str, Any] = {}
    for n, (argument, type_) in enumerate(arguments.found):
        literal = argument.value
        steer = STEER.get(argument.name.value)
        if steer is not None and draw(st.integers(0, 4)) > 0:
            literal = replaced[id(argument)] = draw(steer)
        how = draw(st.sampled_from(["literal"] * 4 + ["variable"] * 2 + ["null"]))
        if how == "literal":
            continue
        name = f"v{n}"
        type_node = ast_type(type_)
        default: Any = None  # a literal of the generated document, so a constant
        if how == "null":
            # A nullable variable with a default may sit where a non-null one is expected;
            # sent as null it reaches the argument as null all the same.
            if isinstance(type_node, NonNullTypeNode):
                type_node = type_node.type
            default = literal
            variables[name] = None
        else:
            variables[name] = value_from_ast_untyped(literal)
        replaced[id(argument)] = VariableNode(name=NameNode(value=name))
        definitions.append(
            VariableDefinitionNode(
                variable=VariableNode(name=NameNode(value=name)),
                type=type_node,
                default_value=default,
                directives=(),
            )
        )
    if replaced:
        document = visit(document, _Replace(replaced, definitions))
    if definitions:
        event("with variables")
    return print_ast(document), variables, mutation


def ast_type(type_: graphql.GraphQLInputType) -> Any:
    """The type node of an input type (graphql-core has the reverse only)."""
    if isinstance(type_, graphql.GraphQLNonNull):
        return NonNullTypeNode(type=ast_type(type_.of_type))
    if isinstance(type_, graphql.GraphQLList):
        return graphql.ListTypeNode(type=ast_type(type_.of_type))
    return graphql.NamedTypeNode(name=NameNode(value=type_.name))


@pytest.fixture(scope="module")
async def seeded_table(table: TableRef) -> TableRef:
    own = await own_table(table, "costprop")
    await load_new_products(own, SEEDED)
    return own


@pytest.fixture(scope="module")
async def seeded_api(seeded_table: TableRef) -> AsyncIterator[Api]:
    async with running_api(seeded_table.client, seeded_table.name) as running:
        yield running


OUTCOMES: Counter[str] = Counter()
WRITER = token("property-writer", moderator=True)


@settings(max_examples=600)
@given(requests())
async def test_no_request_makes_more_calls_than_its_estimate(
    seeded_api: Api, case: tuple[str, dict[str, Any], bool]
) -> None:
    query, variables, mutation = case
    response = await seeded_api.http.post(
        "/graphql",
        json={"query": query, "variables": variables},
        headers={"authorization": f"Bearer {WRITER}"} if mutation else {},
    )
    body = response.json()
    codes = {e["extensions"]["code"] for e in body.get("errors", [])}
    assert "INTERNAL_SERVER_ERROR" not in codes, body["errors"]
    storage = body.get("extensions", {}).get("storage", {"calls": 0, "refusedCalls": 0})
    cost = body.get("extensions", {}).get("cost")
    if cost is None:
        # Refused before an estimate (parse, validation, a request error): nothing ran.
        assert storage["calls"] == 0
        OUTCOMES["refused before estimating"] += 1
        event("refused before estimating")
        return
    assert storage["calls"] <= cost["requested"], (query, variables, storage, cost)
    assert storage.get("refusedCalls", 0) == 0, (query, variables, storage, cost)
    if storage["calls"]:
        share = 10 * storage["calls"] // cost["requested"]
        event(f"calls {10 * share}-{10 * share + 9}% of the estimate")
    outcome = "ran with storage calls" if storage["calls"] else "ran without storage calls"
    if body.get("data") is None and storage["calls"] == 0:
        outcome = f"nothing read: {sorted(codes)}"
    OUTCOMES[outcome] += 1
    event(outcome)


def test_the_property_reached_storage() -> None:
    # Runs after the property (file order): the examples were not all refused or trivial.
    if not OUTCOMES:
        pytest.skip("the property did not run in this session")
    print(dict(OUTCOMES))
    assert OUTCOMES["ran with storage calls"] >= 20, OUTCOMES
