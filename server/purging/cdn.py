"""Purges through a CDN's API, for a shop whose CDN keeps the answers itself: no proxy of
its own in front, and no relay between the purges and the CDN.

``PURGE_URLS`` names them beside the proxies' listeners:

- ``fastly://<service id>``: Fastly's bulk purge by surrogate key, ``POST
  /service/<id>/purge`` with the keys in ``Surrogate-Key`` (at most ``FASTLY_MAX_KEYS``, its
  documented limit, a request: 256 keys of at most 130 characters stay under the 69 KB of
  request headers Fastly takes), the token in ``Fastly-Key``; optionally soft
  (``Fastly-Soft-Purge: 1``: marked stale, not dropped). Everything is ``POST
  /service/<id>/purge_all``, which Fastly never does soft.
- ``cloudflare://<zone id>``: ``POST /client/v4/zones/<zone>/purge_cache`` with
  ``{"tags": [...]}`` (at most ``CLOUDFLARE_MAX_TAGS`` a request, every plan), the token as
  a bearer; everything is ``{"purge_everything": true}``. Cloudflare says whether it
  purged in the JSON it answers (``success``): a 200 that says false is a failure.

A refusal for the rate limit (429) or a fault (5xx), like any answer that is not a success,
is a ``PurgeFailed``: the Purger keeps the purge and retries it with backoff, at least as
long as the ``Retry-After`` the API gave. The token goes in a header only: never in the
target's name (logs, the pending-tags metric), its repr, or a failure's text.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from typing import Any

import httpx

from server.purging.targets import PurgeFailed, answer_to

FASTLY_API_URL = "https://api.fastly.com"
CLOUDFLARE_API_URL = "https://api.cloudflare.com"
# Keys one Fastly bulk purge names (Fastly's limit).
FASTLY_MAX_KEYS = 256
# Tags one Cloudflare purge names (Cloudflare's "operations per request", on every plan).
CLOUDFLARE_MAX_TAGS = 100
# The longest tag Cloudflare purges (its documented limit); a longer one, which only an id
# near the id rules' 128 characters makes, is purged as everything: more, never less.
CLOUDFLARE_MAX_TAG_CHARS = 120
# Characters of an API's own error text a failure quotes.
ERROR_TEXT_CHARS = 200

CDN_SCHEMES = ("fastly", "cloudflare")
# A service's or zone's id as the APIs spell them: letters and digits.
_ID = re.compile(r"[A-Za-z0-9]{1,64}")


def cdn_entry(url: str) -> tuple[str, str] | None:
    """The CDN and the id of its service or zone that an entry of ``PURGE_URLS`` names
    (``("fastly", id)``, ``("cloudflare", id)``); None for any other entry (a proxy's purge
    listener). ``ValueError`` when the id is not one."""
    scheme, sep, rest = url.partition("://")
    scheme = scheme.lower()
    if not sep or scheme not in CDN_SCHEMES:
        return None
    ident = rest.removesuffix("/")
    if not _ID.fullmatch(ident):
        what = "service" if scheme == "fastly" else "zone"
        raise ValueError(
            f"PURGE_URLS: {scheme}:// takes the {what} id alone, letters and digits "
            f"({scheme}://<{what} id>)"
        )
    return scheme, ident


def batches(tags: Sequence[str], size: int) -> Iterator[list[str]]:
    """The tags in lists of at most ``size``, in order."""
    for start in range(0, len(tags), size):
        yield list(tags[start : start + size])


def retry_after(answer: httpx.Response) -> float | None:
    """Seconds the answer's ``Retry-After`` asks for (a number, or an HTTP date); None
    when it says nothing usable."""
    value = answer.headers.get("retry-after", "").strip()
    if not value:
        return None
    if value.isdigit():
        return float(value)
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        return None
    return max(0.0, (when - datetime.now(UTC)).total_seconds())


@dataclass(frozen=True)
class FastlyTarget:
    """One Fastly service, purged through Fastly's API."""

    service_id: str
    token: str = field(repr=False)
    api_url: str = FASTLY_API_URL
    soft: bool = False

    @property
    def name(self) -> str:
        return f"fastly://{self.service_id}"

    async def purge(self, client: httpx.AsyncClient, tags: Iterable[str]) -> None:
        headers = {"fastly-soft-purge": "1"} if self.soft else {}
        for keys in batches(sorted(tags), FASTLY_MAX_KEYS):
            await self._send(client, "purge", {**headers, "surrogate-key": " ".join(keys)})

    async def purge_everything(self, client: httpx.AsyncClient) -> None:
        await self._send(client, "purge_all", {})

    async def _send(self, client: httpx.AsyncClient, action: str, headers: dict[str, str]) -> None:
        url = f"{self.api_url.rstrip('/')}/service/{self.service_id}/{action}"
        headers = {**headers, "fastly-key": self.token, "accept": "application/json"}
        answer = await answer_to(self.name, client.post(url, headers=headers))
        if not answer.is_success:
            raise PurgeFailed(
                f"{self.name}: {answer.status_code} {answer.reason_phrase}", retry_after(answer)
            )


@dataclass(frozen=True)
class CloudflareTarget:
    """One Cloudflare zone, purged through Cloudflare's API."""

    zone_id: str
    token: str = field(repr=False)
    api_url: str = CLOUDFLARE_API_URL

    @property
    def name(self) -> str:
        return f"cloudflare://{self.zone_id}"

    async def purge(self, client: httpx.AsyncClient, tags: Iterable[str]) -> None:
        listed = sorted(tags)
        if any(len(tag) > CLOUDFLARE_MAX_TAG_CHARS for tag in listed):
            # Refused by tag, it would be refused again at every retry.
            await self.purge_everything(client)
            return
        for chunk in batches(listed, CLOUDFLARE_MAX_TAGS):
            await self._send(client, {"tags": chunk})

    async def purge_everything(self, client: httpx.AsyncClient) -> None:
        await self._send(client, {"purge_everything": True})

    async def _send(self, client: httpx.AsyncClient, body: dict[str, Any]) -> None:
        url = f"{self.api_url.rstrip('/')}/client/v4/zones/{self.zone_id}/purge_cache"
        headers = {"authorization": f"Bearer {self.token}"}
        answer = await answer_to(self.name, client.post(url, json=body, headers=headers))
        said = f"{answer.status_code} {answer.reason_phrase}"
        if not answer.is_success:
            raise PurgeFailed(f"{self.name}: {said}{self._errors(answer)}", retry_after(answer))
        try:
            success = answer.json().get("success")
        except (ValueError, AttributeError):
            success = None
        if success is not True:
            raise PurgeFailed(f"{self.name}: {said} without success{self._errors(answer)}")

    def _errors(self, answer: httpx.Response) -> str:
        """Cloudflare's own codes and messages of the failure (`errors`), bounded, with the
        token blotted out should an answer ever quote it."""
        try:
            errors = answer.json().get("errors")
        except (ValueError, AttributeError):
            return ""
        if not isinstance(errors, list):
            return ""
        said = "; ".join(
            f"{e.get('code')} {e.get('message')}" for e in errors if isinstance(e, dict)
        )
        if self.token:
            said = said.replace(self.token, "[token]")
        said = said[:ERROR_TEXT_CHARS]
        return f" ({said})" if said else ""
