"""What every group of settings shares: where the values come from, list parsing, and the
rule for URLs the server sends secrets or trusts answers from."""

from __future__ import annotations

import httpx
from pydantic_settings import SettingsConfigDict

# Every variable is the field's name in upper case; unknown variables are ignored.
# hide_input_in_errors: a refused value (a secret among them) never appears in the error.
FROM_ENVIRONMENT = SettingsConfigDict(
    env_prefix="", case_sensitive=False, extra="ignore", hide_input_in_errors=True
)


def split_commas(value: object) -> object:
    """A comma-separated variable as a list (blanks dropped); other values as they are."""
    if isinstance(value, str):
        return [v.strip() for v in value.split(",") if v.strip()]
    return value


# Hosts that may be reached over plain http (as httpx.URL names them).
LOOPBACK_NAMES = frozenset({"localhost", "127.0.0.1", "::1"})


def https_url(variable: str, value: str) -> str:
    """``value``, an https:// URL (http:// only on loopback, for tests and local fakes);
    ``ValueError`` naming ``variable`` otherwise. What goes over it in the clear could be
    read or swapped on the way. The host is the one the URL parser finds
    (``http://127.0.0.1:80@evil.example/`` is evil.example's), and a URL with a user or
    password is refused whole: it would hide the host from anyone reading it, and put a
    secret in the logs."""
    try:
        url = httpx.URL(value)
    except httpx.InvalidURL as exc:
        raise ValueError(f"{variable} is not a URL") from exc
    if url.userinfo:
        raise ValueError(f"{variable} must not carry a user or password")
    if url.scheme != "https" and not (url.scheme == "http" and url.host in LOOPBACK_NAMES):
        raise ValueError(f"{variable} must be an https:// URL (http:// only on loopback)")
    return value
