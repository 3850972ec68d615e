"""Start and stop a development Redis (Debian's ``redis-server``) on loopback, on a free
port, stopped by PID: the fan-out broker of ``comments serve --workers N`` and of the
tests, as ``server.dev.local_engine`` starts DynamoDB Local.

It keeps nothing on disk (no snapshots, no append-only file) and binds 127.0.0.1 only,
with protected mode on; after start-up the launcher reads from the kernel what it listens
on and stops it unless that is loopback only. ``REDIS_SERVER`` may name another binary.
"""

from __future__ import annotations

import signal
import socket
import tempfile
import time

from server.dev.launched import Launched, find_binary
from server.dev.local_engine import free_port
from server.dev.loopback import listening_sockets
from server.settings.development import EngineSettings

START_TIMEOUT = 20.0


class BrokerError(RuntimeError):
    """redis-server is missing or would not start; the message says what to do."""


def find_redis() -> str:
    found = find_binary(EngineSettings().redis_server, "redis-server", "/usr/bin/redis-server")
    if found is None:
        raise BrokerError(
            "redis-server is missing: several workers fan the table's changes out through "
            "it (scripts/setup installs it; Debian: apt-get install redis-server), or set "
            "FANOUT_URL to a Redis of your own"
        )
    return found


def _answers(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5) as s:
            s.sendall(b"PING\r\n")
            return s.recv(7).startswith(b"+PONG")
    except OSError:
        return False


class LocalBroker(Launched):
    """A redis-server process; a context manager, and ``stop`` is safe to call twice.
    ``kill`` then ``start`` restarts it on the same port (empty: pub/sub keeps nothing)."""

    def __init__(self, *, port: int | None = None) -> None:
        self.requested_port = port
        self.port: int | None = None

    @property
    def url(self) -> str:
        if self.port is None:
            raise BrokerError("the broker is not running")
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> LocalBroker:
        binary = find_redis()
        # A port picked free can be taken before redis-server binds it: try a few.
        for _ in range(3):
            if self._try_start(binary, self.requested_port or free_port()):
                return self
            if self.requested_port is not None:
                break
        raise BrokerError(f"redis-server did not start:\n{self._tail()}")

    def _try_start(self, binary: str, port: int) -> bool:
        args = [
            binary,
            "--bind",
            "127.0.0.1",
            "--port",
            str(port),
            "--protected-mode",
            "yes",
            "--save",
            "",
            "--appendonly",
            "no",
            "--daemonize",
            "no",
            "--dir",
            tempfile.gettempdir(),
        ]
        process = self._spawn(args, "redis-")
        deadline = time.monotonic() + START_TIMEOUT
        while time.monotonic() < deadline:
            if process.poll() is not None:
                return False
            if _answers(port):
                self._check_loopback(process.pid, port)
                self.port = port
                return True
            time.sleep(0.02)
        self.stop()
        raise BrokerError(f"redis-server did not answer within {START_TIMEOUT:.0f} s")

    def _check_loopback(self, pid: int, port: int) -> None:
        try:
            sockets = listening_sockets(pid, port)
        except OSError as exc:
            problem = f"cannot check what redis-server listens on ({exc})"
        else:
            exposed = sorted({str(s) for s in sockets if not s.is_loopback})
            if sockets and not exposed:
                return
            problem = f"redis-server listens beyond loopback ({', '.join(exposed) or '?'})"
        self.stop()
        raise BrokerError(f"{problem}, so it was stopped")

    def stop(self) -> None:
        self.port = None
        self._end()

    def kill(self) -> None:
        """Crash the broker (SIGKILL); ``start`` brings it back on the same port (empty:
        pub/sub keeps nothing)."""
        if self.port is not None:
            self.requested_port = self.port
        self.port = None
        self._end(signal.SIGKILL, timeout=None)
