"""The login provider's key set (``JWT_JWKS_URL``), fetched and kept fresh for token checks.

Token checks are synchronous (``Context.viewer``): they read the set held in memory
(``KeyStore.key_set``). The lifespan fetches it at start-up and refreshes it in the
background once it is ``cache_seconds`` old; a request whose token names a key the set
lacks may await one refresh first (``KeyStore.ensure``). Every fetch is bounded: at most
one per ``min_interval`` seconds, whoever asks; ``timeout`` seconds for the whole exchange;
``max_bytes`` of body, counted as it arrives (and never decompressed); ``KEYS_MAX`` keys.
A set that cannot be refreshed keeps serving until it is ``max_age`` old; after that every
token is refused (UNAUTHENTICATED) rather than checked with keys that may have been revoked.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import Callable
from contextlib import suppress
from dataclasses import dataclass
from types import TracebackType
from typing import Self

import httpx

from resolvers.errors import Unauthenticated
from resolvers.keys import DEFAULT_ALGORITHMS, KeySet, parse_key_set, token_kid

log = logging.getLogger("comments.server")


@dataclass(frozen=True, slots=True)
class FetchLimits:
    """How often, how long and how much a key set fetch may take, and how long a set that
    cannot be refreshed is still trusted."""

    cache_seconds: float = 600.0
    min_interval: float = 30.0
    timeout: float = 3.0
    max_bytes: int = 256 * 1024
    max_age: float = 24 * 3600.0


class FetchFailed(Exception):
    """A fetch of the key set did not bring a usable one (the reason is safe to log)."""


class KeyStore:
    """The key set of one JWKS URL, for one process (``resolvers.keys.KeySource``)."""

    def __init__(
        self,
        url: str,
        *,
        algorithms: tuple[str, ...] = DEFAULT_ALGORITHMS,
        limits: FetchLimits = FetchLimits(),
        transport: httpx.AsyncBaseTransport | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.url = url
        self.algorithms = algorithms
        self.limits = limits
        self._transport = transport
        self._clock = clock
        self._keys: KeySet | None = None
        self._attempted: float | None = None
        self._lock = asyncio.Lock()
        self._client: httpx.AsyncClient | None = None
        self._task: asyncio.Task[None] | None = None
        # Fetches started, and the body bytes the last one read (tests and logs read them).
        self.fetches = 0
        self.bytes_read = 0

    @property
    def where(self) -> str:
        """The URL without its query, for logs."""
        return str(httpx.URL(self.url).copy_with(query=None, fragment=None))

    def key_set(self) -> KeySet:
        """The set token checks use; Unauthenticated when none was fetched or the one held is
        older than ``max_age``."""
        keys = self._keys
        if keys is None:
            raise Unauthenticated("the login provider's keys are not available yet; retry")
        if self._clock() - keys.fetched_at > self.limits.max_age:
            raise Unauthenticated("the login provider's keys could not be refreshed; retry later")
        return keys

    async def ensure(self, authorization: str | None) -> None:
        """Before a token is checked: when it names a key the set lacks (or there is no set),
        one refresh, unless one happened within ``min_interval``."""
        if not authorization:
            return
        keys = self._keys
        kid = token_kid(authorization.partition(" ")[2].strip())
        if keys is not None and (kid is None or kid in keys.kids()):
            return
        await self.refresh()

    async def refresh(self) -> bool:
        """Fetch the set, unless a fetch started within ``min_interval``; whether a new set
        was taken. A failure is logged and leaves the set held as it was."""
        async with self._lock:
            now = self._clock()
            if self._attempted is not None and now - self._attempted < self.limits.min_interval:
                return False
            self._attempted = now
            self.fetches += 1
            try:
                document = await self._fetch()
                keys = parse_key_set(document, self.algorithms, self._clock())
            except (FetchFailed, ValueError) as exc:
                log.warning("login provider's keys: fetching %s failed: %s", self.where, exc)
                return False
            if not keys.keys:
                log.warning("login provider's keys: %s has no key this API can use", self.where)
                if self._keys is not None:
                    # Keep checking with the keys held (until their maximum age): a broken
                    # answer must not sign everyone out at once.
                    return False
            self._keys = keys
            return True

    async def _fetch(self) -> object:
        if self._client is None:
            raise FetchFailed("the key store is not open")
        body = bytearray()
        self.bytes_read = 0
        try:
            async with asyncio.timeout(self.limits.timeout):
                request = self._client.stream(
                    "GET", self.url, headers={"accept": "application/json"}
                )
                async with request as response:
                    if response.status_code != 200:
                        raise FetchFailed(f"HTTP {response.status_code}")
                    if response.headers.get("content-encoding", "identity") != "identity":
                        raise FetchFailed("a compressed answer (asked for identity)")
                    # Raw bytes, counted as they come: a larger answer is cut off here.
                    async for chunk in response.aiter_raw():
                        body += chunk
                        self.bytes_read = len(body)
                        if len(body) > self.limits.max_bytes:
                            raise FetchFailed(f"the answer exceeds {self.limits.max_bytes} bytes")
        except TimeoutError:
            raise FetchFailed(f"no answer within {self.limits.timeout:g} s") from None
        except httpx.HTTPError as exc:
            raise FetchFailed(type(exc).__name__) from None
        try:
            return json.loads(body)
        except (ValueError, RecursionError):
            raise FetchFailed("the answer is not JSON (or nests too deep)") from None

    async def _keep_fresh(self) -> None:
        while True:
            keys = self._keys
            due = self.limits.min_interval
            if keys is not None:
                due = max(due, keys.fetched_at + self.limits.cache_seconds - self._clock())
            await asyncio.sleep(due)
            try:
                await self.refresh()
            except Exception:
                # Whatever a provider sends, the refreshing goes on: the set ages out
                # (JWT_JWKS_MAX_AGE) rather than being kept for ever by a dead task.
                log.exception("login provider's keys: refreshing %s failed", self.where)

    async def __aenter__(self) -> Self:
        """Open the client, fetch the set once and keep it fresh in the background."""
        self._client = httpx.AsyncClient(
            transport=self._transport,
            timeout=self.limits.timeout,
            follow_redirects=False,
            headers={"accept-encoding": "identity"},
        )
        await self.refresh()
        self._task = asyncio.create_task(self._keep_fresh())
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Stop refreshing and close the client; safe to call twice."""
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            with suppress(asyncio.CancelledError):
                await task
        client, self._client = self._client, None
        if client is not None:
            await client.aclose()
