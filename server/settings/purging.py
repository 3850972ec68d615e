"""Purging the shared caches in front of the API (server.purging): where purges go, and
how long those caches may keep an answer once they are purged on change.

Defaults are those of ``server.purging.purger``, read from there.
"""

from __future__ import annotations

from typing import Annotated
from urllib.parse import urlsplit

from pydantic import Field, field_validator
from pydantic_settings import BaseSettings, NoDecode

from server.purging.purger import PurgeTuning
from server.settings.common import FROM_ENVIRONMENT, split_commas

_P = PurgeTuning()


class PurgeSettings(BaseSettings):
    """The caches purged on change, and the s-maxage that purging makes safe."""

    model_config = FROM_ENVIRONMENT

    # The purge listeners of the Varnish caches in front (deploy/varnish/default.vcl),
    # comma-separated, e.g. http://varnish:6091/. Set: every change of the table purges
    # the tags of the answers it could alter there, once per change across the processes
    # (the fan-out's reader with FANOUT_URL, else each process's own follower), and public
    # answers say s-maxage=CACHE_SHARED_MAX_AGE to shared caches. Unset: nothing is
    # purged, and shared caches keep answers CACHE_MAX_AGE, as browsers do.
    purge_urls: Annotated[list[str], NoDecode] = Field(default_factory=list)
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
            parts = urlsplit(url)
            if parts.scheme not in ("http", "https") or not parts.hostname:
                raise ValueError(
                    "PURGE_URLS must be http(s) URLs of caches' purge listeners, "
                    "comma-separated, e.g. http://varnish:6091/"
                )
        return value

    def purge_tuning(self) -> PurgeTuning:
        return PurgeTuning(
            repeat_seconds=self.purge_repeat_seconds,
            timeout_seconds=self.purge_timeout_seconds,
        )
