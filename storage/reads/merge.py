"""K-way merge of sorted partitions that may not have been read to the end. Pure.

Each stream is what one query returned so far, in query order, plus what is known about
the rest: the partition may be exhausted, or read completely through a ``bound`` key (a
range read found nothing more before it). An item may be emitted only when every stream
that might still hold unread items before it has a buffered item at or beyond it, or is
known through it; otherwise an unread item of that stream could belong before it. The
merge stops there and says how far it got, so the executor can fetch more from exactly the
streams that ran out.
"""

from __future__ import annotations

import heapq
from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Stream:
    keys: Sequence[str]
    exhausted: bool
    # Every item of the stream up to this key (in merge order) is in ``keys``.
    bound: str | None = None


@dataclass(frozen=True, slots=True)
class MergeResult:
    # (stream index, position in that stream) of each emitted item, in output order.
    picks: tuple[tuple[int, int], ...]
    # True when ``want`` items were emitted or every stream was drained to its end.
    complete: bool
    # How many items of each stream were emitted.
    consumed: tuple[int, ...]


def merge(streams: Sequence[Stream], want: int, *, descending: bool) -> MergeResult:
    """Emit up to ``want`` items in sort order, stopping where certainty ends."""
    consumed = [0] * len(streams)
    # heapq is a min-heap: negate the order for descending merges by wrapping keys.
    heap: list[tuple[_Key, int]] = []
    for i, s in enumerate(streams):
        if s.keys:
            heapq.heappush(heap, (_Key(s.keys[0], descending), i))
    picks: list[tuple[int, int]] = []
    while len(picks) < want:
        if not heap:
            if any(not s.exhausted for s in streams):
                return MergeResult(tuple(picks), False, tuple(consumed))
            break
        candidate = heap[0][0].value
        for j, s in enumerate(streams):
            if s.exhausted or consumed[j] < len(s.keys):
                continue
            known_through = s.bound is not None and (
                candidate >= s.bound if descending else candidate <= s.bound
            )
            if not known_through:
                return MergeResult(tuple(picks), False, tuple(consumed))
        _, i = heapq.heappop(heap)
        picks.append((i, consumed[i]))
        consumed[i] += 1
        if consumed[i] < len(streams[i].keys):
            heapq.heappush(heap, (_Key(streams[i].keys[consumed[i]], descending), i))
    return MergeResult(tuple(picks), True, tuple(consumed))


class _Key:
    """A sort key whose order can be reversed, for one heap serving both directions."""

    __slots__ = ("descending", "value")

    def __init__(self, value: str, descending: bool) -> None:
        self.value = value
        self.descending = descending

    def __lt__(self, other: _Key) -> bool:
        if self.descending:
            return self.value > other.value
        return self.value < other.value
