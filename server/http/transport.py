"""GraphQL over HTTP (the GraphQL-over-HTTP specification): the media type of a response
(from the Accept header), the status a result gets in it, and the shape of refusals.

Two media types: ``application/graphql-response+json``, where a request error (a document
that does not parse or validate, an operation that cannot be determined, variables that do
not coerce, a request refused before it runs) is a 400 without a ``data`` entry; and
``application/json`` for older clients, where every well-formed request is a 200 and a
request error keeps ``"data": null``, as before. A request that is not well-formed (bad
JSON, a missing or non-string query) is a 400 in both.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any, Final, Literal

import orjson
from cross_web import HTTPException
from graphql import GraphQLError
from starlette.responses import Response
from strawberry.extensions import SchemaExtension
from strawberry.types.execution import PreExecutionError
from strawberry.types.graphql import OperationType

GRAPHQL_RESPONSE_JSON: Final = "application/graphql-response+json"
JSON: Final = "application/json"
MediaType = Literal["application/graphql-response+json", "application/json"]

# Most specific first: an exact type, its type with any subtype, anything.
_MATCHES: dict[MediaType, tuple[str, str, str]] = {
    GRAPHQL_RESPONSE_JSON: (GRAPHQL_RESPONSE_JSON, "application/*", "*/*"),
    JSON: (JSON, "application/*", "*/*"),
}


def negotiate(accept: str | None) -> MediaType | None:
    """The media type of a GraphQL response for this Accept header; None when the client
    accepts neither (a 406). No Accept header, ``*/*`` and ``application/*`` get
    ``application/json``, what clients that name no type expect; named at the same
    quality, ``application/graphql-response+json`` wins."""
    if accept is None or not accept.strip():
        return JSON
    ranges = dict(_ranges(accept))
    best: tuple[float, int, int] | None = None
    chosen: MediaType | None = None
    for media_type, patterns in _MATCHES.items():
        for specificity, pattern in enumerate(patterns):
            if pattern not in ranges:
                continue
            quality = ranges[pattern]
            exact = specificity == 0
            preferred = (media_type == GRAPHQL_RESPONSE_JSON) == exact
            key = (quality, -specificity, int(preferred))
            if quality > 0 and (best is None or key > best):
                best, chosen = key, media_type
            break  # the most specific range that matches decides this type's quality
    return chosen


def _ranges(accept: str) -> Iterator[tuple[str, float]]:
    """(media range, quality) for each range of an Accept header; ranges asking for a
    charset other than UTF-8 (the only one served) are left out."""
    for part in accept.split(","):
        name, *params = part.split(";")
        media_range = name.strip().lower()
        if media_range.count("/") != 1:
            continue
        quality = 1.0
        utf8 = True
        for param in params:
            key, _, value = param.partition("=")
            key, value = key.strip().lower(), value.strip().strip('"').lower()
            if key == "q":
                try:
                    quality = float(value)
                except ValueError:
                    quality = 0.0
                if not 0.0 <= quality <= 1.0:  # NaN included
                    quality = 0.0
            elif key == "charset" and value not in ("utf-8", "utf8"):
                utf8 = False
        if utf8:
            yield media_range, quality


def content_type(media_type: MediaType) -> str:
    return f"{media_type}; charset=utf-8"


def result_status(media_type: MediaType, *, request_error: bool, internal: bool) -> int:
    """The status of a GraphQL result: request errors are a 400 (a 500 when masking an
    unexpected failure) in application/graphql-response+json, everything a 200 in
    application/json."""
    if media_type == JSON or not request_error:
        return 200
    return 500 if internal else 400


class Refused(HTTPException):
    """A request refused before GraphQL could run it, with the headers the refusal needs
    (``Allow`` on a 405)."""

    def __init__(
        self,
        status_code: int,
        reason: str,
        headers: Mapping[str, str] | None = None,
        *,
        code: str = "BAD_USER_INPUT",
    ) -> None:
        super().__init__(status_code, reason)
        self.headers = dict(headers or {})
        self.code = code


# The methods /graphql answers: queries over GET, queries and mutations over POST.
ALLOWED_METHODS = "GET, POST"


def refusal(exc: HTTPException, media_type: MediaType) -> Response:
    """A GraphQL-shaped refusal in the negotiated media type (application/json when the
    client accepts neither): one error with its code (BAD_USER_INPUT unless given), and
    ``"data": null`` in application/json, or when the status is a success."""
    headers = exc.headers if isinstance(exc, Refused) else {}
    code = exc.code if isinstance(exc, Refused) else "BAD_USER_INPUT"
    if exc.status_code == 405:
        headers = {"allow": ALLOWED_METHODS, **headers}
    body: dict[str, Any] = {"errors": [{"message": exc.reason, "extensions": {"code": code}}]}
    if media_type == JSON or exc.status_code < 300:
        body = {"data": None, **body}
    return Response(
        orjson.dumps(body),
        status_code=exc.status_code,
        headers={**headers, "content-type": content_type(media_type)},
    )


class RequestErrors(SchemaExtension):
    """A result an earlier extension made before execution (the cost limit refuses requests
    that way) becomes a ``PreExecutionError``, as Strawberry names parse and validation
    errors, so the view can tell request errors from results of execution. Runs after the
    extensions before it in the schema's list."""

    def on_execute(self) -> Iterator[None]:
        context = self.execution_context
        made = context.result
        if made is not None and not isinstance(made, PreExecutionError):
            context.result = PreExecutionError(data=None, errors=list(made.errors or []))
        elif context.operation_type is OperationType.SUBSCRIPTION and not getattr(
            context.context, "over_socket", False
        ):
            # Strawberry lets a subscription through GET and POST, where it would run as a
            # query and fail inside; it is a request error of the client's instead.
            refused = GraphQLError(
                "Subscriptions are served over WebSocket (graphql-transport-ws) at this "
                "path; send queries and mutations over HTTP.",
                extensions={"code": "BAD_USER_INPUT"},
            )
            context.result = PreExecutionError(data=None, errors=[refused])
        yield
