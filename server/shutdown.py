"""The way out on SIGTERM (or SIGINT), with no connection accepted and left unanswered.

Once signalled, the server

1. answers readiness (``/readyz``, ``/healthz``) with 503 ``{"status": "draining"}`` at
   once, while ``/livez`` answers 200 to the end;
2. serves everything as before for ``SHUTDOWN_DELAY_SECONDS``, so that a load balancer
   sees the 503 (or the platform removes the endpoint) and stops sending before the
   listener closes;
3. closes the listening socket in every process that holds it: a new connection is then
   refused, never accepted into a backlog nobody reads; idle connections are closed,
   WebSockets with 1012 (service restart), and requests in progress go on;
4. gives those requests ``SHUTDOWN_TIMEOUT_SECONDS`` to finish (uvicorn's
   ``timeout_graceful_shutdown``), cancels what is left, and closes the application.

A second signal ends the delay at once. Steps 3 and 4 are uvicorn's own.

With one process, ``Server`` (uvicorn's, with the delay) does all of it. With several
(``server.workers``) the parent takes the signal: it sets the ``Drain`` its workers
share, waits the delay, closes its own copy of the listening socket, and only then
sends the workers SIGTERM, on which each does steps 3 and 4.
"""

from __future__ import annotations

import ctypes
import logging
import time
from multiprocessing import get_context
from types import FrameType

import uvicorn

log = logging.getLogger("comments.server")

# 0: the listener closes as soon as the signal comes, which is right without a load
# balancer in front (development, docker compose).
DELAY_SECONDS = 0.0
# Twice STORAGE_TIMEOUT's default, within which every storage call of a request ends:
# room for any request whose body has arrived.
TIMEOUT_SECONDS = 10.0


class Drain:
    """Whether the server is on its way out: a byte of shared memory, set by the process
    that takes the signal and read by every process's readiness check without a lock (a
    worker killed while reading it holds nothing). It travels to worker processes as they
    are spawned, and only so."""

    def __init__(self) -> None:
        self._flag = get_context("spawn").RawValue(ctypes.c_bool, False)

    @property
    def draining(self) -> bool:
        return bool(self._flag.value)

    def begin(self) -> None:
        self._flag.value = True


class Leaving:
    """Steps 1 and 2 for the process that takes the signals: its handler calls
    ``signalled``, its loop ``due``."""

    def __init__(self, drain: Drain, delay: float) -> None:
        self.drain = drain
        self.delay = delay
        # The first signal taken, which the process stops on when the delay ends.
        self.signal: int | None = None
        self._until: float | None = None
        self._told = False

    def signalled(self, signal: int) -> bool:
        """Take ``signal`` (in a signal handler: nothing is logged here): whether to stop
        at once (no delay, or a second signal); otherwise the delay starts."""
        self.drain.begin()
        if self.signal is None and self.delay > 0:
            self.signal = signal
            self._until = time.monotonic() + self.delay
            return False
        self._until = None
        return True

    def due(self) -> bool:
        """Whether the delay has just run out (True once)."""
        # Read once: a second signal may clear it between two lines of this method.
        until = self._until
        if until is None:
            return False
        if not self._told:
            self._told = True
            log.info(
                "draining: readiness answers 503, the listener closes in %g s "
                "(SHUTDOWN_DELAY_SECONDS) or at a second signal",
                self.delay,
            )
        if time.monotonic() < until:
            return False
        self._until = None
        return True


class Server(uvicorn.Server):
    """uvicorn's server, which on its first signal drains (``Leaving``) before it stops
    accepting."""

    def __init__(self, config: uvicorn.Config, leaving: Leaving) -> None:
        super().__init__(config)
        self.leaving = leaving

    def handle_exit(self, sig: int, frame: FrameType | None) -> None:
        if self.leaving.signalled(sig):
            super().handle_exit(sig, frame)

    async def on_tick(self, counter: int) -> bool:
        if self.leaving.due() and self.leaving.signal is not None:
            # As if the signal came now: uvicorn raises it again once it has stopped.
            super().handle_exit(self.leaving.signal, None)
        return await super().on_tick(counter)
