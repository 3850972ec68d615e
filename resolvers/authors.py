"""What readers learn about an author: a public id that is stable but reveals nothing, and the
token's ``sub`` only for the author themself and moderators."""

from __future__ import annotations

import hashlib
import hmac

from resolvers.auth import Viewer

# AUTHOR_ID_KEY in this form is the key itself, in hex (what `comments author-id-key`
# prints), rather than a secret to derive one from: pinned, it gives the very ids the JWT
# secret it was derived from gave, without being a secret that can sign tokens.
KEY_PREFIX = "hmac-sha256:"
_KEY_BYTES = hashlib.sha256().digest_size


def author_key(secret: str) -> bytes:
    """The key of public author ids, derived from a server secret (``AUTHOR_ID_KEY``, else
    ``JWT_SECRET``): ids stay the same as long as that secret does."""
    return hmac.new(secret.encode(), b"public author ids", hashlib.sha256).digest()


def configured_key(author_id_key: str) -> bytes:
    """The key an ``AUTHOR_ID_KEY`` setting stands for: the key itself when it is in the
    printed form (``hmac-sha256:`` and 64 hex digits), else the one derived from it as from
    a JWT secret. ValueError for the printed form cut short or altered."""
    if not author_id_key.startswith(KEY_PREFIX):
        return author_key(author_id_key)
    digits = author_id_key.removeprefix(KEY_PREFIX)
    try:
        key = bytes.fromhex(digits)
    except ValueError:
        key = b""
    if len(key) != _KEY_BYTES or len(digits) != 2 * _KEY_BYTES:
        raise ValueError(
            f"a key printed by `comments author-id-key` is {KEY_PREFIX} and "
            f"{2 * _KEY_BYTES} hex digits"
        )
    return key


def printed_key(key: bytes) -> str:
    """``key`` in the form an ``AUTHOR_ID_KEY`` setting takes it as it is."""
    return KEY_PREFIX + key.hex()


def public_author_id(key: bytes, sub: str) -> str:
    """An opaque, stable id for an author: the same for all their comments, and no way back
    to the token's ``sub`` (which may be an e-mail address or an account number) without
    the server's key."""
    return hmac.new(key, sub.encode(), hashlib.sha256).hexdigest()[:32]


def visible_subject(viewer: Viewer | None, sub: str) -> str | None:
    """The token ``sub`` of a comment's author, for that author and moderators only."""
    if viewer is None:
        return None
    if viewer.is_moderator or viewer.author_id == sub:
        return sub
    return None
