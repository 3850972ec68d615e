"""The login provider's published keys (a JWKS), held in memory, and the one key a token may
be checked with.

Nothing here fetches: ``server.jwks`` does, and hands this module's ``KeySet`` snapshots to
token checks through the ``KeySource`` protocol, so that checking a token stays synchronous.
A key is chosen so that algorithm confusion cannot happen: only asymmetric algorithms of
the allow-list, the token's ``kid`` naming the key (or a set of one key), and the key's own
type, curve and ``alg`` agreeing with the token's ``alg``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

import jwt

from resolvers.errors import Unauthenticated

# Asymmetric algorithms a key set may serve, and the key type (and curve) each needs.
KEY_TYPES: dict[str, tuple[str, frozenset[str] | None]] = {
    "RS256": ("RSA", None),
    "RS384": ("RSA", None),
    "RS512": ("RSA", None),
    "PS256": ("RSA", None),
    "PS384": ("RSA", None),
    "PS512": ("RSA", None),
    "ES256": ("EC", frozenset({"P-256"})),
    "ES384": ("EC", frozenset({"P-384"})),
    "ES512": ("EC", frozenset({"P-521"})),
    "EdDSA": ("OKP", frozenset({"Ed25519", "Ed448"})),
}
DEFAULT_ALGORITHMS = ("RS256", "ES256", "EdDSA")
# Keys a set may hold; a larger one is refused whole (providers publish two or three).
KEYS_MAX = 32


class UnknownKey(Unauthenticated):
    """The token names a key (``kid``) the set does not hold: a refetch may find it."""


@dataclass(frozen=True, slots=True)
class SigningKey:
    """One public key of the set, as published."""

    kid: str | None
    kty: str
    crv: str | None
    alg: str | None
    use: str | None
    key: Any  # a cryptography public key

    def serves(self, alg: str) -> bool:
        """Whether a token signed with ``alg`` may be checked with this key."""
        kty, curves = KEY_TYPES[alg]
        return (
            self.kty == kty
            and (curves is None or self.crv in curves)
            and self.alg in (None, alg)
            and self.use in (None, "sig")
        )


@dataclass(frozen=True, slots=True)
class KeySet:
    """A fetched key set: its keys and when it was fetched (the source's clock)."""

    keys: tuple[SigningKey, ...]
    fetched_at: float

    def kids(self) -> frozenset[str | None]:
        return frozenset(k.kid for k in self.keys)


class KeySource(Protocol):
    """Where token checks find the current key set: Unauthenticated when there is none
    recent enough to trust."""

    def key_set(self) -> KeySet: ...


def parse_key_set(document: object, algorithms: tuple[str, ...], fetched_at: float) -> KeySet:
    """The signing keys of a JWKS document that serve an algorithm of the allow-list;
    ValueError when it is no key set, or holds more than KEYS_MAX keys. Keys of other
    types, for encryption, or carrying private parts are left out."""
    if not isinstance(document, dict) or not isinstance(document.get("keys"), list):
        raise ValueError("a key set is a JSON object with a keys list")
    published = document["keys"]
    if len(published) > KEYS_MAX:
        raise ValueError(f"the key set holds more than {KEYS_MAX} keys")
    keys = []
    for jwk in published:
        if not isinstance(jwk, dict) or "d" in jwk:
            continue
        operations = jwk.get("key_ops")
        if operations is not None and (
            not isinstance(operations, list) or "verify" not in operations
        ):
            continue  # a key published for other operations than checking signatures
        fields = {name: jwk.get(name) for name in ("kid", "kty", "crv", "alg", "use")}
        if not all(v is None or isinstance(v, str) for v in fields.values()):
            continue
        try:
            parsed = jwt.PyJWK(jwk)
        except (jwt.PyJWKError, jwt.InvalidKeyError, ValueError, TypeError):
            continue
        key = SigningKey(
            kid=fields["kid"],
            kty=str(fields["kty"]),
            crv=fields["crv"],
            alg=fields["alg"],
            use=fields["use"],
            key=parsed.key,
        )
        if any(key.serves(alg) for alg in algorithms):
            keys.append(key)
    return KeySet(tuple(keys), fetched_at)


def choose_key(header: dict[str, Any], keys: KeySet, algorithms: tuple[str, ...]) -> SigningKey:
    """The key a token with this (unverified) header is checked with, or Unauthenticated
    (UnknownKey when it names a key the set lacks)."""
    alg = header.get("alg")
    if not isinstance(alg, str) or alg not in algorithms:
        raise Unauthenticated("the token's algorithm (alg) is not one this API accepts")
    kid = header.get("kid")
    if kid is None:
        # Without kid the key is only unambiguous in a set of one.
        if len(keys.keys) != 1:
            raise Unauthenticated("the token names no key (kid)")
        key = keys.keys[0]
    else:
        if not isinstance(kid, str):
            raise Unauthenticated("the token's kid must be a string")
        found = [k for k in keys.keys if k.kid == kid]
        if not found:
            raise UnknownKey("the token is signed with a key the login provider does not publish")
        # Two keys of one kid (an RSA and an EC key, say): the one of the token's alg.
        key = next((k for k in found if k.serves(alg)), found[0])
    if not key.serves(alg):
        raise Unauthenticated("the token's algorithm (alg) does not match its key")
    return key


def token_kid(token: str) -> str | None:
    """The ``kid`` of a token's header without verifying anything; None when it has none or
    is no JWT."""
    try:
        kid = jwt.get_unverified_header(token).get("kid")
    except jwt.InvalidTokenError:
        return None
    return kid if isinstance(kid, str) else None
