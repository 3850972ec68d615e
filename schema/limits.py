"""Complexity limits as validation rules that report QUERY_TOO_COMPLEX themselves."""

from __future__ import annotations

from typing import Any

from graphql import (
    ASTValidationRule,
    FieldNode,
    FragmentDefinitionNode,
    FragmentSpreadNode,
    GraphQLError,
    InlineFragmentNode,
    OperationDefinitionNode,
    SelectionSetNode,
    ValidationContext,
)

CODE = {"code": "QUERY_TOO_COMPLEX"}


def _depth(
    selection_set: SelectionSetNode | None,
    fragments: dict[str, FragmentDefinitionNode],
    seen: frozenset[str],
) -> int:
    if selection_set is None:
        return 0
    deepest = 0
    for selection in selection_set.selections:
        if isinstance(selection, FieldNode):
            if selection.name.value.startswith("__"):
                continue  # introspection fields do not count
            deepest = max(deepest, 1 + _depth(selection.selection_set, fragments, seen))
        elif isinstance(selection, InlineFragmentNode):
            deepest = max(deepest, _depth(selection.selection_set, fragments, seen))
        elif isinstance(selection, FragmentSpreadNode):
            name = selection.name.value
            fragment = fragments.get(name)
            if fragment is not None and name not in seen:
                deepest = max(deepest, _depth(fragment.selection_set, fragments, seen | {name}))
    return deepest


def depth_limit(max_depth: int) -> type[ASTValidationRule]:
    class DepthLimit(ASTValidationRule):
        def enter_operation_definition(self, node: OperationDefinitionNode, *_: Any) -> None:
            context = self.context
            assert isinstance(context, ValidationContext)
            fragments = {
                d.name.value: d
                for d in context.document.definitions
                if isinstance(d, FragmentDefinitionNode)
            }
            depth = _depth(node.selection_set, fragments, frozenset())
            if depth > max_depth:
                context.report_error(
                    GraphQLError(
                        f"The query is {depth} levels deep; at most {max_depth} are allowed.",
                        node,
                        extensions=CODE,
                    )
                )

    return DepthLimit


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
