"""A live `comments serve` process on a free port, stopped by PID; for fuzzing, faults and soak."""

from __future__ import annotations

import asyncio
import os
import secrets
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import IO

import httpx

from resolvers.auth import mint
from server.dev.local_engine import LocalEngine, free_port
from storage.engine.client import ClientSettings, open_client
from storage.engine.table import TableRef
from storage.ops.create import create_table
from storage.ops.verify import Report, verify

ROOT = Path(__file__).resolve().parent.parent
COMMENTS = ROOT / ".venv" / "bin" / "comments"


@dataclass(frozen=True, slots=True)
class LiveServer:
    port: int
    pid: int

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def graphql_url(self) -> str:
        return f"{self.base_url}/graphql"


@contextmanager
def live_server(
    endpoint_url: str, table: str, jwt_secret: str, *, log: IO[bytes] | None = None, **env: str
) -> Iterator[LiveServer]:
    """Run the server against an engine and table until the block ends; extra keyword
    arguments become environment variables (``STORAGE_TIMEOUT="2"``). Per-author write
    limits and rates are lifted unless given: load, soak and fuzzing write as few authors. The
    author ids' key is pinned to the secret, as production requires a key and a deployment
    keeps the ids its secret gave. The server's output goes to ``log`` when given (a test
    reads what it logged), else to a private file."""
    port = free_port()
    environment = {
        "DYNAMODB_ENDPOINT_URL": endpoint_url,
        "DYNAMODB_TABLE": table,
        "JWT_SECRET": jwt_secret,
        "AUTHOR_ID_KEY": jwt_secret,
        "HOST": "127.0.0.1",
        "PORT": str(port),
        # A free port for the metrics listener (production, or several workers), never the
        # fixed default, which another test process (or a server) may hold.
        "METRICS_PORT": str(free_port()),
        "COMMENTS_PER_PRODUCT": "0",
        "COMMENTS_PER_HOUR": "0",
        "EDITS_PER_HOUR": "0",
        "DELETES_PER_HOUR": "0",
        "REPLIES_PER_HOUR": "0",
        "REPORTS_PER_HOUR": "0",
        "VOTES_PER_HOUR": "0",
        "MODERATIONS_PER_HOUR": "0",
        **env,
    }
    with server_process([str(COMMENTS), "serve"], port, environment, log=log) as pid:
        yield LiveServer(port, pid)


@contextmanager
def server_process(
    command: list[str],
    port: int,
    env: dict[str, str],
    timeout: float = 60,
    *,
    log: IO[bytes] | None = None,
) -> Iterator[int]:
    """Start a server process listening on ``port``, wait until its /healthz answers 200,
    stop it by PID when the block ends; yields the PID. Its output goes to ``log`` if given."""
    # The log goes to a file, not a pipe: nobody reads a pipe while the server runs, and a
    # full one would block the server mid-request.
    with ExitStack() as stack:
        if log is None:
            log = stack.enter_context(tempfile.TemporaryFile())
        process = subprocess.Popen(
            command,
            env={**os.environ, "ACCESS_LOG": "false", **env},
            cwd=ROOT,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        try:
            _wait_healthy(process, log, f"http://127.0.0.1:{port}/healthz", timeout)
            yield process.pid
        finally:
            process.terminate()
            try:
                process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


def _wait_healthy(
    process: subprocess.Popen[bytes], log: IO[bytes], url: str, timeout: float = 60
) -> None:
    def output() -> str:
        log.seek(0)
        return log.read().decode(errors="replace")

    wait_until_answers(process, url, timeout, what="the server", logs=output)


def wait_until_answers(
    process: subprocess.Popen[bytes],
    url: str,
    timeout: float,
    *,
    what: str,
    logs: Callable[[], str],
    error: type[Exception] = RuntimeError,
    poll: float = 0.1,
) -> None:
    """Wait until ``url`` answers 200 while ``process`` runs; ``error`` with the end of its
    ``logs`` if it exits first or does not answer within ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        if process.poll() is not None:
            raise error(f"{what} exited early:\n{logs()[-3000:]}")
        try:
            if httpx.get(url, timeout=1).status_code == 200:
                return
        except httpx.TransportError:
            pass
        if time.monotonic() > deadline:
            raise error(f"{what} did not answer within {timeout:.0f} s:\n{logs()[-3000:]}")
        time.sleep(poll)


def rss_bytes(pid: int) -> int:
    """Resident set size of a process (Linux /proc)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise RuntimeError(f"no VmRSS for process {pid}")


async def _create(endpoint_url: str, table: str) -> None:
    async with open_client(ClientSettings(endpoint_url=endpoint_url)) as client:
        await create_table(client, table)


async def _verify(endpoint_url: str, table: str) -> Report:
    async with open_client(ClientSettings(endpoint_url=endpoint_url)) as client:
        return await verify(TableRef(client, table))


@dataclass
class Rig:
    """DynamoDB Local, a table and a live server, for the command-line runs."""

    engine: LocalEngine
    server: LiveServer
    table: str
    secret: str

    def token(
        self, sub: str = "reliability", *, moderator: bool = True, merchant: bool = False
    ) -> str:
        roles = (["moderator"] if moderator else []) + (["merchant"] if merchant else [])
        return mint(self.secret, sub, roles=roles or None)

    def verify(self) -> Report:
        """The verify command's check of every counter and leaderboard entry."""
        return asyncio.run(_verify(self.engine.endpoint_url, self.table))


@contextmanager
def rig(
    table: str = "reliability",
    *,
    data_dir: Path | None = None,
    create: bool = True,
    env: dict[str, str] | None = None,
) -> Iterator[Rig]:
    """Start an engine (in memory unless ``data_dir``), create ``table`` (or leave that to the
    server: ``CREATE_TABLE=true`` in ``env``), run a server on it."""
    secret = secrets.token_urlsafe(32)
    print("starting DynamoDB Local and the server ...", file=sys.stderr)
    with LocalEngine(data_dir=data_dir) as engine:
        if create:
            asyncio.run(_create(engine.endpoint_url, table))
        with live_server(engine.endpoint_url, table, secret, log=None, **(env or {})) as server:
            yield Rig(engine, server, table, secret)
