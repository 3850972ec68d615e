"""Bearer tokens: HS256 JWTs whose claims name the author and their roles."""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Any

import jwt

from resolvers.errors import Unauthenticated
from storage.errors import InvalidInput
from storage.model import AUTHOR_MAX, check_identifier, clean_author_name

ALGORITHM = "HS256"
MODERATOR = "moderator"
MERCHANT = "merchant"
# A token lists at most this many purchased products; more is refused, not truncated.
PURCHASES_MAX = 1_000
DEFAULT_MAX_LIFETIME = 7 * 24 * 3600


@dataclass(frozen=True, slots=True)
class TokenRules:
    """What a bearer token must satisfy: signed (HS256) with ``secret``; the ``issuer`` and
    ``audience`` when set; and, when ``max_lifetime`` is set, an ``iat`` at most that many
    seconds before its ``exp``."""

    secret: str = field(repr=False)
    issuer: str | None = None
    audience: str | None = None
    max_lifetime: int | None = DEFAULT_MAX_LIFETIME


@dataclass(frozen=True, slots=True)
class Viewer:
    """Who is calling: ``sub`` is the author id, ``name`` the display name."""

    author_id: str
    name: str | None  # display name from the token, None when it has none
    roles: frozenset[str]
    # Products the token says this viewer bought (its ``purchases`` claim).
    purchases: frozenset[str] = frozenset()

    @property
    def is_moderator(self) -> bool:
        return MODERATOR in self.roles

    @property
    def is_merchant(self) -> bool:
        return MERCHANT in self.roles

    def bought(self, product_id: str) -> bool:
        """Whether a comment of this viewer on the product is a verified purchase."""
        return product_id in self.purchases


def authenticate(authorization: str | None, rules: TokenRules) -> Viewer:
    """The viewer named by an ``Authorization: Bearer <jwt>`` header, or Unauthenticated."""
    if not authorization:
        raise Unauthenticated("this operation needs an Authorization: Bearer <token> header")
    scheme, _, token = authorization.partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        raise Unauthenticated("the Authorization header must be: Bearer <token>")
    required = ["sub", "exp"]
    required += ["iat"] if rules.max_lifetime else []
    required += ["iss"] if rules.issuer is not None else []
    required += ["aud"] if rules.audience is not None else []
    try:
        claims = jwt.decode(
            token.strip(),
            rules.secret,
            algorithms=[ALGORITHM],
            issuer=rules.issuer,
            audience=rules.audience,
            # PyJWT converts the time claims with int(), which takes "1700000000" and True
            # and overflows on Infinity: _check_times reads them as JSON numbers only.
            options={
                "require": required,
                "verify_exp": False,
                "verify_iat": False,
                "verify_nbf": False,
            },
        )
    except jwt.MissingRequiredClaimError as exc:
        raise Unauthenticated(f"the token has no {exc.claim} claim") from exc
    except jwt.InvalidIssuerError as exc:
        raise Unauthenticated("the token's issuer (iss) is not the one this API accepts") from exc
    except jwt.InvalidAudienceError as exc:
        raise Unauthenticated("the token's audience (aud) is not this API") from exc
    except jwt.InvalidTokenError as exc:
        raise Unauthenticated("the token is not valid") from exc
    _check_times(claims, rules.max_lifetime, time.time())
    sub, name, roles = claims.get("sub"), claims.get("name"), claims.get("roles", [])
    # Claims end up in storage keys, moderation records, replies and logs: each must be
    # text those can carry, with nothing invisible or unencodable in it.
    try:
        sub = check_identifier("sub", sub, AUTHOR_MAX)
    except InvalidInput as exc:
        raise Unauthenticated(f"the token's sub claim must name the author: {exc}") from exc
    if name is not None:
        try:
            name = clean_author_name(name)
        except InvalidInput as exc:
            raise Unauthenticated(f"the token's name claim is not a display name: {exc}") from exc
    if not isinstance(roles, list) or not all(_is_identifier(r) for r in roles):
        raise Unauthenticated("the token's roles claim must be a list of role names")
    purchases = claims.get("purchases", [])
    if (
        not isinstance(purchases, list)
        or len(purchases) > PURCHASES_MAX
        or not all(_is_identifier(p) for p in purchases)
    ):
        raise Unauthenticated(
            f"the token's purchases claim must be a list of at most {PURCHASES_MAX} product ids"
        )
    return Viewer(sub, name, frozenset(roles), frozenset(purchases))


def _is_identifier(value: object) -> bool:
    try:
        check_identifier("claim", value, AUTHOR_MAX)
    except InvalidInput:
        return False
    return True


def _check_times(claims: dict[str, Any], max_lifetime: int | None, now: float) -> None:
    times = {}
    for name in ("exp", "iat", "nbf"):
        if name not in claims:
            continue
        value = claims[name]
        # A JSON number (RFC 7519 NumericDate); bool is an int to Python, not to JSON.
        if (
            isinstance(value, bool)
            or not isinstance(value, int | float)
            or not math.isfinite(value)
        ):
            raise Unauthenticated(f"the token's {name} claim must be a number (seconds since 1970)")
        times[name] = value
    if times["exp"] <= now:
        raise Unauthenticated("the token has expired")
    if times.get("nbf", now) > now:
        raise Unauthenticated("the token is not valid yet (nbf)")
    if times.get("iat", now) > now:
        raise Unauthenticated("the token was issued in the future (iat)")
    # With iat in the past, exp - now <= exp - iat: this caps both.
    if max_lifetime and times["exp"] - times["iat"] > max_lifetime:
        raise Unauthenticated(
            f"the token's lifetime (exp - iat) is longer than {max_lifetime} seconds"
        )


def mint(
    secret: str,
    sub: str,
    *,
    name: str | None = None,
    roles: list[str] | None = None,
    purchases: list[str] | None = None,
    ttl_seconds: int = 24 * 3600,
    issuer: str | None = None,
    audience: str | None = None,
) -> str:
    """A signed token for development and tests, with the issuer and audience when given."""
    now = int(time.time())
    claims: dict[str, object] = {"sub": sub, "iat": now, "exp": now + ttl_seconds}
    if issuer is not None:
        claims["iss"] = issuer
    if audience is not None:
        claims["aud"] = audience
    if name is not None:
        claims["name"] = name
    if roles:
        claims["roles"] = roles
    if purchases:
        claims["purchases"] = purchases
    return jwt.encode(claims, secret, algorithm=ALGORITHM)
