"""The figures of each serving process, in metrics that add up over worker processes.

prometheus-client's own process collector reads ``/proc`` of the process that answers the
scrape, and multiprocess mode offers none: with ``serve --workers N`` a scrape would show
one worker's CPU and memory as the server's. So each process samples its own figures
(``ProcessFigures``) into series labelled with its ``pid``, which multiprocess mode keeps
apart, and a sum over ``pid`` is the whole server:

- ``comments_process_cpu_seconds_total{pid}``: the CPU time (user and system, all
  threads) the process has used, a counter; a worker that ended keeps its last value, so
  a sum of rates over pids stays right across a replacement;
- ``comments_process_resident_memory_bytes{pid}``: its resident memory (Linux), a gauge
  of live processes only (``liveall``): the parent tells prometheus-client of each worker
  that ended (``server.workers``), and that worker's series goes. In multiprocess mode
  the library labels each process's value with the pid itself (and drops a ``pid`` label
  of ours from gauges), so the label is ours only in a single process.

A process samples when its metrics become active, every ``SAMPLE_SECONDS`` while they are
(a thread: a worker busy with sockets alone serves no request to sample on), and before
each scrape it answers. The parent of workers serves nothing and is not counted.

``ParentCounter`` goes the other way: a count only the parent of the workers knows (the
workers it replaced after they died), written into the workers' directory as one more
process's file, so that it adds to the counter of the same name every worker declares at
zero, whichever process answers the scrape.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Gauge, values

from server.environment import MULTIPROC_ENV, exported

# Seconds between samples of a process's figures (a scrape also samples the process that
# answers it); Prometheus scrapes every 15 to 60 s.
SAMPLE_SECONDS = 5.0
STATM = Path("/proc/self/statm")


def resident_bytes() -> int | None:
    """This process's resident memory (Linux's ``/proc/self/statm``); None elsewhere."""
    try:
        pages = int(STATM.read_bytes().split()[1])
    except (OSError, IndexError, ValueError):
        return None
    return pages * os.sysconf("SC_PAGE_SIZE")


class ProcessFigures:
    """One process's CPU time and resident memory, labelled with its pid."""

    def __init__(self, registry: CollectorRegistry, *, multiprocess: bool = False) -> None:
        self.cpu = Counter(
            "comments_process_cpu_seconds",
            "CPU seconds (user and system) a serving process has used, by pid",
            ["pid"],
            registry=registry,
        )
        self.memory = Gauge(
            "comments_process_resident_memory_bytes",
            "Resident memory of a serving process in bytes, by pid (live processes only)",
            [] if multiprocess else ["pid"],
            registry=registry,
            multiprocess_mode="liveall",
        )
        self._labelled = not multiprocess
        # The sampling thread and a scrape may sample at once: the CPU added must be the
        # difference from one reading to the next, once.
        self._lock = threading.Lock()
        self._pid = 0
        self._cpu_seen = 0.0

    def sample(self) -> None:
        """Bring this process's figures up to now."""
        with self._lock:
            pid = os.getpid()
            if pid != self._pid:
                self._pid, self._cpu_seen = pid, 0.0
            used = time.process_time()
            if used > self._cpu_seen:
                self.cpu.labels(str(pid)).inc(used - self._cpu_seen)
                self._cpu_seen = used
            resident = resident_bytes()
            if resident is not None:
                gauge = self.memory.labels(str(pid)) if self._labelled else self.memory
                gauge.set(resident)

    @contextmanager
    def sampling(self, every: float = SAMPLE_SECONDS) -> Iterator[None]:
        """Sample now, and every ``every`` seconds in a thread until the block ends."""
        self.sample()
        stop = threading.Event()

        def run() -> None:
            while not stop.wait(every):
                self.sample()

        thread = threading.Thread(target=run, name="comments-process-figures", daemon=True)
        thread.start()
        try:
            yield
        finally:
            stop.set()
            thread.join()


class ParentCounter:
    """A counter the parent of workers adds to, kept in the workers' metrics directory
    (see the module doc). The parent imported prometheus-client before that directory
    existed, so its own metrics keep their values in memory; this one is made with the
    library's file-backed value, as the workers' are."""

    def __init__(self, directory: str, name: str, documentation: str) -> None:
        # The file is named when the value is made, from the variable (the library's
        # protocol); the parent has it set already, this makes sure it is this directory.
        with exported(MULTIPROC_ENV, directory):
            # prometheus-client leaves this factory unannotated.
            kind: Any = values.MultiProcessValue()  # type: ignore[no-untyped-call]
            self._value: Any = kind("counter", name, f"{name}_total", (), (), documentation)

    def inc(self, amount: int = 1) -> None:
        self._value.inc(amount)
