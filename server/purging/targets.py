"""Where purges go, and how each says them.

A Varnish with the xkey module (deploy/varnish/default.vcl) takes ``PURGE`` on its purge
listener: ``xkey-purge`` names the tags (space-separated), ``xkey-purge-all`` asks for
everything (a ban of every object), for when changes were lost and no list of tags can be
trusted. A request's tags are kept under ``MAX_HEADER_BYTES`` (Varnish refuses request
headers past 8 KB by default); more tags take more requests.
"""

from __future__ import annotations

from collections.abc import Awaitable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from urllib.parse import urlsplit

import httpx

# Bytes of tags one purge request names.
MAX_HEADER_BYTES = 4096


class PurgeFailed(Exception):
    """The cache did not confirm a purge (no answer, or not 200). ``retry_after``: the
    seconds it asked to be left alone for (a rate limit's ``Retry-After``), when it said."""

    def __init__(self, message: str, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.retry_after = retry_after


async def answer_to(name: str, request: Awaitable[httpx.Response]) -> httpx.Response:
    """The cache's answer to a purge request; ``PurgeFailed`` when none came (refused,
    timed out, cut), named for the target ``name`` and never quoting the request."""
    try:
        return await request
    except httpx.HTTPError as exc:
        raise PurgeFailed(f"{name}: {type(exc).__name__}") from exc


def chunks(tags: Sequence[str], max_bytes: int = MAX_HEADER_BYTES) -> Iterator[list[str]]:
    """The tags in lists whose space-separated form fits ``max_bytes`` (a tag longer than
    that alone, which the id rules make impossible, still goes, alone)."""
    chunk: list[str] = []
    size = 0
    for tag in tags:
        extra = len(tag) + (1 if chunk else 0)
        if chunk and size + extra > max_bytes:
            yield chunk
            chunk, size = [], 0
            extra = len(tag)
        chunk.append(tag)
        size += extra
    if chunk:
        yield chunk


@dataclass(frozen=True)
class VarnishTarget:
    """A Varnish's purge listener, e.g. ``http://varnish:6091/``."""

    url: str

    @property
    def name(self) -> str:
        """The target as logs and metrics show it: scheme, host and port only."""
        parts = urlsplit(self.url)
        return f"{parts.scheme}://{parts.netloc}"

    async def purge(self, client: httpx.AsyncClient, tags: Iterable[str]) -> None:
        for chunk in chunks(sorted(tags)):
            await self._send(client, {"xkey-purge": " ".join(chunk)})

    async def purge_everything(self, client: httpx.AsyncClient) -> None:
        await self._send(client, {"xkey-purge-all": "yes"})

    async def _send(self, client: httpx.AsyncClient, headers: dict[str, str]) -> None:
        answer = await answer_to(self.name, client.request("PURGE", self.url, headers=headers))
        if answer.status_code != 200:
            raise PurgeFailed(f"{self.name}: {answer.status_code} {answer.reason_phrase}")
