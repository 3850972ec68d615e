"""What readers learn about an author: a public id that is stable but reveals nothing, and the
token's ``sub`` only for the author themself and moderators."""

from __future__ import annotations

import hashlib
import hmac

from resolvers.auth import Viewer


def author_key(secret: str) -> bytes:
    """The key of public author ids, derived from a server secret (``AUTHOR_ID_KEY``, else
    ``JWT_SECRET``): ids stay the same as long as that secret does."""
    return hmac.new(secret.encode(), b"public author ids", hashlib.sha256).digest()


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
