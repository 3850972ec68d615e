"""Several worker processes: ``comments serve --workers N`` (or ``WORKERS=N``).

The parent does the shared part of the start-up once (``server.runtime.prepare``: the
embedded engine, the table and its demo data, the secret, the dev token), binds the socket,
and hands the rest to uvicorn's supervisor, which spawns the workers, replaces one that
dies, and on SIGINT or SIGTERM closes the parent's copy of the socket, stops them all and
waits for them; the parent then stops the engine. Each worker makes the application from
what the parent handed it (``WorkerApp``, pickled to it with the configuration), with its
own client, caches and locks; why that is correct when writes come through another
process is in the manual (docs/deployment.md, "Several processes").

A worker dies with its parent (Linux's parent-death signal), so a parent killed outright
leaves no worker serving behind it.

With metrics on, the parent points ``PROMETHEUS_MULTIPROC_DIR`` at a fresh private
directory before any worker starts (prometheus-client then keeps each process's values in
files there, which a scrape adds up), tells prometheus-client of each worker that ended,
so that its gauges no longer count, counts the workers it replaced after they died
(``comments_worker_restarts_total``, in a file of its own there), serves the metrics
itself with ``METRICS=port``, and removes the directory when it stops.
"""

from __future__ import annotations

import ctypes
import logging
import os
import shutil
import signal
import socket
import sys
import tempfile
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from types import FrameType
from typing import Any

import uvicorn
from prometheus_client.multiprocess import mark_process_dead
from starlette.applications import Starlette
from uvicorn.config import STARTUP_FAILURE
from uvicorn.supervisors.multiprocess import Multiprocess

from server.environment import MULTIPROC_ENV, exported
from server.http.app import create_app
from server.http.head_limits import HeadLimits, HttpImplementation, guarded_protocol
from server.observability.logs import configure_logging
from server.observability.metrics import (
    WORKER_RESTARTS,
    WORKER_RESTARTS_HELP,
    listener,
    multiprocess_registry,
)
from server.observability.processes import ParentCounter
from server.runtime import Prepared, prepare
from server.settings import Settings
from server.shutdown import Drain, Leaving

log = logging.getLogger("comments.server")

# <linux/prctl.h>
PR_SET_PDEATHSIG = 1
# Seconds a worker may take to answer the supervisor's health check before it is replaced.
# uvicorn's 5 s is less than a worker needs to import the application on busy cores, and it
# counts from the spawn: with it, workers starting beside each other were killed and spawned
# again, over and over.
HEALTH_CHECK_SECONDS = 60


@dataclass(frozen=True, slots=True)
class WorkerApp:
    """The application factory a worker calls (uvicorn's ``factory``): the application on
    what the parent (``parent``, its process id) prepared, whose readiness reads the
    ``drain`` the parent sets on SIGTERM."""

    prepared: Prepared
    parent: int
    drain: Drain

    def __call__(self) -> Starlette:
        die_with_parent(self.parent)
        configure_logging(self.prepared.settings.log_format)
        return create_app(prepared=self.prepared, drain=self.drain)


class WorkerConfig(uvicorn.Config):
    """uvicorn's configuration as it travels to each worker, pickled: the HTTP protocol with
    the head limits is a class made at run time (``server.http.head_limits.guarded_protocol``),
    which pickle cannot name, so it travels as what it is made from and is made again on
    arrival."""

    def __init__(
        self,
        app: WorkerApp,
        *,
        protocol: tuple[HttpImplementation, HeadLimits],
        **options: Any,
    ) -> None:
        self.protocol = protocol
        super().__init__(app, http=guarded_protocol(*protocol), factory=True, **options)

    def __getstate__(self) -> dict[str, Any]:
        return {**self.__dict__, "http": None}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self.http = guarded_protocol(*self.protocol)


class Supervisor(Multiprocess):
    """uvicorn's supervisor, which also finds a worker that dies while its health check is
    out at once, and with metrics on (``metrics_dir``) tells prometheus-client of every
    worker that ended (replaced after dying, or stopped), so that the live gauges
    (subscriptions open, stream lag, memory) stop counting it; counters keep what it
    counted. It counts the workers it replaced after they died (not those SIGHUP replaces
    on purpose).

    uvicorn's health check sends a worker a ping over a pipe and waits for the answer up to
    ``HEALTH_CHECK_SECONDS``; the parent kept the worker's end of that pipe open too, so a
    worker killed between the ping and its answer left the wait to run out: for a minute the
    worker was neither replaced nor forgotten. Once a worker has started, the parent closes
    its copy of that end (``release_pipes``): a dead worker's pipe then reads as closed, and
    the check fails at once.

    On SIGINT or SIGTERM it drains first (``leaving``, server.shutdown): every worker's
    readiness answers 503 at once, and the workers are stopped once the delay has passed
    (or at a second signal), the parent's copy of the socket closed first.
    """

    def __init__(
        self,
        config: uvicorn.Config,
        sockets: list[socket.socket],
        metrics_dir: str | None,
        leaving: Leaving,
    ):
        super().__init__(config, sockets)
        self.metrics_dir = metrics_dir
        self.leaving = leaving
        self.known: set[int] = set()
        self.restarts = None
        if metrics_dir is not None:
            self.restarts = ParentCounter(metrics_dir, WORKER_RESTARTS, WORKER_RESTARTS_HELP)

    def init_processes(self) -> None:
        super().init_processes()
        self.release_pipes()

    def keep_subprocess_alive(self) -> None:
        before = {p.pid for p in self.processes}
        super().keep_subprocess_alive()
        replaced = len(before - {p.pid for p in self.processes})
        if replaced and self.restarts is not None:
            self.restarts.inc(replaced)
        self.release_pipes()
        self.forget_ended()

    def handle_signals(self) -> None:
        super().handle_signals()
        if self.leaving.due():
            self.should_exit.set()
        self.release_pipes()
        self.forget_ended()

    def handle_int(self) -> None:
        if self.leaving.signalled(signal.SIGINT):
            super().handle_int()

    def handle_term(self) -> None:
        if self.leaving.signalled(signal.SIGTERM):
            super().handle_term()

    def terminate_all(self) -> None:
        """Close the parent's copy of the listening socket, then stop the workers. The
        parent never accepts on it, but while any process holds it open the kernel goes on
        accepting connections into its backlog: once every worker had closed its own copy,
        new connections were accepted and never answered until the last worker ended.
        Closed here first, the socket closes with the last worker's copy, and a new
        connection is refused."""
        for sock in self.sockets:
            sock.close()
        super().terminate_all()

    def release_pipes(self) -> None:
        """Close the parent's copy of each started worker's end of its health-check pipe
        (the worker has its own); closing one twice does nothing."""
        for process in self.processes:
            if process.pid is not None:
                process.child_conn.close()

    def forget_ended(self) -> None:
        if self.metrics_dir is None:
            return
        running = {p.pid for p in self.processes if p.pid is not None}
        for pid in self.known - running:
            mark_process_dead(pid, self.metrics_dir)  # type: ignore[no-untyped-call]
        self.known = running


@contextmanager
def metrics_directory() -> Iterator[str]:
    """A fresh private directory (mode 0700) for the workers' metrics, named to them by the
    environment they inherit; removed, and the variable restored, when the block ends. One
    left by an earlier run is never reused: its counts would add to this run's."""
    path = tempfile.mkdtemp(prefix="comments-metrics-")
    try:
        with exported(MULTIPROC_ENV, path):
            yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


def die_with_parent(parent: int) -> None:
    """Ask the kernel for SIGTERM when the parent ends (Linux; elsewhere nothing), and stop
    at once when it has ended already."""
    if not sys.platform.startswith("linux"):
        return
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0) != 0:
        log.warning("worker %s will outlive its parent (prctl failed)", os.getpid())
    elif os.getppid() != parent:
        os.kill(os.getpid(), signal.SIGTERM)


def _interrupt(signum: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt


def serve(settings: Settings, options: dict[str, Any], limits: HeadLimits) -> int:
    """Run ``settings.workers`` worker processes with these uvicorn ``options`` (but the
    protocol, made from ``limits``) until SIGINT or SIGTERM; 1 when a worker could not
    start (the supervisor then stops the others), else 0."""
    # Until the supervisor takes the signals over, SIGTERM unwinds the start-up like
    # Ctrl-C, so that an engine already started is stopped.
    signal.signal(signal.SIGTERM, _interrupt)
    try:
        with prepare(settings) as prepared, ExitStack() as observing:
            directory = None
            if settings.metrics_mode != "off":
                directory = observing.enter_context(metrics_directory())
                if settings.metrics_mode == "port":
                    host, port = settings.metrics_host, settings.metrics_port
                    registry = multiprocess_registry(directory)
                    observing.enter_context(listener(registry, host, port))
                    log.info("metrics of every worker on http://%s:%s/metrics", host, port)
            drain = Drain()
            config = WorkerConfig(
                WorkerApp(prepared, os.getpid(), drain),
                protocol=(settings.uvicorn_http, limits),
                workers=settings.workers,
                timeout_worker_healthcheck=HEALTH_CHECK_SECONDS,
                **options,
            )
            sock = config.bind_socket()
            leaving = Leaving(drain, settings.shutdown_delay_seconds)
            supervisor = Supervisor(config, [sock], directory, leaving)
            try:
                supervisor.run()
            finally:
                sock.close()
    except KeyboardInterrupt:
        return 0
    failed = [p.pid for p in supervisor.processes if p.exitcode == STARTUP_FAILURE]
    if failed:
        log.error("worker %s failed to start; the server stopped", failed[0])
        return 1
    return 0
