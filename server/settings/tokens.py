"""Sign-in: how bearer tokens are signed and checked, what the server and `comments token`
share. Either a secret (``JWT_SECRET``, with ``JWT_PREVIOUS_SECRET`` during a rotation) or
the login provider's published keys (``JWT_JWKS_URL``); the key of the public author ids;
the claims' places and the roles' names. Each secret may be kept in a file instead
(``NAME_FILE``), read once, at start.

Defaults are those of ``resolvers.auth``, ``resolvers.claims``, ``resolvers.keys`` and
``server.jwks``, read from there.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Self

from pydantic import Field, ValidationInfo, field_validator, model_validator
from pydantic_settings import BaseSettings, NoDecode

from resolvers.auth import DEFAULT_MAX_LIFETIME
from resolvers.authors import configured_key
from resolvers.claims import ClaimMap, ClaimPath
from resolvers.keys import DEFAULT_ALGORITHMS, KEY_TYPES
from server.jwks import FetchLimits
from server.secret_file import SECRET_MIN_BYTES, secret_from_file
from server.settings.common import FROM_ENVIRONMENT, https_url, split_commas

_CLAIMS = ClaimMap()
_FETCH = FetchLimits()
# The settings that are secrets: each may be kept in a file instead (its NAME_FILE).
SECRETS = ("jwt_secret", "jwt_previous_secret", "author_id_key")


class TokenSettings(BaseSettings):
    """How bearer tokens are signed and checked: what the server and `comments token` share."""

    model_config = FROM_ENVIRONMENT

    # Unset in embedded mode: generated at start-up, with a dev token printed.
    jwt_secret: str | None = Field(default=None, repr=False)
    # Or where it is kept: read at start; in development made there (random, mode 0600) the
    # first time the file is missing (server.secret_file), never in production.
    jwt_secret_file: Path | None = None
    # While JWT_SECRET is rotated, the secret it replaces: tokens signed with it are still
    # accepted, new ones are signed with JWT_SECRET only (see docs/deployment.md).
    jwt_previous_secret: str | None = Field(default=None, repr=False)
    jwt_previous_secret_file: Path | None = None
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
    jwt_claim_incentivized: str = _CLAIMS.incentivized.text
    jwt_role_moderator: str = Field(default=_CLAIMS.moderator_role, min_length=1)
    jwt_role_merchant: str = Field(default=_CLAIMS.merchant_role, min_length=1)
    # Key of the public author ids (Comment.authorId); unset: derived from JWT_SECRET, so
    # set it to keep the ids when rotating that secret (`comments author-id-key` prints the
    # one in use). Required with JWT_JWKS_URL, JWT_PREVIOUS_SECRET and PRODUCTION.
    author_id_key: str | None = Field(default=None, repr=False)
    author_id_key_file: Path | None = None

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
        "jwt_claim_subject",
        "jwt_claim_name",
        "jwt_claim_roles",
        "jwt_claim_purchases",
        "jwt_claim_incentivized",
    )
    @classmethod
    def _claim_path(cls, value: str) -> str:
        ClaimPath(value)
        return value

    @field_validator("jwt_jwks_url")
    @classmethod
    def _jwks_url(cls, value: str | None) -> str | None:
        # Keys fetched in the clear could be swapped on the way: HTTPS, but for loopback.
        return None if value is None else https_url("JWT_JWKS_URL", value)

    @property
    def claim_map(self) -> ClaimMap:
        return ClaimMap(
            subject=ClaimPath(self.jwt_claim_subject),
            name=ClaimPath(self.jwt_claim_name),
            roles=ClaimPath(self.jwt_claim_roles),
            purchases=ClaimPath(self.jwt_claim_purchases),
            incentivized=ClaimPath(self.jwt_claim_incentivized),
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

    @field_validator(*SECRETS)
    @classmethod
    def _long_enough(cls, value: str | None, info: ValidationInfo) -> str | None:
        # RFC 7518: an HS256 key should have at least 256 bits; the ids' key as much.
        variable = str(info.field_name).upper()
        if value is not None and len(value.encode()) < SECRET_MIN_BYTES:
            raise ValueError(f"{variable} must be at least {SECRET_MIN_BYTES} bytes")
        if value is not None and info.field_name == "author_id_key":
            _check_author_id_key(variable, value)
        return value

    @model_validator(mode="after")
    def _jwks_needs(self) -> Self:
        if self.jwt_jwks_url is None:
            return self
        # Before any file is read (or made): what is given, in the environment or a file.
        given = {name for name in SECRETS if self._given(name)}
        if given & {"jwt_secret", "jwt_previous_secret"}:
            raise ValueError(
                "JWT_JWKS_URL and JWT_SECRET (or JWT_PREVIOUS_SECRET, or their _FILE): "
                "set one of them"
            )
        if not self.jwt_issuer or not self.jwt_audience:
            raise ValueError(
                "JWT_JWKS_URL needs JWT_ISSUER and JWT_AUDIENCE: the provider signs tokens "
                "for other applications too"
            )
        if "author_id_key" not in given:
            raise ValueError(
                "JWT_JWKS_URL needs AUTHOR_ID_KEY (the public author ids' key; see "
                "docs/sign-in.md to keep the ids a JWT_SECRET gave)"
            )
        return self

    def _given(self, name: str) -> bool:
        return getattr(self, name) is not None or getattr(self, f"{name}_file") is not None

    @model_validator(mode="after")
    def _secrets_from_files(self) -> Self:
        # Read once, here: the settings hold the secrets from then on (worker processes get
        # them from the parent), and a file that cannot serve stops the start.
        for name in SECRETS:
            path: Path | None = getattr(self, f"{name}_file")
            if path is None:
                continue
            variable = name.upper()
            if getattr(self, name) is not None:
                # Which one would win is a guess nobody should have to make.
                raise ValueError(f"{variable} and {variable}_FILE: set one of them")
            create = name == "jwt_secret" and self._makes_secret_files()
            value = secret_from_file(path, create=create, name=f"{variable}_FILE")
            if name == "author_id_key":
                _check_author_id_key(f"{variable}_FILE: {path}", value)
            setattr(self, name, value)
        if self.jwt_previous_secret is not None and self.jwt_secret is None:
            raise ValueError(
                "JWT_PREVIOUS_SECRET needs JWT_SECRET (or JWT_SECRET_FILE): the secret new "
                "tokens are signed with"
            )
        if self.jwt_previous_secret is not None and self.author_id_key is None:
            raise ValueError(
                "JWT_PREVIOUS_SECRET needs AUTHOR_ID_KEY: without it the public author ids "
                "follow JWT_SECRET and change with it (before the rotation, `comments "
                "author-id-key` prints the key that keeps them; see docs/deployment.md)"
            )
        return self

    def _makes_secret_files(self) -> bool:
        """Whether a missing JWT_SECRET_FILE is made: never for `comments token` and the
        other commands, only by the server in development (``Settings`` says)."""
        return False


def _check_author_id_key(where: str, value: str) -> None:
    try:
        configured_key(value)
    except ValueError as exc:
        raise ValueError(f"{where}: {exc}") from None
