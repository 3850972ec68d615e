"""HTTP caching of GraphQL reads (RFC 9111, RFC 9110): the Cache-Control of an answer anyone
may keep, its validator (a strong ETag, the SHA-256 of the bytes sent) and 304 Not Modified
on a matching If-None-Match.

The view (server.http.app) decides which answers may be kept: anonymous queries over GET without
errors by anyone (public), and queries over GET with a token whose answer did not depend on
it by the caller's own browser (private). This layer gives those, and only those, an ETag.
It sits outside compression, so the tag is taken over the bytes as they are sent and every
content coding of an answer has a tag of its own, as a strong validator must.
"""

from __future__ import annotations

import base64
import hashlib
import re
from dataclasses import dataclass

from starlette.datastructures import Headers, MutableHeaders
from starlette.types import ASGIApp, Message, Receive, Scope, Send

NO_STORE = "no-store"
# An entity-tag, weak or strong (RFC 9110 8.8.3); the opaque part may hold commas, so a list
# is read tag by tag rather than split.
_ENTITY_TAG = re.compile(r'(?:W/)?("[\x21\x23-\x7e\x80-\xff]*")')
# What a 304 keeps of the 200 it stands for: everything but the representation's own
# metadata (RFC 9110 15.4.5), which the client already holds with the body.
_NOT_IN_304 = {b"content-type", b"content-length", b"content-encoding"}


@dataclass(frozen=True)
class CachePolicy:
    """How long anyone may keep a public answer (``max_age`` seconds; 0: nothing is kept)
    and how long past that a cache may serve it while it revalidates."""

    max_age: int
    stale_while_revalidate: int
    # For shared caches purged on change (s-maxage); 0: they keep answers max_age too.
    shared_max_age: int = 0

    @property
    def on(self) -> bool:
        return self.max_age > 0

    def cache_control(self) -> str:
        value = f"public, max-age={self.max_age}"
        if self.shared_max_age > 0:
            value += f", s-maxage={self.shared_max_age}"
        if self.stale_while_revalidate > 0:
            value += f", stale-while-revalidate={self.stale_while_revalidate}"
        return value

    def private_cache_control(self) -> str:
        """For an answer to a token-bearing request that did not depend on the token: the
        caller's own browser may keep it and revalidate it, no shared cache may store it
        (a shared cache never keeps a request with Authorization unless told public)."""
        return f"private, max-age={self.max_age}"


def strong_etag(body: bytes) -> str:
    """A strong entity-tag for exactly these bytes."""
    digest = hashlib.sha256(body).digest()
    return '"' + base64.urlsafe_b64encode(digest).rstrip(b"=").decode() + '"'


def none_match(if_none_match: str, etag: str) -> bool:
    """Whether an If-None-Match field value matches ``etag``: ``*`` matches any current
    answer, and the listed tags compare weakly (RFC 9110 13.1.2: ``W/"x"`` matches ``"x"``)."""
    value = if_none_match.strip()
    if value == "*":
        return True
    wanted = _ENTITY_TAG.fullmatch(etag)
    if wanted is None:
        return False
    return any(tag == wanted.group(1) for tag in _ENTITY_TAG.findall(value))


class Conditional:
    """Gives every 200 answer to a GET that says ``Cache-Control: public`` (or ``private``) a
    strong ETag over
    its body as sent, and answers 304 Not Modified, with the same ETag, caching headers and
    Vary but no body, when the request's If-None-Match matches it. The public answers are
    whole GraphQL results, sent in one piece; anything else passes through untouched."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] != "GET":
            await self.app(scope, receive, send)
            return
        # Several If-None-Match fields are one list (RFC 9110 5.3).
        conditions = Headers(scope=scope).getlist("if-none-match")
        if_none_match = ", ".join(conditions) if conditions else None
        start: Message | None = None
        chunks: list[bytes] = []

        async def validated(message: Message) -> None:
            nonlocal start
            if message["type"] == "http.response.start":
                if message["status"] == 200 and _kept(message):
                    start = message  # held until the whole body is here to be hashed
                    return
            elif start is not None and message["type"] == "http.response.body":
                chunks.append(message.get("body", b""))
                if message.get("more_body", False):
                    return
                body = b"".join(chunks)
                etag = strong_etag(body)
                MutableHeaders(scope=start)["etag"] = etag
                if if_none_match is not None and none_match(if_none_match, etag):
                    await send(_not_modified(start))
                    await send({"type": "http.response.body", "body": b""})
                    return
                await send(start)
                await send({"type": "http.response.body", "body": body})
                return
            await send(message)

        await self.app(scope, receive, validated)


def _kept(start: Message) -> bool:
    """Whether the answer may be kept, by anyone (public) or by its caller (private)."""
    cache_control = Headers(raw=start.get("headers", [])).get("cache-control", "")
    directives = {d.strip().lower() for d in cache_control.split(",")}
    return bool({"public", "private"} & directives)


def _not_modified(start: Message) -> Message:
    headers = [(k, v) for k, v in start.get("headers", []) if k.lower() not in _NOT_IN_304]
    return {"type": "http.response.start", "status": 304, "headers": headers}
