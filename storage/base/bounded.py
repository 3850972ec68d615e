"""A least-recently-used map bounded by the bytes charged for its entries (every cache and
memo of the project: parsed documents, persisted queries, the planner's memory)."""

from __future__ import annotations

from collections import OrderedDict
from typing import Generic, TypeVar

K = TypeVar("K")
V = TypeVar("V")


class BoundedCache(Generic[K, V]):
    """A least-recently-used map bounded by the bytes charged for its entries. It counts
    its lookups (``hits``, ``misses``), which the server's metrics read."""

    def __init__(self, max_bytes: int) -> None:
        self.max_bytes = max_bytes
        self.bytes = 0
        self.hits = 0
        self.misses = 0
        self._entries: OrderedDict[K, tuple[V, int]] = OrderedDict()

    def __len__(self) -> int:
        return len(self._entries)

    def clear(self) -> None:
        self._entries.clear()
        self.bytes = 0

    def values(self) -> list[V]:
        return [value for value, _ in self._entries.values()]

    def __contains__(self, key: K) -> bool:
        """Whether ``key`` is kept, without counting as a use of it."""
        return key in self._entries

    def get(self, key: K) -> V | None:
        found = self._entries.get(key)
        if found is None:
            self.misses += 1
            return None
        self.hits += 1
        self._entries.move_to_end(key)
        return found[0]

    def put(self, key: K, value: V, charge: int) -> None:
        """Keep ``value`` under ``key``, charged ``charge`` bytes; a value charged more than
        the whole cache is not kept."""
        old = self._entries.pop(key, None)
        if old is not None:
            self.bytes -= old[1]
        if charge > self.max_bytes:
            return
        self._entries[key] = (value, charge)
        self.bytes += charge
        while self.bytes > self.max_bytes:
            _, (_, freed) = self._entries.popitem(last=False)
            self.bytes -= freed
