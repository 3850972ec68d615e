"""HTTP guards in front of the GraphQL view: a request id on every response, limits on the
header fields and the body (size, and time to arrive), security headers, and GraphQL-shaped
errors for requests refused before GraphQL could read them (CORS preflights included).

Pure ASGI middleware (no response buffering), so streaming passes through untouched. The
limits that must hold before a request reaches the app at all (the head's size and time to
arrive) are in server.http.head_limits.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import re
import uuid

import orjson
from starlette.datastructures import Headers, MutableHeaders
from starlette.middleware.cors import CORSMiddleware
from starlette.responses import Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

# Sent on every response: no MIME sniffing, no referrer leaks, and never kept by caches
# unless the response says otherwise (the view makes anonymous GET queries public, see
# server.http.caching).
COMMON_HEADERS = {
    "x-content-type-options": "nosniff",
    "referrer-policy": "no-referrer",
    "cache-control": "no-store",
}
# Sent on HTML (the GraphiQL page) as well: no framing, nothing loaded from elsewhere than
# this server (server.http.graphiql serves the pinned IDE assets).
HTML_HEADERS = {
    "x-frame-options": "DENY",
    "cross-origin-opener-policy": "same-origin",
    "permissions-policy": "camera=(), microphone=(), geolocation=()",
}
_INLINE_SCRIPT = re.compile(r"<script>(.*?)</script>", re.DOTALL)
_INLINE_STYLE = re.compile(r"<style>(.*?)</style>", re.DOTALL)


def content_security_policy(html: str) -> str:
    """A CSP for one HTML page: everything from this origin, its inline scripts and styles
    allowed by hash, nothing inline otherwise, no other host."""

    def hashes(pattern: re.Pattern[str]) -> str:
        return "".join(
            " 'sha256-" + base64.b64encode(hashlib.sha256(body.encode()).digest()).decode() + "'"
            for body in pattern.findall(html)
        )

    return "; ".join(
        [
            "default-src 'none'",
            f"script-src 'self'{hashes(_INLINE_SCRIPT)}",
            f"style-src 'self'{hashes(_INLINE_STYLE)}",
            # GraphiQL's stylesheet carries its fonts and icons as data: URLs.
            "font-src 'self' data:",
            "img-src 'self' data:",
            "connect-src 'self'",
            "base-uri 'none'",
            "form-action 'self'",
            "frame-ancestors 'none'",
        ]
    )


def error_body(message: str, code: str = "BAD_USER_INPUT") -> bytes:
    """A GraphQL response carrying one error with its contract code."""
    return orjson.dumps(
        {"data": None, "errors": [{"message": message, "extensions": {"code": code}}]}
    )


async def send_error(send: Send, status: int, message: str, *, close: bool = False) -> None:
    """A GraphQL-shaped refusal; ``close`` ends the connection after it (the server then
    stops reading whatever the client still sends)."""
    body = error_body(message)
    headers = [
        (b"content-type", b"application/json"),
        (b"content-length", str(len(body)).encode()),
        *((k.encode(), v.encode()) for k, v in COMMON_HEADERS.items()),
    ]
    if close:
        headers.append((b"connection", b"close"))
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


class Cors(CORSMiddleware):
    """Starlette's CORS, with a refused preflight shaped as every other refusal (Starlette's
    is plain text): a GraphQL-shaped JSON body with a code, naming what was refused. Browsers
    do not show it to the page, but developers read it in the network panel."""

    def preflight_response(self, request_headers: Headers) -> Response:
        response = super().preflight_response(request_headers)
        if response.status_code != 400:
            return response
        refused = []
        if not self.is_allowed_origin(origin=request_headers["origin"]):
            refused.append("the origin is not allowed")
        method = request_headers["access-control-request-method"]
        if method not in self.allow_methods:
            refused.append(f"method {method[:32]} is not allowed")
        requested = request_headers.get("access-control-request-headers") or ""
        if not self.allow_all_headers:
            names = [h.strip().lower() for h in requested.split(",") if h.strip()]
            unknown = [name for name in names if name not in self.allow_headers]
            if unknown:
                listed = ", ".join(unknown)[:200]
                refused.append(
                    f"header {listed} is not allowed"
                    if len(unknown) == 1
                    else f"headers {listed} are not allowed"
                )
        if not refused:  # what Starlette refuses beyond these (private network access)
            what = bytes(response.body).decode().removeprefix("Disallowed CORS ")
            refused.append(f"{what} is not allowed")
        message = f"The CORS preflight was refused: {'; '.join(refused)}."
        headers = {
            name: value
            for name, value in response.headers.items()
            if name not in ("content-type", "content-length")
        }
        return Response(
            error_body(message), status_code=400, headers=headers, media_type="application/json"
        )


class SecurityHeaders:
    """Adds the common headers to every response, and the HTML ones to HTML responses."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = MutableHeaders(scope=message)
                for name, value in COMMON_HEADERS.items():
                    headers.setdefault(name, value)
                if headers.get("content-type", "").startswith("text/html"):
                    for name, value in HTML_HEADERS.items():
                        headers.setdefault(name, value)
            await send(message)

        await self.app(scope, receive, with_headers)


class RequestId:
    """Names every HTTP request (``request.state.request_id``) and sends the name back in
    ``X-Request-Id`` on every response, refusals included, so a client can quote it."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        request_id = uuid.uuid4().hex
        scope.setdefault("state", {})["request_id"] = request_id

        async def with_id(message: Message) -> None:
            if message["type"] == "http.response.start":
                MutableHeaders(scope=message)["x-request-id"] = request_id
            await send(message)

        await self.app(scope, receive, with_id)


class HeaderLimit:
    """Refuses requests with more than ``max_headers`` header fields or a head over
    ``max_bytes`` with 431. server.http.head_limits enforces the byte cap (and, with httptools, the
    count) while the head arrives; this check holds under any server and HTTP implementation
    (h11 counts nothing), and its refusal passes through CORS."""

    def __init__(self, app: ASGIApp, max_headers: int, max_bytes: int) -> None:
        self.app = app
        self.max_headers = max_headers
        self.max_bytes = max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers: list[tuple[bytes, bytes]] = scope.get("headers", [])
        if len(headers) > self.max_headers:
            message = f"The request has more than {self.max_headers} header fields."
            await send_error(send, 431, message, close=True)
            return
        # The head as it came, near enough: request line, and "name: value\r\n" per field.
        size = len(scope.get("raw_path", b"")) + len(scope.get("query_string", b"")) + 32
        size += sum(len(name) + len(value) + 4 for name, value in headers)
        if size > self.max_bytes:
            message = f"The request head is larger than {self.max_bytes} bytes."
            await send_error(send, 431, message, close=True)
            return
        await self.app(scope, receive, send)


class BodyLimit:
    """Guards reading the request body: over ``max_bytes`` is refused with 413, by
    Content-Length up front or by counting a chunked body as it streams in, before any of it
    is parsed; a body that has not fully arrived ``timeout`` seconds after the request
    started is refused with 408 and the connection closed; a client that leaves before its
    body is complete ends the request quietly (nobody is left to answer)."""

    def __init__(self, app: ASGIApp, max_bytes: int, timeout: float | None = None) -> None:
        self.app = app
        self.max_bytes = max_bytes
        self.timeout = timeout

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        message = f"The request body is larger than {self.max_bytes} bytes."
        declared = _content_length(scope)
        if declared is not None and declared > self.max_bytes:
            await send_error(send, 413, message)
            return
        # One deadline for the whole body, not one per read: a client dripping a byte just
        # inside a per-read timeout could otherwise hold the request open indefinitely.
        deadline = None
        if self.timeout is not None:
            deadline = asyncio.get_running_loop().time() + self.timeout
        received = 0
        complete = False
        started = False

        async def guarded_receive() -> Message:
            nonlocal received, complete
            if complete:
                # After the body, receive() only reports a disconnect, for as long as it takes.
                return await receive()
            try:
                async with asyncio.timeout_at(deadline):
                    chunk = await receive()
            except TimeoutError:
                raise _TooSlow from None
            if chunk["type"] == "http.disconnect":
                raise _ClientGone
            if chunk["type"] == "http.request":
                received += len(chunk.get("body", b""))
                if received > self.max_bytes:
                    raise _TooLarge
                complete = not chunk.get("more_body", False)
            return chunk

        async def tracking_send(reply: Message) -> None:
            nonlocal started
            if reply["type"] == "http.response.start":
                started = True
            await send(reply)

        try:
            await self.app(scope, guarded_receive, tracking_send)
        except _TooLarge:
            if not started:
                await send_error(send, 413, message)
        except _TooSlow:
            if not started:
                late = f"The request body did not arrive within {self.timeout:g} s."
                await send_error(send, 408, late, close=True)
        except _ClientGone:
            pass


class _TooLarge(Exception):
    pass


class _TooSlow(Exception):
    pass


class _ClientGone(Exception):
    pass


def _content_length(scope: Scope) -> int | None:
    headers: list[tuple[bytes, bytes]] = scope.get("headers", [])
    for name, value in headers:
        if name == b"content-length":
            try:
                return int(value)
            except ValueError:
                return None
    return None
