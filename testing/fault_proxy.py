"""A small fault-injecting HTTP proxy between the server and DynamoDB (Local).

It forwards each HTTP/1.1 request of a keep-alive connection to the engine and relays the
answer, unless a configured fault applies: then it answers for the engine (throttling, a
500), answers late, drops the connection before forwarding, or forwards and drops the
connection before the answer (the write happened; the caller cannot know). Faults may be
limited to requests whose body contains some bytes (one partition key of a fan-out) and
to a probability, drawn from a seeded generator so runs repeat.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
from collections import Counter
from dataclasses import dataclass, field
from typing import Literal

import orjson

FaultKind = Literal["throttle", "error500", "slow", "drop", "reset"]
ERROR_TYPES = {
    "throttle": (400, "ProvisionedThroughputExceededException"),
    "error500": (500, "InternalServerError"),
}


@dataclass(frozen=True, slots=True)
class Fault:
    kind: FaultKind
    probability: float = 1.0
    match: bytes | None = None  # only requests whose body contains these bytes
    delay: float = 0.0  # for "slow"


@dataclass
class FaultProxy:
    """Listen on a free loopback port and forward to ``upstream_port``."""

    upstream_port: int
    faults: list[Fault] = field(default_factory=list)
    seed: int = 0
    injected: Counter[str] = field(default_factory=Counter)
    forwarded: int = 0
    port: int = 0
    _server: asyncio.Server | None = None
    # asyncio keeps only weak references to connection tasks: hold them, and end them on stop.
    _tasks: set[asyncio.Task[None]] = field(default_factory=set)
    _random: random.Random = field(default_factory=random.Random)

    @property
    def endpoint_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    async def start(self) -> FaultProxy:
        self._random.seed(self.seed)
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    async def stop(self) -> None:
        if self._server is not None:
            self._server.close()
            self._server = None
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)

    def _track(self) -> None:
        task = asyncio.current_task()
        if task is not None:
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)

    def _pick(self, body: bytes) -> Fault | None:
        for fault in self.faults:
            if fault.match is not None and fault.match not in body:
                continue
            if self._random.random() < fault.probability:
                return fault
        return None

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._track()
        upstream: tuple[asyncio.StreamReader, asyncio.StreamWriter] | None = None
        try:
            while True:
                request = await _read_message(reader)
                if request is None:
                    return
                fault = self._pick(request)
                if fault is not None:
                    self.injected[fault.kind] += 1
                    if fault.kind in ERROR_TYPES:
                        writer.write(_error_response(*ERROR_TYPES[fault.kind]))
                        await writer.drain()
                        continue
                    if fault.kind == "drop":
                        return
                    if fault.kind == "slow":
                        await asyncio.sleep(fault.delay)
                if upstream is None:
                    upstream = await asyncio.open_connection("127.0.0.1", self.upstream_port)
                upstream[1].write(request)
                await upstream[1].drain()
                response = await _read_message(upstream[0])
                if response is None:
                    return  # the engine went away: so does this connection
                self.forwarded += 1
                if fault is not None and fault.kind == "reset":
                    return
                writer.write(response)
                await writer.drain()
        except (ConnectionError, asyncio.IncompleteReadError, OSError):
            return
        finally:
            await _close(writer)
            if upstream is not None:
                await _close(upstream[1])


async def _close(writer: asyncio.StreamWriter) -> None:
    writer.close()
    with contextlib.suppress(Exception, asyncio.CancelledError):
        await writer.wait_closed()


async def _read_message(reader: asyncio.StreamReader) -> bytes | None:
    """One HTTP/1.1 message (head and Content-Length body), or None at end of stream."""
    try:
        head = await reader.readuntil(b"\r\n\r\n")
    except asyncio.IncompleteReadError:
        return None
    length = 0
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value.strip())
    body = await reader.readexactly(length) if length else b""
    return head + body


def _error_response(status: int, error_type: str) -> bytes:
    body = orjson.dumps(
        {
            "__type": f"com.amazonaws.dynamodb.v20120810#{error_type}",
            "message": f"injected {error_type}",
        }
    )
    reason = "Bad Request" if status == 400 else "Internal Server Error"
    head = (
        f"HTTP/1.1 {status} {reason}\r\n"
        "Content-Type: application/x-amz-json-1.0\r\n"
        f"Content-Length: {len(body)}\r\n"
        "x-amzn-RequestId: injected\r\n\r\n"
    )
    return head.encode() + body
