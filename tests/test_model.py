from __future__ import annotations

import pytest

from storage.cursor import encode_cursor
from storage.errors import InvalidCommentText, InvalidCursor, InvalidPageRequest, InvalidRating
from storage.model import Direction, NewComment, PageRequest, RatingCounts

POS = "2025-06-01T12:00:00.000Z#0123456789abcdef0123456789abcdef"


def test_relay_arguments() -> None:
    assert PageRequest.from_relay() == PageRequest(20, Direction.FORWARD, None)
    assert PageRequest.from_relay(first=5, after=encode_cursor(POS)) == PageRequest(
        5, Direction.FORWARD, POS
    )
    assert PageRequest.from_relay(last=7) == PageRequest(7, Direction.BACKWARD, None)
    assert PageRequest.from_relay(before=encode_cursor(POS)) == PageRequest(
        20, Direction.BACKWARD, POS
    )


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
    with pytest.raises(InvalidPageRequest):
        PageRequest.from_relay(**kwargs)  # type: ignore[arg-type]


def test_bad_cursor_in_relay_arguments() -> None:
    with pytest.raises(InvalidCursor):
        PageRequest.from_relay(first=3, after="nope")


def test_page_size_bounds() -> None:
    assert PageRequest(0).size == 0
    assert PageRequest(100).size == 100
    with pytest.raises(InvalidPageRequest):
        PageRequest(True)


def _new(**overrides: object) -> NewComment:
    fields: dict[str, object] = {
        "product_id": "42",
        "language": "en",
        "rating": 4,
        "body": "Good",
        "author": "ann",
    }
    fields.update(overrides)
    return NewComment(**fields)  # type: ignore[arg-type]


def test_new_comment_normalises() -> None:
    c = _new(language="PT-br", title="   ")
    assert c.language == "pt-br"
    assert c.title is None


@pytest.mark.parametrize(
    "overrides",
    [
        {"body": ""},
        {"body": "   "},
        {"body": "x" * 10_001},
        {"title": "t" * 201},
        {"body": "bell\x07"},
        {"author": ""},
        {"idempotency_key": ""},
    ],
)
def test_new_comment_rejects_bad_text(overrides: dict[str, object]) -> None:
    with pytest.raises(InvalidCommentText):
        _new(**overrides)


def test_new_comment_rejects_bad_rating() -> None:
    with pytest.raises(InvalidRating):
        _new(rating=0)


def test_rating_counts() -> None:
    c = RatingCounts("42", None, (1, 0, 0, 0, 3))
    assert c.total == 4
    assert c.average == 4.0
    assert c.matching(frozenset({1, 2})) == 1
    assert RatingCounts("42", None).average is None
    with pytest.raises(ValueError, match="non-negative"):
        RatingCounts("42", None, (1, -1, 0, 0, 0))
