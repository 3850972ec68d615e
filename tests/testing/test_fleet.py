"""Starting a fleet's pieces together: each entered once, on threads, and every one that
started is exited when another fails, so that a server that would not start leaves no
other running."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import ExitStack, contextmanager

import pytest

from testing.fleet import enter_together


def test_what_started_is_exited_when_another_fails() -> None:
    events: list[str] = []

    @contextmanager
    def piece(name: str, fails: bool = False) -> Iterator[str]:
        if fails:
            raise RuntimeError(f"{name} would not start")
        events.append(f"start {name}")
        try:
            yield name
        finally:
            events.append(f"stop {name}")

    with ExitStack() as stack:
        assert enter_together(stack, [piece("a"), piece("b")]) == ["a", "b"]
        assert sorted(events) == ["start a", "start b"]
    assert sorted(events) == ["start a", "start b", "stop a", "stop b"]

    events.clear()
    with pytest.raises(RuntimeError, match="c would not start"), ExitStack() as stack:
        enter_together(stack, [piece("a"), piece("c", fails=True), piece("b")])
    assert sorted(events) == ["start a", "start b", "stop a", "stop b"]
