"""Every error leaves with a contract code; unexpected ones are masked with a request id.

Parse and validation errors (including our complexity rules) carry their code or become
BAD_USER_INPUT; errors raised by resolvers are ApiErrors or storage errors and are mapped;
anything else is logged with the request id and replaced by INTERNAL_SERVER_ERROR, so no
stack trace, AWS error text or key format reaches a client.
"""

from __future__ import annotations

import logging
from typing import Any

from graphql.error import GraphQLError
from strawberry.extensions import SchemaExtension

from resolvers.context import Context
from resolvers.errors import CODES, ApiError, from_storage

log = logging.getLogger("comments.errors")
TOKEN_LIMIT_PREFIX = "Syntax Error: Document contains more than"
SUGGESTION = " Did you mean "


def classify(error: GraphQLError, request_id: str) -> tuple[str, str, dict[str, Any]]:
    """(code, message, extra extensions) for one error."""
    original = error.original_error
    if isinstance(original, ApiError):
        return original.code, original.message, original.extensions()
    if original is not None:
        mapped = from_storage(original)
        if mapped is not None:
            return mapped.code, mapped.message, mapped.extensions()
        if not isinstance(original, GraphQLError):
            log.error("request %s: unexpected error", request_id, exc_info=original)
            message = f"Internal server error (request id {request_id})"
            return "INTERNAL_SERVER_ERROR", message, {"requestId": request_id}
    extensions = error.extensions or {}
    code = extensions.get("code")
    if isinstance(code, str) and code in CODES:
        # Our own rules set the code, and what they add (a cost, a budget) is for clients.
        return code, error.message, {k: v for k, v in extensions.items() if k != "code"}
    if error.message.startswith(TOKEN_LIMIT_PREFIX):
        return "QUERY_TOO_COMPLEX", "The query has too many tokens.", {}
    # Syntax errors, unknown fields, wrong argument types: the client's request is at fault.
    return "BAD_USER_INPUT", error.message, {}


def without_suggestions(message: str) -> str:
    """The message without graphql-core's "Did you mean ...?" hint, which would let a client
    with introspection off discover field, argument, type and enum names one guess at a time."""
    head, found, _ = message.partition(SUGGESTION)
    return head.rstrip() if found else message


def with_codes(
    errors: list[GraphQLError], request_id: str, *, suggestions: bool = True
) -> list[GraphQLError]:
    """The errors of a result, each rewritten with its contract code.

    Applied to every result the HTTP view sends (parse errors included, which Strawberry
    raises before any operation-level extension could see them). Idempotent.
    """
    rewritten = []
    for error in errors:
        code, message, extra = classify(error, request_id)
        if not suggestions:
            message = without_suggestions(message)
        rewritten.append(
            GraphQLError(
                message,
                nodes=error.nodes,
                source=error.source,
                positions=error.positions,
                path=error.path,
                original_error=None,
                extensions={"code": code, **extra},
            )
        )
    return rewritten


class StorageReport(SchemaExtension):
    """Adds this request's storage calls to ``extensions``, and the items read and capacity
    where plans are shown (EXPLAIN on, or a moderator): those figures depend on what
    storage holds, so elsewhere they would tell that a hidden comment exists, and its size.
    Where shown, they leave out what was read of a comment the viewer may not see (see
    ``resolvers.comments.visibility``): it reads as an unknown id does."""

    def get_results(self) -> dict[str, Any]:
        context = self.execution_context.context
        if not isinstance(context, Context):
            return {}
        storage = context.meter.summary(detailed=context.may_explain())
        return {"storage": storage, "requestId": context.request_id}
