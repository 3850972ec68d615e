"""A small graphql-transport-ws client (the protocol the `graphql-ws` library speaks), for
the tests and the live-update benchmark: connect, initialise with a token, subscribe,
receive each operation's messages apart."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import orjson
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed

PROTOCOL = "graphql-transport-ws"


class Closed(Exception):
    """The server closed the connection; ``code`` and ``reason`` are its close frame's."""

    def __init__(self, code: int | None, reason: str) -> None:
        super().__init__(f"closed {code}: {reason}")
        self.code = code
        self.reason = reason


@dataclass(slots=True)
class Subscriber:
    """One connection; messages are kept per operation id, in arrival order, each with
    the loop time it arrived at."""

    socket: ClientConnection
    _queues: dict[str, asyncio.Queue[tuple[float, dict[str, Any]]]] = field(default_factory=dict)
    _closed: Closed | None = None
    _reader: asyncio.Task[None] | None = None
    acknowledged: dict[str, Any] | None = None
    # Messages that came in binary frames: the protocol sends text only (graphql-ws refuses
    # binary ones), so a test expects none.
    binary_frames: int = 0

    def _queue(self, op_id: str) -> asyncio.Queue[tuple[float, dict[str, Any]]]:
        return self._queues.setdefault(op_id, asyncio.Queue())

    async def _read(self) -> None:
        loop = asyncio.get_running_loop()
        try:
            async for raw in self.socket:
                if isinstance(raw, bytes):
                    self.binary_frames += 1
                message = orjson.loads(raw)
                if message.get("type") == "ping":
                    await self.socket.send(orjson.dumps({"type": "pong"}).decode())
                    continue
                self._queue(str(message.get("id"))).put_nowait((loop.time(), message))
        except ConnectionClosed:
            pass
        frame = self.socket.close_code, self.socket.close_reason or ""
        self._closed = Closed(*frame)
        for queue in self._queues.values():
            queue.put_nowait((loop.time(), {"type": "closed"}))

    async def send(self, message: dict[str, Any]) -> None:
        await self.socket.send(orjson.dumps(message).decode())

    async def subscribe(
        self, op_id: str, query: str, variables: dict[str, Any] | None = None
    ) -> None:
        self._queue(op_id)
        payload: dict[str, Any] = {"query": query}
        if variables is not None:
            payload["variables"] = variables
        await self.send({"id": op_id, "type": "subscribe", "payload": payload})

    async def complete(self, op_id: str) -> None:
        await self.send({"id": op_id, "type": "complete"})

    async def next(self, op_id: str, seconds: float = 20.0) -> dict[str, Any]:
        """The operation's next message (next, error or complete); Closed if the
        connection closed first, TimeoutError if none came in ``seconds``."""
        return (await self.timed(op_id, seconds))[1]

    async def timed(self, op_id: str, seconds: float = 20.0) -> tuple[float, dict[str, Any]]:
        """Like ``next``, with the loop time the message arrived at."""
        arrived, message = await asyncio.wait_for(self._queue(op_id).get(), seconds)
        if message.get("type") == "closed":
            assert self._closed is not None
            raise self._closed
        return arrived, message

    async def closed(self, seconds: float = 20.0) -> Closed:
        """Wait for the server to close the connection."""
        assert self._reader is not None
        await asyncio.wait_for(asyncio.shield(self._reader), seconds)
        assert self._closed is not None
        return self._closed


@contextlib.asynccontextmanager
async def subscriber(
    url: str,
    *,
    authorization: str | None = None,
    init: bool = True,
    payload: dict[str, Any] | None = None,
    headers: dict[str, str] | None = None,
    source: str | None = None,
) -> AsyncIterator[Subscriber]:
    """A connection to ``url`` (http:// or ws://), initialised with ``authorization`` in
    connection_init's payload (or ``payload`` as given) unless ``init`` is False; ``headers``
    go with the upgrade request; ``source`` is the local address to connect from (another
    loopback address, 127.0.0.2, is another client to a server on 127.0.0.1)."""
    ws_url = "ws" + url.removeprefix("http") if url.startswith("http") else url
    # Passed on to the event loop's create_connection.
    options: dict[str, Any] = {} if source is None else {"local_addr": (source, 0)}
    async with connect(
        ws_url,
        subprotocols=[PROTOCOL],  # type: ignore[list-item]
        max_size=None,
        additional_headers=headers,
        **options,
    ) as socket:
        client = Subscriber(socket)
        if init:
            body = payload if payload is not None else {}
            if authorization is not None:
                body = {**body, "authorization": authorization}
            await client.send({"type": "connection_init", "payload": body})
            ack = orjson.loads(await socket.recv())
            if ack.get("type") != "connection_ack":
                raise RuntimeError(f"expected connection_ack, got {ack}")
            client.acknowledged = ack
        client._reader = asyncio.create_task(client._read())
        try:
            yield client
        finally:
            client._reader.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await client._reader
