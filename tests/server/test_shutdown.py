"""Shutting down on SIGTERM, with one process and with workers: readiness answers 503 at
once, new requests are served through the drain delay, then a new connection is refused,
never accepted and left unanswered; a request in progress gets its answer, an idle
connection is closed, a WebSocket is closed with 1012, and a request that never ends is
cut off at the drain timeout."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import tempfile
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import IO

import orjson
import pytest

from server.dev.local_engine import LocalEngine
from server.shutdown import Drain, Leaving
from storage.engine.table import TableRef
from testing.live_server import LiveServer, live_server
from testing.subscriber import subscriber
from tests.api_helpers import SECRET

# Guards only, so that a hang fails the test instead of blocking it: every answer here
# takes milliseconds.
ANSWER_SECONDS = 10.0
GUARD_SECONDS = 60.0
QUERY = orjson.dumps({"query": "{ __typename }"})


@contextmanager
def _server(
    engine: LocalEngine, table: TableRef, **env: str
) -> Iterator[tuple[LiveServer, IO[bytes]]]:
    with (
        tempfile.TemporaryFile() as log,
        live_server(engine.endpoint_url, table.name, SECRET, log=log, **env) as server,
    ):
        yield server, log


async def _all_workers_up(log: IO[bytes], workers: int) -> None:
    """Once every worker has finished its start-up (its line in the log): the server
    answers as soon as its first worker does, and a SIGTERM while the parent is still
    starting the others is handled only once they have started (the supervisor starts
    them in turn), which is not what these tests are about."""
    async with asyncio.timeout(GUARD_SECONDS):
        while True:
            log.seek(0)
            if log.read().count(b"Application startup complete.") >= workers:
                return
            await asyncio.sleep(0.05)


def _tail(log: IO[bytes]) -> str:
    log.seek(0)
    return log.read().decode(errors="replace")[-3000:]


def _ended(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return True
    return state == "Z"


async def _until_ended(pid: int, log: IO[bytes]) -> None:
    try:
        async with asyncio.timeout(GUARD_SECONDS):
            while True:
                if _ended(pid):
                    return
                await asyncio.sleep(0.05)
    except TimeoutError:
        raise AssertionError(f"the server did not end:\n{_tail(log)}") from None


@asynccontextmanager
async def _connection(
    port: int,
) -> AsyncIterator[tuple[asyncio.StreamReader, asyncio.StreamWriter]]:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        yield reader, writer
    finally:
        writer.close()


async def _answer(reader: asyncio.StreamReader) -> tuple[int, bytes]:
    """One HTTP/1.1 answer: its status and body (the app sends a Content-Length)."""
    async with asyncio.timeout(ANSWER_SECONDS):
        head = await reader.readuntil(b"\r\n\r\n")
        lines = head.decode("latin-1").split("\r\n")
        fields = dict(line.lower().split(": ", 1) for line in lines[1:] if line)
        body = await reader.readexactly(int(fields["content-length"]))
    return int(lines[0].split()[1]), body


def _request(method: str, path: str, body: bytes = b"", *, close: bool = False) -> bytes:
    head = [f"{method} {path} HTTP/1.1", "host: 127.0.0.1"]
    if body:
        head += ["content-type: application/json", f"content-length: {len(body)}"]
    if close:
        head.append("connection: close")
    return ("\r\n".join(head) + "\r\n\r\n").encode() + body


async def _hold(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    """Start a GraphQL request that stays in progress: its head asks for 100 Continue, which
    the server sends once the app reads the body, and the body then lacks its last byte,
    which only the test can send."""
    head = _request("POST", "/graphql", QUERY).split(b"\r\n\r\n")[0]
    writer.write(head + b"\r\nexpect: 100-continue\r\n\r\n")
    async with asyncio.timeout(ANSWER_SECONDS):
        assert await reader.readuntil(b"\r\n\r\n") == b"HTTP/1.1 100 Continue\r\n\r\n"
    writer.write(QUERY[:-1])


async def _fate_of_a_new_connection(port: int) -> str:
    """What becomes of a new connection and its request: answered, refused (no listener),
    reset, closed without an answer, or unanswered (accepted, then nothing within the
    guard: the black hole)."""
    try:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
    except ConnectionRefusedError:
        return "refused"
    try:
        writer.write(_request("GET", "/livez", close=True))
        await writer.drain()
        answer = await asyncio.wait_for(reader.read(), ANSWER_SECONDS)
    except ConnectionResetError:
        return "reset"
    except TimeoutError:
        return "unanswered"
    finally:
        writer.close()
    return "answered" if answer.startswith(b"HTTP/1.1 ") else "closed"


async def _until_refused(port: int, log: IO[bytes]) -> list[str]:
    """New connections, one after another, until one is refused (or reset: the last
    listener closed while it waited); every one before it must have had an answer or a
    close."""
    fates: list[str] = []
    async with asyncio.timeout(GUARD_SECONDS):
        while not fates or fates[-1] not in ("refused", "reset"):
            fates.append(await _fate_of_a_new_connection(port))
            assert "unanswered" not in fates, (
                f"a new connection was accepted and never answered: {fates}\n{_tail(log)}"
            )
            await asyncio.sleep(0.05)
    return fates


@pytest.mark.parametrize("workers", [1, 2])
async def test_after_sigterm_new_connections_are_refused_and_open_ones_end_well(
    engine: LocalEngine, table: TableRef, workers: int
) -> None:
    env = {"WORKERS": str(workers), "SHUTDOWN_TIMEOUT_SECONDS": "600", "BODY_TIMEOUT": "600"}
    with _server(engine, table, **env) as (server, log):
        await _all_workers_up(log, workers)
        async with (
            _connection(server.port) as (held, holding),
            _connection(server.port) as (idle, idling),
            subscriber(server.graphql_url, payload={}) as socket,
        ):
            await _hold(held, holding)
            # Idle: kept alive after one answer.
            idling.write(_request("GET", "/livez"))
            assert (await _answer(idle))[0] == 200
            os.kill(server.pid, signal.SIGTERM)
            fates = await _until_refused(server.port, log)
            assert fates[-1] in ("refused", "reset"), fates
            # The WebSocket: closed with 1012 (service restart), which clients retry.
            assert (await socket.closed(GUARD_SECONDS)).code == 1012
            # The idle connection: closed, with nothing sent.
            assert await asyncio.wait_for(idle.read(), GUARD_SECONDS) == b""
            # The request in progress: its answer, once its body is complete.
            holding.write(QUERY[-1:])
            status, body = await _answer(held)
            assert (status, orjson.loads(body)["data"]) == (200, {"__typename": "Query"})
        await _until_ended(server.pid, log)


@pytest.mark.parametrize("workers", [1, 2])
async def test_readiness_answers_draining_at_once_and_requests_are_served_through_the_delay(
    engine: LocalEngine, table: TableRef, workers: int
) -> None:
    # A delay far longer than the test: the second signal ends it.
    env = {"WORKERS": str(workers), "SHUTDOWN_DELAY_SECONDS": "600"}
    with _server(engine, table, **env) as (server, log):
        await _all_workers_up(log, workers)
        os.kill(server.pid, signal.SIGTERM)
        statuses: list[int] = []
        async with asyncio.timeout(GUARD_SECONDS):
            while not statuses or statuses[-1] != 503:
                async with _connection(server.port) as (reader, writer):
                    writer.write(_request("GET", "/readyz", close=True))
                    status, body = await _answer(reader)
                statuses.append(status)
        assert orjson.loads(body) == {"status": "draining"}, _tail(log)
        # From then on, on new connections (with workers, whichever takes each): readiness
        # is 503, liveness 200, and GraphQL is served.
        for _ in range(4):
            for path, expected in (("/readyz", 503), ("/healthz", 503), ("/livez", 200)):
                async with _connection(server.port) as (reader, writer):
                    writer.write(_request("GET", path, close=True))
                    assert (await _answer(reader))[0] == expected, path
            async with _connection(server.port) as (reader, writer):
                writer.write(_request("POST", "/graphql", QUERY, close=True))
                status, body = await _answer(reader)
                assert (status, orjson.loads(body)["data"]) == (200, {"__typename": "Query"})
        # A second signal skips the rest of the delay.
        os.kill(server.pid, signal.SIGTERM)
        await _until_refused(server.port, log)
        await _until_ended(server.pid, log)


async def test_a_request_that_never_ends_is_cut_off_at_the_drain_timeout(
    engine: LocalEngine, table: TableRef
) -> None:
    env = {"SHUTDOWN_TIMEOUT_SECONDS": "1", "BODY_TIMEOUT": "600"}
    with _server(engine, table, **env) as (server, log):
        async with _connection(server.port) as (held, holding):
            await _hold(held, holding)
            os.kill(server.pid, signal.SIGTERM)
            await _until_ended(server.pid, log)
            answer = b""
            with contextlib.suppress(ConnectionResetError):
                answer = await asyncio.wait_for(held.read(), GUARD_SECONDS)
            assert not answer.startswith(b"HTTP/1.1 200"), answer


def test_the_first_signal_drains_and_a_second_one_ends_the_delay() -> None:
    waiting = Leaving(Drain(), delay=600)
    assert not waiting.drain.draining
    assert not waiting.signalled(signal.SIGTERM)
    assert waiting.drain.draining
    assert not waiting.due()
    assert waiting.signalled(signal.SIGINT)
    assert not waiting.due()  # stopped already: the delay never comes due
    assert waiting.signal == signal.SIGTERM
    at_once = Leaving(Drain(), delay=0)
    assert at_once.signalled(signal.SIGTERM)
    assert at_once.drain.draining
