"""Opaque, versioned keyset cursors.

A cursor is the GSISK of the edge item of a page, prefixed with a version and encoded as
unpadded base64url. It is a position in the shared sort order, not an offset, so any plan
can continue it and a page costs the same at any depth.
"""

from __future__ import annotations

import base64
import binascii

from storage import keys
from storage.errors import InvalidCursor

VERSION = "c1"
_MAX_ENCODED = 256


def encode_cursor(sort_key: str) -> str:
    """Encode a GSISK as a cursor."""
    keys.validate_sort_key(sort_key)
    raw = f"{VERSION}:{sort_key}".encode()
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode("ascii")


def decode_cursor(cursor: object) -> str:
    """Decode a cursor back to its GSISK; anything else raises ``InvalidCursor``."""
    if not isinstance(cursor, str) or not 0 < len(cursor) <= _MAX_ENCODED:
        raise InvalidCursor("cursor is not valid")
    if not cursor.isascii() or any(c in "=+/" or c.isspace() for c in cursor):
        raise InvalidCursor("cursor is not valid")
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
        text = raw.decode("utf-8")
    except (binascii.Error, ValueError) as exc:
        raise InvalidCursor("cursor is not valid") from exc
    version, sep, sort_key = text.partition(":")
    if not sep or version != VERSION:
        raise InvalidCursor("cursor is not valid (unknown version)")
    # Re-encoding must give the same text: rejects non-canonical base64 spellings.
    if base64.urlsafe_b64encode(raw).rstrip(b"=").decode("ascii") != cursor:
        raise InvalidCursor("cursor is not valid")
    try:
        return keys.validate_sort_key(sort_key)
    except InvalidCursor as exc:
        raise InvalidCursor("cursor is not valid") from exc
