"""The output of a process the development tools start (DynamoDB Local, Redis), kept in a
temporary file so that a failed start can say what the process said."""

from __future__ import annotations

import tempfile
from pathlib import Path


class CapturedLog:
    """A process's output file (``_log``), its last lines, and its closing."""

    _log: tempfile._TemporaryFileWrapper[bytes] | None = None

    def _tail(self) -> str:
        if self._log is None:
            return ""
        self._log.flush()
        return Path(self._log.name).read_text(errors="replace")[-2000:]

    def _close_log(self) -> None:
        if self._log is not None:
            self._log.close()
            self._log = None
