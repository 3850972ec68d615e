"""Document limits: fragments that expand exponentially, page arguments that conflict, lists
too long to coerce, several operations without a name."""

from __future__ import annotations

import pytest

from storage.cursor import encode_cursor
from storage.errors import InvalidPageRequest
from storage.model import PageRequest

POS = "2025-06-01T12:00:00.000Z#abc"
CURSOR = encode_cursor(POS)


# --- first with before ----------------------------------------------------------------


@pytest.mark.parametrize("first", [0, -7, 20, 1000])
def test_first_with_before_is_refused(first: int) -> None:
    with pytest.raises(InvalidPageRequest, match="first goes with after; use last with before"):
        PageRequest.from_relay(first=first, before=CURSOR)
