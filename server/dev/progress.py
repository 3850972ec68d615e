"""A progress bar on stderr for long writes (demo data, benchmark data)."""

from __future__ import annotations

import sys
from collections.abc import Callable

WIDTH = 30


def progress_bar(total: int, label: str) -> Callable[[int], None]:
    """A callback taking the number done so far; it redraws one line when the percentage
    moves (so a 100,000-item load does not print 100,000 times) and ends it when done."""
    shown = -1

    def show(done: int) -> None:
        nonlocal shown
        percent = 100 * done // max(total, 1)
        if percent == shown and done < total:
            return
        shown = percent
        filled = WIDTH * done // max(total, 1)
        bar = "#" * filled + "-" * (WIDTH - filled)
        print(f"\r{label} [{bar}] {done}/{total}", end="", file=sys.stderr, flush=True)
        if done >= total:
            print(file=sys.stderr)

    return show
