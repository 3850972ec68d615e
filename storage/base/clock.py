"""The clock writes stamp with (UTC, aware); writers take it as a parameter so that tests
can move time."""

from __future__ import annotations

from datetime import UTC, datetime


def utc_now() -> datetime:
    return datetime.now(UTC)
