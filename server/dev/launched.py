"""A process the development tools start (DynamoDB Local, Redis, Varnish): spawned in a
session of its own with its output kept in a temporary file (so that a failed start can
say what the process said), and ended by PID, politely first."""

from __future__ import annotations

import shutil
import signal
import subprocess
import tempfile
from collections.abc import Mapping
from pathlib import Path
from types import TracebackType
from typing import Self


def find_binary(named: Path | None, program: str, default: str) -> str | None:
    """The binary a setting names, else ``program`` on the PATH, else ``default``; None
    when that is no file."""
    found = str(named) if named else shutil.which(program) or default
    return found if Path(found).is_file() else None


class Launched:
    """The running process (``_process``), its output file (``_log``) and their ending; a
    context manager that starts it and stops it (``stop`` is safe to call twice)."""

    _log: tempfile._TemporaryFileWrapper[bytes] | None = None
    _process: subprocess.Popen[bytes] | None = None

    def start(self) -> object:
        raise NotImplementedError

    def stop(self) -> None:
        raise NotImplementedError

    def __enter__(self) -> Self:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    @property
    def pid(self) -> int | None:
        return None if self._process is None else self._process.pid

    def _spawn(
        self,
        args: list[str],
        log_prefix: str,
        *,
        cwd: Path | None = None,
        env: Mapping[str, str] | None = None,
    ) -> subprocess.Popen[bytes]:
        self._close_log()
        # The log lives as long as the process, so no with-block; ending it closes it.
        self._log = tempfile.NamedTemporaryFile(prefix=log_prefix, suffix=".log")  # noqa: SIM115
        self._process = subprocess.Popen(
            args,
            stdout=self._log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            cwd=cwd,
            env=env,
            start_new_session=True,
        )
        return self._process

    def _end(self, sig: signal.Signals = signal.SIGTERM, timeout: float | None = 10) -> None:
        """Send ``sig`` and wait for the process to end (past ``timeout``, kill it)."""
        process, self._process = self._process, None
        if process is not None and process.poll() is None:
            process.send_signal(sig)
            try:
                process.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        self._close_log()

    def _tail(self) -> str:
        if self._log is None:
            return ""
        self._log.flush()
        return Path(self._log.name).read_text(errors="replace")[-2000:]

    def _close_log(self) -> None:
        if self._log is not None:
            self._log.close()
            self._log = None
