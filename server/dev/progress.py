"""Progress on stderr for long work (demo data, imports, scans, benchmark data).

On a terminal, one line redrawn in place (a carriage return before each drawing); in a log
(stderr not a terminal: docker, systemd, a file), whole lines now and then instead, since a
log keeps every drawing and a carriage return is noise there.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import TextIO

WIDTH = 30
# In a log, a bar is written once per this many percent.
LOG_STEP = 10
# Width a note clears of the bar it is written over.
NOTE_WIDTH = 60


def _stream(stream: TextIO | None) -> TextIO:
    return sys.stderr if stream is None else stream


def _terminal(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except ValueError:  # closed
        return False


def progress_bar(total: int, label: str, *, stream: TextIO | None = None) -> Callable[[int], None]:
    """A callback taking the number done so far. On a terminal it redraws one line when the
    percentage moves (so a 100,000-item load does not print 100,000 times) and ends it when
    done; in a log it writes a whole line each LOG_STEP percent, the last at the end."""
    out = _stream(stream)
    terminal = _terminal(out)
    shown = -1

    def show(done: int) -> None:
        nonlocal shown
        percent = 100 * done // max(total, 1)
        # On a terminal each percent is drawn; in a log each LOG_STEP percent but the first.
        step = percent if terminal else percent // LOG_STEP
        if done < total and (step == shown or (not terminal and step == 0)):
            return
        shown = step
        filled = WIDTH * min(done, total) // max(total, 1)  # a last batch may pass the total
        bar = f"{label} [{'#' * filled}{'-' * (WIDTH - filled)}] {done}/{total}"
        if terminal:
            print(f"\r{bar}", end="\n" if done >= total else "", file=out, flush=True)
        else:
            print(bar, file=out, flush=True)

    return show


class Count:
    """A count without a known total (``progress_count``): call it with the count so far,
    and ``end()`` it when the work is done."""

    def __init__(self, template: str, out: TextIO) -> None:
        self._template = template
        self._out = out
        self._terminal = _terminal(out)
        self._next = 1  # in a log, the next milestone: 1, 2, 5, 10, 20, 50...
        self._last: int | None = None  # the count last shown
        self._seen: int | None = None  # the count last given

    def __call__(self, count: int) -> None:
        self._seen = count
        if self._terminal:
            self._write(count)
            return
        if count < self._next:
            return
        while self._next <= count:
            self._next = _after(self._next)
        self._write(count)

    def end(self) -> None:
        """Finish the line (terminal), or say the final count unless it was just said
        (log). Safe to call twice."""
        if self._seen is None:
            return
        if self._terminal:
            print(file=self._out, flush=True)
        elif self._last != self._seen:
            self._write(self._seen)
        self._seen = None

    def _write(self, count: int) -> None:
        line = self._template.format(count)
        if self._terminal:
            print(f"\r{line}", end="", file=self._out, flush=True)
        else:
            print(line, file=self._out, flush=True)
        self._last = count


def _after(milestone: int) -> int:
    """The milestone after ``milestone`` in 1, 2, 5, 10, 20, 50, 100..."""
    magnitude: int = 10 ** (len(str(milestone)) - 1)
    lead = {1: 2, 2: 5}.get(milestone // magnitude, 10)
    return lead * magnitude


def progress_count(template: str, *, stream: TextIO | None = None) -> Count:
    """A count of work whose total is unknown (``"scanned {} items"``): redrawn on a
    terminal; in a log a line each time it passes 1, 2, 5, 10, 20, 50..., and the total at
    the end."""
    return Count(template, _stream(stream))


def note(line: str, *, stream: TextIO | None = None) -> None:
    """A line of its own amid progress: on a terminal written over the bar (which its next
    drawing puts back below); in a log, just the line."""
    out = _stream(stream)
    if _terminal(out):
        print("\r" + line.ljust(NOTE_WIDTH), file=out, flush=True)
    else:
        print(line, file=out, flush=True)
