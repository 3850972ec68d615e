"""Purging the shared caches in front of the API (server.purging): where purges go (proxies'
purge listeners, CDNs' APIs and their tokens), and how long those caches may keep an answer
once they are purged on change.

Defaults are those of ``server.purging.purger`` and ``server.purging.cdn``, read from there.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Self
from urllib.parse import urlsplit

from pydantic import Field, ValidationInfo, field_validator, model_validator
from pydantic_settings import BaseSettings, NoDecode

from server.purging.cdn import CLOUDFLARE_API_URL, FASTLY_API_URL, cdn_entry
from server.purging.purger import PurgeTuning
from server.secret_file import secret_from_file
from server.settings.common import FROM_ENVIRONMENT, https_url, split_commas

_P = PurgeTuning()
# The CDNs' API tokens, each of which may be kept in a file instead (its NAME_FILE), and the
# CDN whose PURGE_URLS entries need it.
CDN_TOKENS = {"fastly": "fastly_api_token", "cloudflare": "cloudflare_api_token"}


class PurgeSettings(BaseSettings):
    """The caches purged on change, and the s-maxage that purging makes safe."""

    model_config = FROM_ENVIRONMENT

    # The caches purged, comma-separated: the purge listeners of the Varnish caches in front
    # (deploy/varnish/default.vcl), e.g. http://varnish:6091/, and CDNs purged through
    # their APIs, fastly://<service id> and cloudflare://<zone id> (each needs its token
    # below). Set: every change of the table purges the tags of the answers it could alter
    # there, once per change across the processes (the fan-out's reader with FANOUT_URL,
    # else each process's own follower), and public answers say
    # s-maxage=CACHE_SHARED_MAX_AGE to shared caches. Unset: nothing is purged, and shared
    # caches keep answers CACHE_MAX_AGE, as browsers do.
    purge_urls: Annotated[list[str], NoDecode] = Field(default_factory=list)
    # Fastly's API token, needed by a fastly:// entry: one with the purge_select scope
    # (purges by key) and purge_all (everything), limited to the service. Or the file that
    # holds it, read once at start.
    fastly_api_token: str | None = Field(default=None, repr=False)
    fastly_api_token_file: Path | None = None
    # Cloudflare's API token, needed by a cloudflare:// entry: one with the zone's Cache
    # Purge permission. Or the file that holds it, read once at start.
    cloudflare_api_token: str | None = Field(default=None, repr=False)
    cloudflare_api_token_file: Path | None = None
    # Where the APIs are: https, or http on loopback (a local fake, in tests).
    fastly_api_url: str = FASTLY_API_URL
    cloudflare_api_url: str = CLOUDFLARE_API_URL
    # Fastly purges by key mark answers stale instead of dropping them (Fastly-Soft-Purge),
    # so that the next request for one may be served it while Fastly fetches the new one
    # (with stale-while-revalidate). Purges of everything are never soft.
    fastly_soft_purge: bool = False
    # Seconds a purged shared cache may keep a public answer (s-maxage): freshness comes
    # from the purges, so this only bounds how long a purge that never arrived (the cache
    # down for longer than the retries) leaves an answer stale.
    cache_shared_max_age: int = Field(default=86400, ge=1, le=365 * 86400)
    # Seconds after which each purge is sent again, for answers a cache fetched while the
    # change was still reaching every process and index (0: never).
    purge_repeat_seconds: float = Field(default=_P.repeat_seconds, ge=0, le=60)
    # Seconds one purge request may take before it counts as failed (and is retried).
    purge_timeout_seconds: float = Field(default=_P.timeout_seconds, gt=0, le=60)

    # Named apart from the other groups' validators: in Settings one name would hide the other.
    @field_validator("purge_urls", mode="before")
    @classmethod
    def _split_urls(cls, value: object) -> object:
        return split_commas(value)

    @field_validator("purge_urls")
    @classmethod
    def _purge_listeners(cls, value: list[str]) -> list[str]:
        for url in value:
            if cdn_entry(url) is not None:
                continue
            parts = urlsplit(url)
            if parts.scheme not in ("http", "https") or not parts.hostname:
                raise ValueError(
                    "PURGE_URLS must be http(s) URLs of caches' purge listeners, or "
                    "fastly://<service id> and cloudflare://<zone id>, comma-separated, "
                    "e.g. http://varnish:6091/"
                )
        return value

    @field_validator("fastly_api_url", "cloudflare_api_url")
    @classmethod
    def _api_urls(cls, value: str, info: ValidationInfo) -> str:
        # The token goes there: in the clear, anyone on the way could purge.
        return https_url(str(info.field_name).upper(), value)

    @model_validator(mode="after")
    def _purge_tokens(self) -> Self:
        # Read once, here, as the sign-in secrets are (server.settings.tokens).
        for name in CDN_TOKENS.values():
            variable = name.upper()
            path: Path | None = getattr(self, f"{name}_file")
            if path is not None:
                if getattr(self, name) is not None:
                    raise ValueError(f"{variable} and {variable}_FILE: set one of them")
                token = secret_from_file(path, create=False, name=f"{variable}_FILE", min_bytes=1)
                setattr(self, name, token)
            token = getattr(self, name)
            # A header's value: what else could not be sent, or would end the header.
            if token is not None and not all("!" <= c <= "~" for c in token):
                raise ValueError(f"{variable} must be printable ASCII without spaces")
        for url in self.purge_urls:
            entry = cdn_entry(url)
            if entry is not None and getattr(self, CDN_TOKENS[entry[0]]) is None:
                variable = CDN_TOKENS[entry[0]].upper()
                raise ValueError(
                    f"PURGE_URLS names {entry[0]}://{entry[1]}, which needs {variable} "
                    f"(or {variable}_FILE): the API token its purges are sent with"
                )
        return self

    def purge_tuning(self) -> PurgeTuning:
        return PurgeTuning(
            repeat_seconds=self.purge_repeat_seconds,
            timeout_seconds=self.purge_timeout_seconds,
        )
