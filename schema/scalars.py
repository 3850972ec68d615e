"""Custom scalars of the public contract, registered through StrawberryConfig.scalar_map."""

from __future__ import annotations

from typing import NewType

import strawberry
from strawberry.types.scalar import ScalarDefinition

from storage import keys

# Stored timestamps are already ISO-8601 UTC with milliseconds; they pass through unchanged.
DateTime = NewType("DateTime", str)


def _parse_datetime(value: object) -> DateTime:
    if not isinstance(value, str):
        raise ValueError("DateTime must be a string such as 2026-11-21T19:00:00.000Z")
    try:
        keys.parse_timestamp(value)
    except ValueError as exc:
        raise ValueError("DateTime must look like 2026-11-21T19:00:00.000Z (UTC, ms)") from exc
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
