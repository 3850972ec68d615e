"""Limits on the request head that must hold before the app sees a request: its size in
bytes, its number of header fields, and the time it may take to arrive.

uvicorn parses the whole head before it calls the app, and with httptools it does so
without any limit: one header of 143 MB cost 23 s of CPU. So the limits live in the
protocol, which sees the bytes as they arrive: subclasses of uvicorn's two HTTP protocols
count the bytes of a head still incomplete and refuse it with 431 as soon as it passes the
cap, without handing the rest to the parser; count header fields (httptools; h11 has the
app's HeaderLimit, its heads being bounded in bytes already); and close a connection whose
head has not arrived within the timeout, including one that never sends a byte.

Refusals made here never reach the application, so they are counted here
(``comments_http_refusals_total``): a head too large (431) or too slow (408), and a
request past uvicorn's concurrency limit (``MAX_CONNECTIONS``), which uvicorn answers with
503 by itself before any hook of ours or the application runs.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from typing import Any, ClassVar, Literal, cast

import h11
from uvicorn.config import Config
from uvicorn.protocols.http.h11_impl import H11Protocol
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol
from uvicorn.server import ServerState

from server.http.guards import COMMON_HEADERS, error_body
from server.observability import metrics as process_metrics

log = logging.getLogger("comments.server")

# uvicorn's protocols decide on the 503 inline, while they parse the head, and its one
# trace is this warning on uvicorn's error logger: a filter there counts it.
CONCURRENCY_WARNING = "Exceeded concurrency limit."


class _ConcurrencyRefusals(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        if record.msg == CONCURRENCY_WARNING:
            process_metrics.http_refused("max_connections")
        return True


# One filter for the process: a logger keeps a filter it is given twice once.
_CONCURRENCY_REFUSALS = _ConcurrencyRefusals()

HttpImplementation = Literal["auto", "h11", "httptools"]


@dataclass(frozen=True, slots=True)
class HeadLimits:
    """What a request head (request line and header fields) may be: MAX_HEADER_BYTES,
    MAX_HEADERS and HEADER_TIMEOUT of the settings (server.settings), which hold the
    defaults."""

    max_bytes: int
    max_headers: int
    timeout: float

    def __post_init__(self) -> None:
        if self.max_bytes < 1024 or self.max_headers < 1 or self.timeout <= 0:
            raise ValueError(f"unusable head limits: {self}")


def _refusal(status: int, reason: str, message: str) -> bytes:
    body = error_body(message)
    lines = [
        f"HTTP/1.1 {status} {reason}",
        "content-type: application/json",
        f"content-length: {len(body)}",
        "connection: close",
        *(f"{name}: {value}" for name, value in COMMON_HEADERS.items()),
    ]
    return ("\r\n".join(lines) + "\r\n\r\n").encode() + body


class _HeadGuard(asyncio.Protocol):
    """The byte cap and the timeout, shared by both protocols. A subclass says when a head
    is pending and whether a response is still being sent."""

    # Given to each subclass by guarded_protocol, from the settings.
    limits: ClassVar[HeadLimits]
    # Set by uvicorn's protocols, which come after this class in the MRO.
    transport: asyncio.Transport
    loop: asyncio.AbstractEventLoop

    def _init_guard(self) -> None:
        self._head_bytes = 0
        self._heads_done = 0
        self._head_timer: asyncio.TimerHandle | None = None

    def _head_pending(self) -> bool:
        raise NotImplementedError

    def _responding(self) -> bool:
        raise NotImplementedError

    def _close_after_response(self) -> None:
        raise NotImplementedError

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        super().connection_made(transport)
        # From the first moment: a connection that never sends a byte holds a socket too.
        self._arm()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        if not self._head_pending():
            # A body, or a message after a head the parser already finished. Bytes of the
            # next head that share a read with the end of this message go uncounted, so a
            # head may pass the cap by at most one read before it is refused.
            super().data_received(data)
            self._check_head()
            return
        if self._head_timer is None:
            self._arm()  # the first bytes of a new head on a kept-alive connection
        room = self.limits.max_bytes - self._head_bytes
        head, rest = data[:room], data[room:]
        self._head_bytes += len(head)
        heads_done = self._heads_done
        if head:
            super().data_received(head)
            self._check_head()
        if not rest or self.transport.is_closing():
            return
        if self._heads_done == heads_done:
            # The cap is reached and this head still goes on: the parser never sees the rest.
            message = f"The request head is larger than {self.limits.max_bytes} bytes."
            self._refuse(431, "Request Header Fields Too Large", message)
            return
        successor = self.transport.get_protocol()
        if successor is not self and isinstance(successor, asyncio.Protocol):
            successor.data_received(rest)  # upgraded (WebSocket) mid-read
        else:
            self.data_received(rest)

    def _check_head(self) -> None:
        if not self._head_pending():
            self._head_done()

    def _head_done(self) -> None:
        self._disarm()
        self._head_bytes = 0
        self._heads_done += 1

    def _arm(self) -> None:
        self._disarm()
        self._head_timer = self.loop.call_later(self.limits.timeout, self._head_timed_out)

    def _disarm(self) -> None:
        if self._head_timer is not None:
            self._head_timer.cancel()
            self._head_timer = None

    def _head_timed_out(self) -> None:
        self._head_timer = None
        if self.transport.is_closing() or not self._head_pending():
            return
        if self._responding():
            # A pipelined head that stalls behind a response still being made: let that
            # response finish, then close instead of waiting for the rest of the head.
            self._close_after_response()
            return
        if self._head_bytes:
            message = f"The request head did not arrive within {self.limits.timeout:g} s."
            self._refuse(408, "Request Timeout", message)
        else:
            self.transport.close()  # nothing asked, nothing to answer

    def _refuse(self, status: int, reason: str, message: str) -> None:
        log.warning("refused a request head from %s: %s", self._peer(), message)
        process_metrics.http_refused("head_timeout" if status == 408 else "head_too_large")
        self._disarm()
        self.transport.write(_refusal(status, reason, message))
        self.transport.close()

    def _peer(self) -> str:
        peer = self.transport.get_extra_info("peername")
        return f"{peer[0]}:{peer[1]}" if isinstance(peer, tuple) else "unknown"


class _TooManyHeaders(Exception):
    pass


class GuardedHttpTools(_HeadGuard, HttpToolsProtocol):
    """uvicorn's httptools protocol with the head limits."""

    def __init__(
        self,
        config: Config,
        server_state: ServerState,
        app_state: dict[str, Any],
        _loop: asyncio.AbstractEventLoop | None = None,
    ) -> None:
        super().__init__(config, server_state, app_state, _loop)
        self._init_guard()
        self._pending = True
        self._header_count = 0

    def _head_pending(self) -> bool:
        return self._pending

    def _responding(self) -> bool:
        return self.cycle is not None and not self.cycle.response_complete

    def _close_after_response(self) -> None:
        self.cycle.keep_alive = False

    def on_message_begin(self) -> None:
        super().on_message_begin()
        self._pending = True
        self._header_count = 0

    def on_header(self, name: bytes, value: bytes) -> None:
        self._header_count += 1
        if self._header_count > self.limits.max_headers:
            # Raising is the one way to stop httptools mid-head; uvicorn answers the parse
            # error through send_400_response, which answers 431 instead (below).
            raise _TooManyHeaders
        super().on_header(name, value)

    def on_headers_complete(self) -> None:
        self._pending = False
        self._head_done()
        super().on_headers_complete()

    def on_message_complete(self) -> None:
        super().on_message_complete()
        self._pending = True

    def send_400_response(self, msg: str) -> None:
        if self._header_count > self.limits.max_headers:
            message = f"The request has more than {self.limits.max_headers} header fields."
            self._refuse(431, "Request Header Fields Too Large", message)
        else:
            super().send_400_response(msg)


class GuardedH11(_HeadGuard, H11Protocol):
    """uvicorn's h11 protocol with the head timeout and a 431 for an oversized head (h11
    itself caps the head at ``h11_max_incomplete_event_size``, answered as a 400)."""

    def __init__(
        self,
        config: Config,
        server_state: ServerState,
        app_state: dict[str, Any],
        _loop: asyncio.AbstractEventLoop | None = None,
    ) -> None:
        super().__init__(config, server_state, app_state, _loop)
        self._init_guard()

    def _head_pending(self) -> bool:
        return self.conn.their_state is h11.IDLE

    def _responding(self) -> bool:
        return self.cycle is not None and not self.cycle.response_complete

    def _close_after_response(self) -> None:
        self.cycle.keep_alive = False


def guarded_protocol(http: HttpImplementation, limits: HeadLimits) -> type[asyncio.Protocol]:
    """The protocol class to pass to uvicorn as ``http``, with these limits; uvicorn's 503s
    past its concurrency limit are counted from then on."""
    logging.getLogger("uvicorn.error").addFilter(_CONCURRENCY_REFUSALS)
    # "auto" is httptools, as in uvicorn: the project depends on uvicorn[standard].
    base: type[_HeadGuard] = GuardedH11 if http == "h11" else GuardedHttpTools
    return cast(type[asyncio.Protocol], type(base.__name__, (base,), {"limits": limits}))
