"""Large requests leave large garbage: have it collected by the byte, not by the object.

Reference counting frees most of what a request made, but some of it sits in reference
cycles (validation visitors, exceptions and their frames, the HTTP request object) that
only the cyclic collector frees, and such a cycle can hold the request's text or
variables. The collector runs by counting objects, not bytes: unique documents padded to
900 KB grew a server's RSS by about 110 MB before a full collection came. This extension
adds up the size of requests of LARGE_REQUEST bytes or more and runs a full collection
once they come to ``max_bytes``, so no more than that waits for the collector; ordinary
requests never trigger it.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from dataclasses import dataclass

from strawberry.extensions import SchemaExtension

LARGE_REQUEST = 64 * 1024
UNCOLLECTED_MAX = 16 * 1024 * 1024
# Values looked at to size the variables; a list or object longer than any argument takes
# is sized by its length (it is refused anyway, see schema.limits).
SIZING_VALUES_MAX = 1000


def approximate_size(value: object) -> int:
    """Bytes a JSON value takes, roughly (at least its strings' lengths)."""
    total, seen = 0, 0
    pending = [value]
    while pending:
        item = pending.pop()
        seen += 1
        if isinstance(item, str):
            total += len(item)
        elif isinstance(item, list | dict):
            total += 8 * len(item)
            if seen + len(item) <= SIZING_VALUES_MAX:
                pending.extend(item.values() if isinstance(item, dict) else item)
        else:
            total += 8
    return total


@dataclass
class LargeRequestCollector:
    """Counts the bytes of large requests and collects garbage after every ``max_bytes``."""

    max_bytes: int = UNCOLLECTED_MAX
    pending: int = 0
    collections: int = 0

    def note(self, size: int) -> None:
        if size < LARGE_REQUEST:
            return
        self.pending += size
        if self.pending >= self.max_bytes:
            self.pending = 0
            self.collections += 1
            gc.collect()

    def extension(self) -> type[SchemaExtension]:
        collector = self

        class CollectLargeRequests(SchemaExtension):
            def on_operation(self) -> Iterator[None]:
                yield
                context = self.execution_context
                size = len(context.query or "") + approximate_size(context.variables)
                collector.note(size)

        return CollectLargeRequests
