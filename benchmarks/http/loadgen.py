"""A small closed-loop HTTP/1.1 load generator on loopback: N keep-alive connections, each
sending the next request of a mix as soon as the previous answer arrives, for a fixed time.
The mix is GraphQL POST bodies (``run_load``) or whole requests (``run_requests``, with
``get_request`` for GETs). ``run_requests`` may also count the values of one response header
(a proxy's ``X-Cache``), pace each connection to a request every so often (readers at a
set rate rather than as fast as the server answers) and stop early when told."""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from dataclasses import dataclass, field


@dataclass
class LoadResult:
    requests: int = 0
    errors: int = 0
    seconds: float = 0.0
    latencies_ms: list[float] = field(default_factory=list, repr=False)
    # The values of the header ``run_requests`` was asked to watch, counted ("-": absent).
    watched: Counter[str] = field(default_factory=Counter)

    @property
    def throughput(self) -> float:
        return self.requests / self.seconds if self.seconds else 0.0


def _request(host: str, port: int, body: bytes) -> bytes:
    head = (
        f"POST /graphql HTTP/1.1\r\nHost: {host}:{port}\r\n"
        "Content-Type: application/json\r\n"
        f"Content-Length: {len(body)}\r\n\r\n"
    )
    return head.encode() + body


def get_request(host: str, port: int, target: str, headers: dict[str, str]) -> bytes:
    """A GET of ``target`` (path and query string) with these header fields."""
    fields = "".join(f"{name}: {value}\r\n" for name, value in headers.items())
    return f"GET {target} HTTP/1.1\r\nHost: {host}:{port}\r\n{fields}\r\n".encode()


@dataclass(slots=True)
class _Response:
    status: int
    body: bytes
    # Whether the server closes the connection after it (nginx does after
    # ``keepalive_requests`` answers on one connection).
    close: bool
    watched: str = "-"


async def _read_response(reader: asyncio.StreamReader, watch: str | None = None) -> _Response:
    """One response; ``watched`` is the value of the header named ``watch`` (lower case)."""
    status_line = await reader.readline()
    if not status_line:
        raise ConnectionError("connection closed")
    status = int(status_line.split()[1])
    length = 0
    chunked = False
    close = False
    watched = "-"
    while True:
        line = await reader.readline()
        if line in (b"\r\n", b""):
            break
        name, _, value = line.decode("latin-1").partition(":")
        name = name.lower()
        if name == "content-length":
            length = int(value.strip())
        elif name == "transfer-encoding" and "chunked" in value.lower():
            chunked = True
        elif name == "connection" and "close" in value.lower():
            close = True
        elif name == watch:
            watched = value.strip()
    if not chunked:
        return _Response(status, await reader.readexactly(length), close, watched)
    body = b""
    while True:
        size = int((await reader.readline()).strip(), 16)
        if size == 0:
            await reader.readline()
            return _Response(status, body, close, watched)
        body += await reader.readexactly(size)
        await reader.readline()


async def run_load(
    host: str, port: int, bodies: list[bytes], *, concurrency: int, seconds: float
) -> LoadResult:
    """Send the mix round-robin from ``concurrency`` connections for ``seconds``."""
    requests = [_request(host, port, b) for b in bodies]
    return await run_requests(host, port, requests, concurrency=concurrency, seconds=seconds)


async def run_requests(
    host: str,
    port: int,
    requests: list[bytes],
    *,
    concurrency: int,
    seconds: float,
    watch: str | None = None,
    pace: float = 0.0,
    stop: asyncio.Event | None = None,
) -> LoadResult:
    """Send these whole requests round-robin from ``concurrency`` connections for ``seconds``
    (or until ``stop`` is set); an answer other than 200, or a plain one holding errors,
    counts as an error. ``watch``: a response header whose values are counted in
    ``LoadResult.watched``; ``pace``: each connection starts a request at most every
    ``pace`` seconds."""
    result = LoadResult()
    deadline = time.perf_counter() + seconds
    counter = 0
    header = None if watch is None else watch.lower()

    def going() -> bool:
        return time.perf_counter() < deadline and not (stop is not None and stop.is_set())

    async def worker() -> None:
        nonlocal counter
        reader, writer = await asyncio.open_connection(host, port)
        due = time.perf_counter()
        try:
            while going():
                if pace > 0:
                    await asyncio.sleep(max(0.0, due - time.perf_counter()))
                    due += pace
                    if not going():
                        break
                payload = requests[counter % len(requests)]
                counter += 1
                started = time.perf_counter()
                writer.write(payload)
                response = await _read_response(reader, header)
                result.latencies_ms.append((time.perf_counter() - started) * 1000)
                result.requests += 1
                if header is not None:
                    result.watched[response.watched] += 1
                if response.status != 200 or b'"errors"' in response.body:
                    result.errors += 1
                if response.close:
                    writer.close()
                    reader, writer = await asyncio.open_connection(host, port)
        finally:
            writer.close()

    started = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(concurrency)))
    result.seconds = time.perf_counter() - started
    return result
