"""Bearer tokens: JWTs whose claims name the author and their roles, signed either with a
shared secret (HS256) or by the login provider, whose published keys check them
(``resolvers.keys``)."""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Any

import jwt

from resolvers.claims import ClaimMap
from resolvers.errors import Unauthenticated
from resolvers.keys import DEFAULT_ALGORITHMS, KEY_TYPES, KeySource, choose_key
from storage.base.errors import InvalidInput
from storage.model.rules import AUTHOR_MAX, check_identifier, clean_author_name

ALGORITHM = "HS256"
MODERATOR = "moderator"
MERCHANT = "merchant"
# A token lists at most this many purchased products; more is refused, not truncated.
PURCHASES_MAX = 1_000
DEFAULT_MAX_LIFETIME = 7 * 24 * 3600
# Seconds a token's iat and nbf may be ahead of this server's clock (a provider's clock runs
# apart from it).
CLOCK_SKEW = 30


@dataclass(frozen=True, slots=True)
class TokenRules:
    """What a bearer token must satisfy: signed either with ``secret`` (HS256) or by a key
    of ``keys`` with an algorithm of ``algorithms``, never both; the ``issuer`` and
    ``audience`` when set (required with ``keys``: a provider signs tokens for other
    applications too); and, when ``max_lifetime`` is set, an ``iat`` at most that many
    seconds before its ``exp``. ``claims`` says where the claims are. While a secret is
    rotated, ``previous_secret`` is the one it replaces: tokens signed with it are still
    accepted (new ones are signed with ``secret`` only)."""

    secret: str | None = field(default=None, repr=False)
    issuer: str | None = None
    audience: str | None = None
    max_lifetime: int | None = DEFAULT_MAX_LIFETIME
    keys: KeySource | None = None
    algorithms: tuple[str, ...] = DEFAULT_ALGORITHMS
    claims: ClaimMap = field(default_factory=ClaimMap)
    previous_secret: str | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        if self.previous_secret is not None and self.secret is None:
            raise ValueError("a previous secret is accepted only beside a current one")
        if (self.secret is None) == (self.keys is None):
            raise ValueError("token rules take a secret or published keys, one of them")
        if self.keys is not None:
            if self.issuer is None or self.audience is None:
                raise ValueError("tokens checked with published keys need an issuer and audience")
            if not self.algorithms or not set(self.algorithms) <= KEY_TYPES.keys():
                raise ValueError(f"published keys serve only {', '.join(KEY_TYPES)}")


@dataclass(frozen=True, slots=True)
class Viewer:
    """Who is calling: ``sub`` is the author id, ``name`` the display name."""

    author_id: str
    name: str | None  # display name from the token, None when it has none
    roles: frozenset[str]
    # Products the token says this viewer bought (its ``purchases`` claim).
    purchases: frozenset[str] = frozenset()
    # Products the viewer reviews in exchange for something (its ``incentivized`` claim,
    # which a sampling campaign's tokens carry).
    incentivized_for: frozenset[str] = frozenset()

    @property
    def is_moderator(self) -> bool:
        return MODERATOR in self.roles

    @property
    def is_merchant(self) -> bool:
        return MERCHANT in self.roles

    def bought(self, product_id: str) -> bool:
        """Whether a comment of this viewer on the product is a verified purchase."""
        return product_id in self.purchases

    def incentivized(self, product_id: str) -> bool:
        """Whether the token forces a comment of this viewer on the product to be
        disclosed as incentivized."""
        return product_id in self.incentivized_for


def authenticate(authorization: str | None, rules: TokenRules) -> Viewer:
    """The viewer named by an ``Authorization: Bearer <jwt>`` header, or Unauthenticated."""
    if not authorization:
        raise Unauthenticated("this operation needs an Authorization: Bearer <token> header")
    scheme, _, token = authorization.partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        raise Unauthenticated("the Authorization header must be: Bearer <token>")
    token = token.strip()
    keys: list[Any] = [rules.secret]
    keys += [rules.previous_secret] if rules.previous_secret is not None else []
    algorithms = [ALGORITHM]
    if rules.keys is not None:
        try:
            header = jwt.get_unverified_header(token)
        except jwt.InvalidTokenError as exc:
            raise Unauthenticated("the token is not valid") from exc
        keys = [choose_key(header, rules.keys.key_set(), rules.algorithms).key]
        algorithms = [header["alg"]]
    try:
        claims = _decode(token, keys, algorithms, rules)
    except jwt.MissingRequiredClaimError as exc:
        raise Unauthenticated(f"the token has no {exc.claim} claim") from exc
    except jwt.InvalidIssuerError as exc:
        raise Unauthenticated("the token's issuer (iss) is not the one this API accepts") from exc
    except jwt.InvalidAudienceError as exc:
        raise Unauthenticated("the token's audience (aud) is not this API") from exc
    except jwt.InvalidTokenError as exc:
        raise Unauthenticated("the token is not valid") from exc
    _check_times(claims, rules.max_lifetime, time.time())
    paths = rules.claims
    sub, name = paths.subject.find(claims), paths.name.find(claims)
    roles = paths.roles.find(claims)
    roles = [] if roles is None else roles
    # Claims end up in storage keys, moderation records, replies and logs: each must be
    # text those can carry, with nothing invisible or unencodable in it.
    if sub is None:
        raise Unauthenticated(f"the token has no {paths.subject.text} claim")
    try:
        sub = check_identifier("sub", sub, AUTHOR_MAX)
    except InvalidInput as exc:
        raise Unauthenticated(f"the token's subject claim must name the author: {exc}") from exc
    if name is not None:
        try:
            name = clean_author_name(name)
        except InvalidInput as exc:
            raise Unauthenticated(f"the token's name claim is not a display name: {exc}") from exc
    if not isinstance(roles, list) or not all(_is_identifier(r) for r in roles):
        raise Unauthenticated("the token's roles claim must be a list of role names")
    purchases = _products(paths.purchases.find(claims), "purchases")
    incentivized = _products(paths.incentivized.find(claims), "incentivized")
    # The provider's role names become this API's two roles; others mean nothing here.
    ours = {MODERATOR: paths.moderator_role, MERCHANT: paths.merchant_role}
    granted = frozenset(role for role, theirs in ours.items() if theirs in roles)
    return Viewer(sub, name, granted, purchases, incentivized)


def _products(found: object, claim: str) -> frozenset[str]:
    """A claim that lists product ids (none when absent); Unauthenticated otherwise."""
    listed = [] if found is None else found
    if (
        not isinstance(listed, list)
        or len(listed) > PURCHASES_MAX
        or not all(_is_identifier(p) for p in listed)
    ):
        raise Unauthenticated(
            f"the token's {claim} claim must be a list of at most {PURCHASES_MAX} product ids"
        )
    return frozenset(listed)


def _decode(
    token: str, keys: list[Any], algorithms: list[str], rules: TokenRules
) -> dict[str, Any]:
    """The token's claims, checked with the first of ``keys`` whose signature it carries
    (a rotation's previous secret comes second); the error of the last key otherwise."""
    required = ["exp"]
    required += ["iat"] if rules.max_lifetime else []
    required += ["iss"] if rules.issuer is not None else []
    required += ["aud"] if rules.audience is not None else []
    *others, last = keys
    for key in others:
        try:
            return _decode_with(token, key, algorithms, rules, required)
        except jwt.InvalidSignatureError:
            continue  # signed with another of the keys, or with none of them
    return _decode_with(token, last, algorithms, rules, required)


def _decode_with(
    token: str, key: Any, algorithms: list[str], rules: TokenRules, required: list[str]
) -> dict[str, Any]:
    return jwt.decode(
        token,
        key,
        algorithms=algorithms,
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


def _is_identifier(value: object) -> bool:
    try:
        check_identifier("claim", value, AUTHOR_MAX)
    except InvalidInput:
        return False
    return True


def _finite(value: float) -> bool:
    """Whether a number is finite (an integer too large for a float is not a time)."""
    try:
        return math.isfinite(value)
    except OverflowError:
        return False


def _check_times(claims: dict[str, Any], max_lifetime: int | None, now: float) -> None:
    times = {}
    for name in ("exp", "iat", "nbf"):
        if name not in claims:
            continue
        value = claims[name]
        # A JSON number (RFC 7519 NumericDate); bool is an int to Python, not to JSON.
        if isinstance(value, bool) or not isinstance(value, int | float) or not _finite(value):
            raise Unauthenticated(f"the token's {name} claim must be a number (seconds since 1970)")
        times[name] = value
    # A login provider's clock may run a little ahead of this server's: a token it has just
    # issued is taken. Expiry is exact (a connection lives no longer than its token).
    if times["exp"] <= now:
        raise Unauthenticated("the token has expired")
    if times.get("nbf", now) > now + CLOCK_SKEW:
        raise Unauthenticated("the token is not valid yet (nbf)")
    if times.get("iat", now) > now + CLOCK_SKEW:
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
    incentivized: list[str] | None = None,
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
    if incentivized:
        claims["incentivized"] = incentivized
    return jwt.encode(claims, secret, algorithm=ALGORITHM)
