"""A webhook receiver on loopback for tests and benchmarks: a minimal HTTP/1.1 server on
asyncio that verifies each delivery with the ``standardwebhooks`` library, keeps what it
got, and answers as the test says (a status per delivery, or never: ``hang``)."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from standardwebhooks.webhooks import Webhook, WebhookVerificationError


@dataclass(frozen=True, slots=True)
class Received:
    message_id: str
    body: dict[str, Any]
    at: float
    verified: bool
    headers: dict[str, str]

    @property
    def product(self) -> str | None:
        value = self.body.get("data", {}).get("productId")
        return value if isinstance(value, str) else None

    @property
    def sequence(self) -> int:
        return int(self.body["data"]["sequence"])


# What to answer a delivery: a status, or None to hang (never answer).
Answerer = Callable[["Received"], int | None]


@dataclass(slots=True)
class Receiver:
    """``async with Receiver(secret) as r``: listens on 127.0.0.1 (``r.url``)."""

    secret: str | None = None
    answer: Answerer = lambda received: 200
    got: list[Received] = field(default_factory=list)
    # Every request, answered or not (a hung one included).
    attempts: list[Received] = field(default_factory=list)
    redirect_to: str | None = None
    _server: asyncio.Server | None = None
    _arrived: asyncio.Event = field(default_factory=asyncio.Event)
    _hung: set[asyncio.Future[None]] = field(default_factory=set)

    @property
    def port(self) -> int:
        assert self._server is not None
        return int(self._server.sockets[0].getsockname()[1])

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/hook"

    async def __aenter__(self) -> Receiver:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        return self

    async def __aexit__(self, *exc: object) -> None:
        for hung in self._hung:
            hung.cancel()
        assert self._server is not None
        self._server.close()
        await self._server.wait_closed()

    async def wait_for(self, done: Callable[[list[Received]], bool], seconds: float) -> None:
        """Until ``done(got)``, at most ``seconds`` (TimeoutError then)."""
        async with asyncio.timeout(seconds):
            while not done(self.got):
                self._arrived.clear()
                await self._arrived.wait()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            head = await reader.readuntil(b"\r\n\r\n")
            lines = head.decode("latin-1").split("\r\n")
            headers = {}
            for line in lines[1:]:
                if ":" in line:
                    name, _, value = line.partition(":")
                    headers[name.strip().lower()] = value.strip()
            body = await reader.readexactly(int(headers.get("content-length", "0")))
            verified = False
            if self.secret is not None:
                try:
                    Webhook(self.secret).verify(body, headers)
                    verified = True
                except WebhookVerificationError:
                    verified = False
            received = Received(
                headers.get("webhook-id", ""), json.loads(body), time.time(), verified, headers
            )
            self.attempts.append(received)
            self._arrived.set()
            if self.redirect_to is not None:
                self._write(writer, 307, f"location: {self.redirect_to}\r\n")
                return
            status = self.answer(received)
            if status is None:
                hung: asyncio.Future[None] = asyncio.get_running_loop().create_future()
                self._hung.add(hung)
                await hung
                return
            if 200 <= status < 300:
                self.got.append(received)
                self._arrived.set()
            self._write(writer, status)
        except (asyncio.IncompleteReadError, asyncio.CancelledError, ConnectionError):
            pass
        finally:
            writer.close()

    @staticmethod
    def _write(writer: asyncio.StreamWriter, status: int, extra: str = "") -> None:
        head = f"HTTP/1.1 {status} X\r\ncontent-length: 2\r\nconnection: close\r\n{extra}"
        writer.write(f"{head}\r\nok".encode())
