"""What a request may cost, estimated before it runs, GitHub-style.

A point is one storage query (or one key of a batched read) the request could make. Each
field that reads storage costs its queries times the number of times it can run, which is
the product of the page sizes and list lengths above it:

    Query.node, Query.comment            1
    Query.nodes(ids)                     len(ids); fields below run len(ids) times
    Query.topProducts(first)             1; fields below run `first` times
    Product.stats, .lastCommentedAt      1
    Product.comments(ratings, first)     1 (the counters) + one query per requested rating
                                         (1 when no filter); fields below run page-size times
    Mutation.createComment / delete      2 (the transaction and the reads around it)

The figure is an upper bound: the planner may skip empty ratings and the loaders batch keys,
so an accepted request usually costs less. Fragments count for every type they could apply
to; @skip and @include are ignored. Variables are coerced first; when they do not coerce the
estimate is left to execution, which reports the error.
"""

from __future__ import annotations

from collections.abc import Callable, Generator, Mapping
from dataclasses import dataclass
from typing import Any

from graphql import (
    DocumentNode,
    ExecutionResult,
    FieldNode,
    FragmentDefinitionNode,
    FragmentSpreadNode,
    GraphQLError,
    GraphQLField,
    GraphQLInterfaceType,
    GraphQLObjectType,
    GraphQLSchema,
    InlineFragmentNode,
    SelectionSetNode,
    get_named_type,
)
from graphql.execution.values import VariableValues, get_argument_values, get_variable_values
from graphql.utilities import get_operation_ast
from strawberry.extensions import SchemaExtension

DEFAULT_PAGE = 20
ALL_RATINGS = 5


@dataclass(frozen=True, slots=True)
class FieldCost:
    points: int  # storage queries of one execution of the field
    fan: int = 1  # how many times each field below it runs per execution


def _page_size(args: Mapping[str, Any]) -> int:
    for name in ("first", "last"):
        value = args.get(name)
        if isinstance(value, int):
            return max(value, 0)
    return DEFAULT_PAGE


def _comments(args: Mapping[str, Any]) -> FieldCost:
    ratings = args.get("ratings") or []
    width = len({r for r in ratings if isinstance(r, int)})
    queries = 1 if width in (0, ALL_RATINGS) else width
    return FieldCost(1 + queries, _page_size(args))


def _nodes(args: Mapping[str, Any]) -> FieldCost:
    count = len(args.get("ids") or [])
    return FieldCost(count, count)


def _top(args: Mapping[str, Any]) -> FieldCost:
    first = args.get("first")
    return FieldCost(1, max(first, 0) if isinstance(first, int) else 0)


RULES: dict[tuple[str, str], Callable[[Mapping[str, Any]], FieldCost]] = {
    ("Query", "node"): lambda _: FieldCost(1),
    ("Query", "comment"): lambda _: FieldCost(1),
    ("Query", "nodes"): _nodes,
    ("Query", "topProducts"): _top,
    ("Product", "stats"): lambda _: FieldCost(1),
    ("Product", "lastCommentedAt"): lambda _: FieldCost(1),
    ("Product", "comments"): _comments,
    ("Mutation", "createComment"): lambda _: FieldCost(2),
    ("Mutation", "deleteComment"): lambda _: FieldCost(2),
}


class _Estimator:
    def __init__(
        self,
        schema: GraphQLSchema,
        fragments: dict[str, FragmentDefinitionNode],
        variables: VariableValues,
    ) -> None:
        self.schema = schema
        self.fragments = fragments
        self.variables = variables

    def selection_set(
        self, parent: GraphQLObjectType | GraphQLInterfaceType, node: SelectionSetNode
    ) -> int:
        total = 0
        for selection in node.selections:
            if isinstance(selection, FieldNode):
                total += self.field(parent, selection)
            elif isinstance(selection, InlineFragmentNode):
                condition = selection.type_condition
                target = parent if condition is None else self._type(condition.name.value)
                if target is not None:
                    total += self.selection_set(target, selection.selection_set)
            elif isinstance(selection, FragmentSpreadNode):
                fragment = self.fragments.get(selection.name.value)
                target = (
                    None if fragment is None else self._type(fragment.type_condition.name.value)
                )
                if fragment is not None and target is not None:
                    # Validation has already refused fragment cycles.
                    total += self.selection_set(target, fragment.selection_set)
        return total

    def field(self, parent: GraphQLObjectType | GraphQLInterfaceType, node: FieldNode) -> int:
        name = node.name.value
        definition: GraphQLField | None = parent.fields.get(name)
        if definition is None:
            return 0  # __typename and introspection
        rule = RULES.get((parent.name, name))
        cost = FieldCost(0)
        if rule is not None:
            cost = rule(get_argument_values(definition, node, self.variables))
        below = 0
        named = get_named_type(definition.type)
        if node.selection_set is not None and isinstance(
            named, GraphQLObjectType | GraphQLInterfaceType
        ):
            below = self.selection_set(named, node.selection_set)
        return cost.points + cost.fan * below

    def _type(self, name: str) -> GraphQLObjectType | GraphQLInterfaceType | None:
        found = self.schema.get_type(name)
        return found if isinstance(found, GraphQLObjectType | GraphQLInterfaceType) else None


def estimate(
    schema: GraphQLSchema,
    document: DocumentNode,
    operation_name: str | None,
    variables: dict[str, Any] | None,
) -> int | None:
    """Upper bound of the storage queries the operation may run; None when it cannot run."""
    operation = get_operation_ast(document, operation_name)
    if operation is None:
        return None
    root = schema.get_root_type(operation.operation)
    if root is None:
        return None
    coerced = get_variable_values(schema, operation.variable_definitions or (), variables or {})
    if isinstance(coerced, list):
        return None
    fragments = {
        d.name.value: d for d in document.definitions if isinstance(d, FragmentDefinitionNode)
    }
    try:
        return _Estimator(schema, fragments, coerced).selection_set(root, operation.selection_set)
    except GraphQLError:
        return None  # a bad argument value: execution reports it


def cost_limit(budget: int) -> Callable[[], SchemaExtension]:
    """An extension that refuses requests costing more than ``budget`` points with
    QUERY_TOO_COMPLEX and reports the cost of every accepted one in ``extensions.cost``."""

    class CostLimit(SchemaExtension):
        cost: int | None = None

        def on_execute(self) -> Generator[None, None, None]:
            context = self.execution_context
            if context.graphql_document is not None:
                self.cost = estimate(
                    context.schema._schema,
                    context.graphql_document,
                    context.operation_name,
                    context.variables,
                )
            if self.cost is not None and self.cost > budget:
                error = GraphQLError(
                    f"The query could cost {self.cost} points; at most {budget} are allowed. "
                    "Ask for smaller pages or fewer products per request.",
                    extensions={"code": "QUERY_TOO_COMPLEX", "cost": self.cost, "budget": budget},
                )
                context.result = ExecutionResult(data=None, errors=[error])
            yield

        def get_results(self) -> dict[str, Any]:
            if self.cost is None:
                return {}
            return {"cost": {"requested": self.cost, "budget": budget}}

    return CostLimit
