"""The facet items (entries and counter items) the write path keeps for new comments, built
by the model's own functions, for loads that bypass the write path (the bulk loader writes
comments and their stats only): benchmarks and the in-memory oracle walks."""

from __future__ import annotations

from collections.abc import Iterable

from storage.base.types import Item
from storage.model.comments import Comment
from storage.model.facets import counter_sk, facet_moves
from storage.model.items import comment_to_item, entry_items, item_version
from storage.writes.facet_parts import listed


def facet_items(of: Iterable[Comment]) -> list[Item]:
    """The entries and counter items the write path keeps for ``of`` (new comments)."""
    items: list[Item] = []
    counters: dict[tuple[str, str], dict[str, int]] = {}
    for c in of:
        moves = facet_moves(None, listed(c))
        items += entry_items(c, moves.put, item_version(comment_to_item(c)))
        for (scope, value), deltas in moves.counters.items():
            into = counters.setdefault((scope.pk, counter_sk(value)), {})
            for name, delta in deltas.items():
                into[name] = into.get(name, 0) + delta
    for (pk, sk), numbers in sorted(counters.items()):
        item: Item = {"PK": {"S": pk}, "SK": {"S": sk}}
        item.update({name: {"N": str(n)} for name, n in sorted(numbers.items())})
        items.append(item)
    return items
