"""Sign-in: how bearer tokens are signed and checked, what the server and `comments token`
share. Either a secret (``JWT_SECRET``, or one kept in ``JWT_SECRET_FILE``) or the login
provider's published keys (``JWT_JWKS_URL``); the claims' places and the roles' names.

Defaults are those of ``resolvers.auth``, ``resolvers.claims``, ``resolvers.keys`` and
``server.jwks``, read from there.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Self

import httpx
from pydantic import Field, field_validator, model_validator
from pydantic_settings import BaseSettings, NoDecode

from resolvers.auth import DEFAULT_MAX_LIFETIME
from resolvers.claims import ClaimMap, ClaimPath
from resolvers.keys import DEFAULT_ALGORITHMS, KEY_TYPES
from server.jwks import FetchLimits
from server.secret_file import SECRET_MIN_BYTES, secret_from_file
from server.settings.common import FROM_ENVIRONMENT, split_commas

_CLAIMS = ClaimMap()
_FETCH = FetchLimits()
# Hosts of a JWT_JWKS_URL that may be fetched over plain http (as httpx.URL names them).
_LOOPBACK_NAMES = frozenset({"localhost", "127.0.0.1", "::1"})


class TokenSettings(BaseSettings):
    """How bearer tokens are signed and checked: what the server and `comments token` share."""

    model_config = FROM_ENVIRONMENT

    # Unset in embedded mode: generated at start-up, with a dev token printed.
    jwt_secret: str | None = None
    # Where the secret is kept when JWT_SECRET is unset: made there (random, mode 0600) the
    # first time the file is missing, read from it after (server.secret_file).
    jwt_secret_file: Path | None = None
    # When set, tokens must carry exactly this iss / aud.
    jwt_issuer: str | None = None
    jwt_audience: str | None = None
    # Seconds a token may live (exp - iat); tokens must then carry iat. 0: no cap.
    jwt_max_lifetime: int = Field(default=DEFAULT_MAX_LIFETIME, ge=0)
    # The login provider's published keys (JWKS): tokens are checked with those instead of
    # JWT_SECRET (one or the other), with the algorithms of JWT_ALGORITHMS only; JWT_ISSUER,
    # JWT_AUDIENCE and AUTHOR_ID_KEY are then required.
    jwt_jwks_url: str | None = None
    jwt_algorithms: Annotated[list[str], NoDecode] = Field(
        default_factory=lambda: list(DEFAULT_ALGORITHMS)
    )
    # Seconds the key set is used before a refresh in the background; at most one fetch per
    # JWT_JWKS_MIN_INTERVAL seconds (a token naming an unknown key asks for one); seconds
    # and bytes one fetch may take; and the age past which a set that cannot be refreshed
    # is no longer trusted (every token is refused until a fetch succeeds).
    jwt_jwks_cache_seconds: float = Field(default=_FETCH.cache_seconds, ge=1, le=86400)
    jwt_jwks_min_interval: float = Field(default=_FETCH.min_interval, ge=1, le=3600)
    jwt_jwks_timeout: float = Field(default=_FETCH.timeout, gt=0, le=30)
    jwt_jwks_max_bytes: int = Field(default=_FETCH.max_bytes, ge=1024, le=4 * 1024 * 1024)
    jwt_jwks_max_age: float = Field(default=_FETCH.max_age, ge=60, le=7 * 86400)
    # Where the claims are (a dotted path, or a JSON pointer starting with /; resolvers.claims)
    # and the provider's names of the moderator and merchant roles.
    jwt_claim_subject: str = _CLAIMS.subject.text
    jwt_claim_name: str = _CLAIMS.name.text
    jwt_claim_roles: str = _CLAIMS.roles.text
    jwt_claim_purchases: str = _CLAIMS.purchases.text
    jwt_role_moderator: str = Field(default=_CLAIMS.moderator_role, min_length=1)
    jwt_role_merchant: str = Field(default=_CLAIMS.merchant_role, min_length=1)
    # Key of the public author ids (Comment.authorId); unset: derived from JWT_SECRET, so
    # set it to keep the ids when rotating that secret. Required with JWT_JWKS_URL.
    author_id_key: str | None = None

    @field_validator("jwt_algorithms", mode="before")
    @classmethod
    def _split_algorithms(cls, value: object) -> object:
        return split_commas(value)

    @field_validator("jwt_algorithms")
    @classmethod
    def _asymmetric(cls, value: list[str]) -> list[str]:
        if not value or not set(value) <= KEY_TYPES.keys():
            raise ValueError(f"JWT_ALGORITHMS must be some of {', '.join(KEY_TYPES)}")
        return value

    @field_validator(
        "jwt_claim_subject", "jwt_claim_name", "jwt_claim_roles", "jwt_claim_purchases"
    )
    @classmethod
    def _claim_path(cls, value: str) -> str:
        ClaimPath(value)
        return value

    @field_validator("jwt_jwks_url")
    @classmethod
    def _jwks_url(cls, value: str | None) -> str | None:
        if value is None:
            return None
        # Keys fetched in the clear could be swapped on the way: HTTPS, but for loopback. The
        # host is the one the URL parser finds (``http://127.0.0.1:80@evil.example/`` is
        # evil.example's), and a URL with a user or password is refused whole (it would
        # hide the host from anyone reading it, and put a secret in the logs).
        try:
            url = httpx.URL(value)
        except httpx.InvalidURL as exc:
            raise ValueError("JWT_JWKS_URL is not a URL") from exc
        if url.userinfo:
            raise ValueError("JWT_JWKS_URL must not carry a user or password")
        if url.scheme != "https" and not (url.scheme == "http" and url.host in _LOOPBACK_NAMES):
            raise ValueError("JWT_JWKS_URL must be an https:// URL (http:// only on loopback)")
        return value

    @model_validator(mode="after")
    def _jwks_needs(self) -> Self:
        if self.jwt_jwks_url is None:
            return self
        if self.jwt_secret is not None or self.jwt_secret_file is not None:
            raise ValueError("JWT_JWKS_URL and JWT_SECRET (or JWT_SECRET_FILE): set one of them")
        if not self.jwt_issuer or not self.jwt_audience:
            raise ValueError(
                "JWT_JWKS_URL needs JWT_ISSUER and JWT_AUDIENCE: the provider signs tokens "
                "for other applications too"
            )
        if self.author_id_key is None or len(self.author_id_key.encode()) < SECRET_MIN_BYTES:
            raise ValueError(
                f"JWT_JWKS_URL needs AUTHOR_ID_KEY of at least {SECRET_MIN_BYTES} bytes (the "
                "public author ids' key; see the README to keep the ids a JWT_SECRET gave)"
            )
        return self

    @property
    def claim_map(self) -> ClaimMap:
        return ClaimMap(
            subject=ClaimPath(self.jwt_claim_subject),
            name=ClaimPath(self.jwt_claim_name),
            roles=ClaimPath(self.jwt_claim_roles),
            purchases=ClaimPath(self.jwt_claim_purchases),
            moderator_role=self.jwt_role_moderator,
            merchant_role=self.jwt_role_merchant,
        )

    @property
    def fetch_limits(self) -> FetchLimits:
        return FetchLimits(
            cache_seconds=self.jwt_jwks_cache_seconds,
            min_interval=self.jwt_jwks_min_interval,
            timeout=self.jwt_jwks_timeout,
            max_bytes=self.jwt_jwks_max_bytes,
            max_age=self.jwt_jwks_max_age,
        )

    @field_validator("jwt_secret")
    @classmethod
    def _long_enough(cls, value: str | None) -> str | None:
        # RFC 7518: an HS256 key should have at least 256 bits.
        if value is not None and len(value.encode()) < SECRET_MIN_BYTES:
            raise ValueError("JWT_SECRET must be at least 32 bytes")
        return value

    @model_validator(mode="after")
    def _secret_from_file(self) -> Self:
        if self.jwt_secret is None and self.jwt_secret_file is not None:
            self.jwt_secret = secret_from_file(self.jwt_secret_file)
        return self
