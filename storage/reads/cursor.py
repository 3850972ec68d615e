"""Opaque, versioned keyset cursors.

A cursor is the position of the edge item of a page in the order read (its GSISK, or the
queue's sort key), prefixed with a version and the order it belongs to, and encoded as
unpadded base64url. It is a position, not an offset, so any plan of that order can
continue it and a page costs the same at any depth. A position means nothing in another
order, so a cursor used with one is refused.

Cursors of the first version (``c1``) carried no order: they are still read, in the orders
that existed then.
"""

from __future__ import annotations

import base64
import binascii
import enum

from storage.base.errors import InvalidCursor, InvalidInput
from storage.model import keys
from storage.model.comments import Comment, Order
from storage.model.rules import validate_product_id

VERSION = "c2"
_LEGACY = "c1"
_MAX_ENCODED = 256


class Ordering(enum.Enum):
    """The order a cursor's position belongs to."""

    NEWEST = "n"  # a product's comments (v1's only order)
    OLDEST = "o"
    HIGHEST_RATING = "h"  # positions: rating, then GSISK
    LOWEST_RATING = "l"
    MOST_HELPFUL = "m"  # positions: HSK
    AUTHOR = "a"  # the viewer's own comments
    QUEUE = "q"  # the moderation queue, by submission time
    MEMBERS = "p"  # a group's products, by product id

    @classmethod
    def of(cls, order: Order) -> Ordering:
        return cls[order.name]

    def validate(self, position: str) -> str:
        """The position if it has the full shape of one of this order, else InvalidCursor."""
        if self in (Ordering.HIGHEST_RATING, Ordering.LOWEST_RATING):
            keys.split_rating_position(position)
            return position
        if self is Ordering.MOST_HELPFUL:
            return keys.validate_helpful_position(position)
        if self is Ordering.MEMBERS:
            try:
                return validate_product_id(position)
            except InvalidInput as exc:
                raise InvalidCursor("cursor is not valid") from exc
        return keys.validate_sort_key(position)


def position_of(comment: Comment, ordering: Ordering) -> str:
    """Where a published comment stands in a product listing's ``ordering``: the position a
    page of that order gives it (its GSISK; its rating's partition and GSISK; its HSK)."""
    if ordering in (Ordering.HIGHEST_RATING, Ordering.LOWEST_RATING):
        return keys.rating_position(comment.rating, comment.sort_key)
    if ordering is Ordering.MOST_HELPFUL:
        return keys.helpful_sort_key(comment.helpful, comment.sort_key)
    return comment.sort_key


def encode_cursor(sort_key: str, ordering: Ordering = Ordering.NEWEST) -> str:
    """Encode a position in ``ordering`` as a cursor."""
    ordering.validate(sort_key)
    raw = f"{VERSION}:{ordering.value}:{sort_key}".encode()
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode("ascii")


def decode_cursor(cursor: object, ordering: Ordering = Ordering.NEWEST) -> str:
    """Decode a cursor of ``ordering`` back to its position; anything else (a cursor of
    another order included) raises ``InvalidCursor``."""
    if not isinstance(cursor, str) or not 0 < len(cursor) <= _MAX_ENCODED:
        raise InvalidCursor("cursor is not valid")
    if not cursor.isascii() or any(c in "=+/" or c.isspace() for c in cursor):
        raise InvalidCursor("cursor is not valid")
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
        text = raw.decode("utf-8")
    except (binascii.Error, ValueError) as exc:
        raise InvalidCursor("cursor is not valid") from exc
    version, sep, rest = text.partition(":")
    if not sep or version not in (VERSION, _LEGACY):
        raise InvalidCursor("cursor is not valid (unknown version)")
    sort_key = rest
    if version == _LEGACY and ordering not in _LEGACY_ORDERINGS:
        raise InvalidCursor(
            "this cursor belongs to another listing or order; ask for the first page of this "
            "one without it"
        )
    if version == VERSION:
        tag, sep, sort_key = rest.partition(":")
        if not sep or tag not in _TAGS:
            raise InvalidCursor("cursor is not valid")
        if _TAGS[tag] is not ordering:
            raise InvalidCursor(
                "this cursor belongs to another listing or order; ask for the first page of "
                "this one without it"
            )
    # Re-encoding must give the same text: rejects non-canonical base64 spellings.
    if base64.urlsafe_b64encode(raw).rstrip(b"=").decode("ascii") != cursor:
        raise InvalidCursor("cursor is not valid")
    try:
        return ordering.validate(sort_key)
    except InvalidCursor as exc:
        raise InvalidCursor("cursor is not valid") from exc


_TAGS = {o.value: o for o in Ordering}
# The orders that existed when cursors carried none (their positions were GSISKs or
# the queue's keys).
_LEGACY_ORDERINGS = (Ordering.NEWEST, Ordering.AUTHOR, Ordering.QUEUE)
