"""Relay page arguments become a PageRequest storage can trust (resolvers.pages)."""

from __future__ import annotations

import pytest

from resolvers.errors import BadUserInput
from resolvers.pages import page_request
from storage.base.errors import InvalidCursor
from storage.model.comments import Direction, PageRequest
from storage.reads.cursor import encode_cursor

POS = "2025-06-01T12:00:00.000Z#0123456789abcdef0123456789abcdef"


def test_relay_arguments() -> None:
    assert page_request() == PageRequest(20, Direction.FORWARD, None)
    assert page_request(first=5, after=encode_cursor(POS)) == PageRequest(5, Direction.FORWARD, POS)
    assert page_request(last=7) == PageRequest(7, Direction.BACKWARD, None)
    assert page_request(before=encode_cursor(POS)) == PageRequest(20, Direction.BACKWARD, POS)


@pytest.mark.parametrize(
    "kwargs",
    [
        {"first": 1, "last": 1},
        {"first": -1},
        {"first": 101},
        {"last": 1000},
        {"after": encode_cursor(POS), "before": encode_cursor(POS)},
        {"last": 3, "after": encode_cursor(POS)},
    ],
)
def test_bad_relay_arguments(kwargs: dict[str, object]) -> None:
    with pytest.raises(BadUserInput):
        page_request(**kwargs)  # type: ignore[arg-type]


def test_bad_cursor_in_relay_arguments() -> None:
    with pytest.raises(InvalidCursor):
        page_request(first=3, after="nope")
