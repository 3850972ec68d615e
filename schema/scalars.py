"""Custom scalars of the public contract, registered through StrawberryConfig.scalar_map."""

from __future__ import annotations

from typing import NewType

import strawberry
from graphql import GraphQLError
from strawberry.types.scalar import ScalarDefinition

from storage.model import keys

# Stored timestamps are already ISO-8601 UTC with milliseconds; they pass through unchanged.
DateTime = NewType("DateTime", str)


def _parse_datetime(value: object) -> DateTime:
    # A GraphQLError is the client's mistake (BAD_USER_INPUT); any other exception raised
    # while coercing an input would reach clients as an internal error.
    if not isinstance(value, str):
        raise GraphQLError("DateTime must be a string such as 2026-11-21T19:00:00.000Z")
    try:
        keys.parse_timestamp(value)
    except ValueError as exc:
        raise GraphQLError("DateTime must look like 2026-11-21T19:00:00.000Z (UTC, ms)") from exc
    return DateTime(value)


SCALARS: dict[object, ScalarDefinition] = {
    DateTime: strawberry.scalar(
        name="DateTime",
        description="ISO-8601 date-time in UTC, millisecond precision, "
        "e.g. 2026-11-21T19:00:00.000Z",
        serialize=str,
        parse_value=_parse_datetime,
    )
}
