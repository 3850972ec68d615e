"""Relay's page arguments (``first``/``after``, ``last``/``before``) turned into a
``PageRequest`` storage can trust: the rules about which arguments go together are Relay's,
so they live here, not in storage."""

from __future__ import annotations

from resolvers.errors import BadUserInput
from storage.model.comments import PAGE_SIZE_DEFAULT, PAGE_SIZE_MAX, Direction, PageRequest
from storage.reads.cursor import Ordering, decode_cursor


def page_size(
    first: int | None = None,
    after: str | None = None,
    last: int | None = None,
    before: str | None = None,
) -> int:
    """The page size the arguments ask for, 0 to PAGE_SIZE_MAX; BAD_USER_INPUT when they
    conflict or are out of range. Pure (cursors are not decoded): the cost estimator prices
    a page with the size storage will read."""
    if first is not None and last is not None:
        raise BadUserInput("give either first or last, not both")
    if after is not None and before is not None:
        raise BadUserInput("give either after or before, not both")
    if last is not None and after is not None:
        raise BadUserInput("after goes with first; use before with last")
    if first is not None and before is not None:
        raise BadUserInput("first goes with after; use last with before")
    size = first if first is not None else last if last is not None else PAGE_SIZE_DEFAULT
    if isinstance(size, bool) or not isinstance(size, int):
        raise BadUserInput("page size must be an integer")
    if not 0 <= size <= PAGE_SIZE_MAX:
        raise BadUserInput(f"page size must be between 0 and {PAGE_SIZE_MAX}")
    return size


def page_request(
    first: int | None = None,
    after: str | None = None,
    last: int | None = None,
    before: str | None = None,
    *,
    ordering: Ordering = Ordering.NEWEST,
) -> PageRequest:
    """The page the arguments ask for, its cursor decoded (a bad one, or one of another
    order, is BAD_USER_INPUT)."""
    size = page_size(first, after, last, before)
    if last is not None or before is not None:
        position = None if before is None else decode_cursor(before, ordering)
        return PageRequest(size, Direction.BACKWARD, position)
    position = None if after is None else decode_cursor(after, ordering)
    return PageRequest(size, Direction.FORWARD, position)
