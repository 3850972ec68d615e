"""Complexity limits as validation rules that report QUERY_TOO_COMPLEX themselves.

Depth and expanded size are measured through fragments, and each fragment is walked once
per operation: a fragment that spreads the previous one twice doubles the expanded size of
a document, never the work of measuring it. The expanded size is the number of fields the
document would have with every fragment written out; a few hundred bytes of fragments that
spread each other can expand to billions, which is refused here, before the estimator or
execution see the document.

List values are capped too, before anything coerces them: literals in the document here,
lists in the JSON variables by ``check_variable_sizes``, and coerced arguments (where a
variable became the list) by the cost estimator, all with the caps of ``LIST_CAPS``.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from graphql import (
    ArgumentNode,
    ASTValidationRule,
    FieldNode,
    FragmentDefinitionNode,
    FragmentSpreadNode,
    GraphQLError,
    InlineFragmentNode,
    ListValueNode,
    OperationDefinitionNode,
    OperationType,
    SelectionSetNode,
    ValidationContext,
)
from graphql.validation.validation_context import ASTValidationContext

from storage.engine.batch import BATCH_GET_MAX
from storage.model import rules

CODE = {"code": "QUERY_TOO_COMPLEX"}

# The longest list each list argument takes: ratings name at most the five ratings; ids at
# most one BatchGetItem's worth (and each id costs a point, see schema.cost).
LIST_CAPS: dict[tuple[str, str, str], int] = {
    ("Product", "comments", "ratings"): len(rules.RATINGS),
    ("Query", "nodes", "ids"): BATCH_GET_MAX,
}
# No list anywhere in a request (a literal, a variable's value) may be longer than the
# longest any argument takes.
LIST_MAX = max(LIST_CAPS.values())
# Values a request's variables may hold in all (lists, objects and scalars, nested ones
# included): ten times what the largest legitimate request (100 ids) needs.
VARIABLE_VALUES_MAX = 10 * LIST_MAX


class Shape:
    """Depth and expanded size of an operation's selections, each fragment walked once."""

    def __init__(self, fragments: dict[str, FragmentDefinitionNode]) -> None:
        self.fragments = fragments
        self._memo: dict[str, tuple[int, int]] = {}
        # How often each fragment's selections were walked (at most once; tests read it).
        self.walks: Counter[str] = Counter()

    def measure(self, selection_set: SelectionSetNode) -> tuple[int, int]:
        """(depth, expanded size in fields) of a selection set."""
        depth = size = 0
        for selection in selection_set.selections:
            if isinstance(selection, FieldNode):
                name = selection.name.value
                if name.startswith("__") and name != "__typename":
                    continue  # introspection (__schema, __type) counts neither way
                inner = (0, 0)
                if selection.selection_set is not None:
                    inner = self.measure(selection.selection_set)
                if name != "__typename":
                    depth = max(depth, 1 + inner[0])
                size += 1 + inner[1]
            elif isinstance(selection, InlineFragmentNode):
                inner = self.measure(selection.selection_set)
                depth, size = max(depth, inner[0]), size + inner[1]
            elif isinstance(selection, FragmentSpreadNode):
                inner = self.fragment(selection.name.value)
                depth, size = max(depth, inner[0]), size + inner[1]
        return depth, size

    def fragment(self, name: str) -> tuple[int, int]:
        found = self._memo.get(name)
        if found is not None:
            return found
        # A spread of a fragment being measured closes a cycle: it adds nothing here, and
        # NoFragmentCyclesRule refuses the document.
        self._memo[name] = (0, 0)
        definition = self.fragments.get(name)
        if definition is None:
            return 0, 0  # KnownFragmentNamesRule reports it
        self.walks[name] += 1
        measured = self.measure(definition.selection_set)
        self._memo[name] = measured
        return measured


def _shape(context: ValidationContext) -> Shape:
    return Shape(
        {
            d.name.value: d
            for d in context.document.definitions
            if isinstance(d, FragmentDefinitionNode)
        }
    )


def depth_limit(max_depth: int) -> type[ASTValidationRule]:
    class DepthLimit(ASTValidationRule):
        shape: Shape | None = None

        def enter_operation_definition(self, node: OperationDefinitionNode, *_: Any) -> None:
            context = self.context
            assert isinstance(context, ValidationContext)
            self.shape = self.shape or _shape(context)
            depth = self.shape.measure(node.selection_set)[0]
            if depth > max_depth:
                context.report_error(
                    GraphQLError(
                        f"The query is {depth} levels deep; at most {max_depth} are allowed.",
                        node,
                        extensions=CODE,
                    )
                )

    return DepthLimit


def size_limit(max_fields: int) -> type[ASTValidationRule]:
    """Refuses operations that expand, fragments written out, to more than ``max_fields``."""

    class SizeLimit(ASTValidationRule):
        shape: Shape | None = None

        def enter_operation_definition(self, node: OperationDefinitionNode, *_: Any) -> None:
            context = self.context
            assert isinstance(context, ValidationContext)
            self.shape = self.shape or _shape(context)
            size = self.shape.measure(node.selection_set)[1]
            if size > max_fields:
                context.report_error(
                    GraphQLError(
                        f"The query expands to {size} fields once its fragments are written "
                        f"out; at most {max_fields} are allowed.",
                        node,
                        extensions=CODE,
                    )
                )

    return SizeLimit


def alias_limit(max_aliases: int) -> type[ASTValidationRule]:
    class AliasLimit(ASTValidationRule):
        count = 0
        reported = False

        def enter_field(self, node: FieldNode, *_: Any) -> None:
            if node.alias is None:
                return
            self.count += 1
            if self.count > max_aliases and not self.reported:
                self.reported = True
                self.context.report_error(
                    GraphQLError(
                        f"The query has more than {max_aliases} aliases.",
                        node,
                        extensions=CODE,
                    )
                )

    return AliasLimit


class OneMutation(ASTValidationRule):
    """A mutation operation runs one mutation field. The contract's payloads are non-null,
    so a second write that fails (rate limited, a conflict, storage) would null the whole
    response and hide that the first one was written; one write per request keeps every
    answer true. ``__typename`` does not count."""

    def enter_operation_definition(self, node: OperationDefinitionNode, *_: Any) -> None:
        if node.operation != OperationType.MUTATION:
            return
        writes = _root_fields(self.context, node.selection_set, set())
        if writes > 1:
            self.context.report_error(
                GraphQLError(
                    f"A request may run one mutation; this one asks for {writes}. Send them "
                    "as separate requests.",
                    node,
                    extensions={"code": "BAD_USER_INPUT"},
                )
            )


def _root_fields(
    context: ASTValidationContext, selections: SelectionSetNode, seen: set[str]
) -> int:
    count = 0
    for selection in selections.selections:
        if isinstance(selection, FieldNode):
            count += selection.name.value != "__typename"
        elif isinstance(selection, InlineFragmentNode):
            count += _root_fields(context, selection.selection_set, seen)
        elif isinstance(selection, FragmentSpreadNode) and selection.name.value not in seen:
            seen.add(selection.name.value)  # a cycle is reported by graphql's own rules
            fragment = context.get_fragment(selection.name.value)
            if fragment is not None:
                count += _root_fields(context, fragment.selection_set, seen)
    return count


def list_too_long(what: str, length: int, cap: int) -> GraphQLError:
    return GraphQLError(
        f"{what} has {length} values; at most {cap} are allowed.",
        extensions={**CODE, "length": length, "maximum": cap},
    )


def list_cap(type_name: str, field_name: str, argument: str) -> int:
    """The longest list an argument takes."""
    return LIST_CAPS.get((type_name, field_name, argument), LIST_MAX)


class ListLimit(ASTValidationRule):
    """Caps list literals: an argument's list by its own cap, any other list by LIST_MAX."""

    def enter_argument(
        self, node: ArgumentNode, _key: Any, _parent: Any, _path: Any, ancestors: Any
    ) -> None:
        if not isinstance(node.value, ListValueNode):
            return
        context = self.context
        assert isinstance(context, ValidationContext)
        parent_type = context.get_parent_type()
        owner = ancestors[-1] if ancestors else None
        cap = LIST_MAX
        if parent_type is not None and isinstance(owner, FieldNode):
            cap = list_cap(parent_type.name, owner.name.value, node.name.value)
        length = len(node.value.values)
        if length > cap:
            error = list_too_long(f"The list given to {node.name.value}", length, cap)
            self.report_error(GraphQLError(error.message, node, extensions=error.extensions))

    def enter_list_value(self, node: ListValueNode, _key: Any, parent: Any, *_: Any) -> None:
        if isinstance(parent, ArgumentNode):
            return  # capped with its argument, above
        length = len(node.values)
        if length > LIST_MAX:
            error = list_too_long("A list in the query", length, LIST_MAX)
            self.report_error(GraphQLError(error.message, node, extensions=error.extensions))


def check_variable_sizes(variables: object) -> GraphQLError | None:
    """An error when the raw (JSON) variables hold a list longer than any argument takes or
    more than VARIABLE_VALUES_MAX values in all; looked at before anything coerces them,
    and never further than that many values."""
    too_many = GraphQLError(
        f"The variables hold more than {VARIABLE_VALUES_MAX} values.",
        extensions={**CODE, "maximum": VARIABLE_VALUES_MAX},
    )
    pending: list[object] = [variables]
    held = 1
    while pending:
        value = pending.pop()
        if isinstance(value, list):
            if len(value) > LIST_MAX:
                return list_too_long("A list in the variables", len(value), LIST_MAX)
            children: list[object] = value
        elif isinstance(value, dict):
            if len(value) > VARIABLE_VALUES_MAX:
                return too_many
            children = list(value.values())
        else:
            continue
        held += len(children)
        if held > VARIABLE_VALUES_MAX:
            return too_many
        pending.extend(children)
    return None
