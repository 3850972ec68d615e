"""Bearer tokens: HS256 JWTs whose claims name the author and their roles."""

from __future__ import annotations

import time
from dataclasses import dataclass

import jwt

from resolvers.errors import Unauthenticated

ALGORITHM = "HS256"
MODERATOR = "moderator"


@dataclass(frozen=True, slots=True)
class Viewer:
    """Who is calling: ``sub`` is the author id, ``name`` the display name."""

    author_id: str
    name: str | None  # display name from the token, None when it has none
    roles: frozenset[str]

    @property
    def is_moderator(self) -> bool:
        return MODERATOR in self.roles


def authenticate(authorization: str | None, secret: str) -> Viewer:
    """The viewer named by an ``Authorization: Bearer <jwt>`` header, or Unauthenticated."""
    if not authorization:
        raise Unauthenticated("this operation needs an Authorization: Bearer <token> header")
    scheme, _, token = authorization.partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        raise Unauthenticated("the Authorization header must be: Bearer <token>")
    try:
        claims = jwt.decode(
            token.strip(),
            secret,
            algorithms=[ALGORITHM],
            options={"require": ["sub", "exp"]},
        )
    except jwt.ExpiredSignatureError as exc:
        raise Unauthenticated("the token has expired") from exc
    except jwt.InvalidTokenError as exc:
        raise Unauthenticated("the token is not valid") from exc
    sub, name, roles = claims.get("sub"), claims.get("name"), claims.get("roles", [])
    if not isinstance(sub, str) or not sub.strip() or len(sub) > 128:
        raise Unauthenticated("the token's sub claim must name the author")
    if name is not None and (not isinstance(name, str) or not name.strip() or len(name) > 128):
        raise Unauthenticated("the token's name claim must be a short string")
    if not isinstance(roles, list) or not all(isinstance(r, str) for r in roles):
        raise Unauthenticated("the token's roles claim must be a list of strings")
    return Viewer(sub, name, frozenset(roles))


def mint(
    secret: str,
    sub: str,
    *,
    name: str | None = None,
    roles: list[str] | None = None,
    ttl_seconds: int = 24 * 3600,
) -> str:
    """A signed token for development and tests."""
    now = int(time.time())
    claims: dict[str, object] = {"sub": sub, "iat": now, "exp": now + ttl_seconds}
    if name is not None:
        claims["name"] = name
    if roles:
        claims["roles"] = roles
    return jwt.encode(claims, secret, algorithm=ALGORITHM)
