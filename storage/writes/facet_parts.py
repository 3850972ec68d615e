"""The facet items' parts of a transition (``storage.model.facets``): every entry to put or
delete and every counter item to move, in the comment's own transaction, so they are
exact whenever the comment is.

Entries are derived from the comment as it becomes, under the comment's version condition
in the same transaction: they need no condition of their own. A counter's decrement
conditions on the count holding what it takes away (below zero would be drift, which no
retry mends: the transition then raises it, as for the stats items).
"""

from __future__ import annotations

from dataclasses import replace

from storage.base.expressions import Attr, Update, delete_request, put_request
from storage.engine.table import TableRef
from storage.model.comments import Comment
from storage.model.facets import Listed, Scope, ScopeKind, counter_sk, facet_moves
from storage.model.groups import COUNT_ATTR, held_key
from storage.model.items import entry_items, entry_key
from storage.writes.transaction import Part

ENTRY = "facet entry"
COUNTER = "facet counter"
HELD = "held count"


def listed(comment: Comment | None) -> Listed | None:
    """The comment as facets count it: None unless published; in its product's scope, and
    in the group it stores (``Comment.group_id``) when it has one."""
    if comment is None or not comment.published:
        return None
    return Listed.of(
        language=comment.language,
        rating=comment.rating,
        verified=comment.verified,
        incentivized=comment.incentivized,
        facets=comment.facets,
        product=Scope.product(comment.product_id),
        group=None if comment.group_id is None else Scope.group(comment.group_id),
    )


def counted_in(comment: Comment | None) -> str | None:
    """The group a comment counts in: its stored group while published, else none."""
    if comment is None or not comment.published:
        return None
    return comment.group_id


def facet_parts(
    table: TableRef, before: Comment | None, after: Comment | None, *, version: int
) -> list[Part]:
    """The parts that take the facet items from ``before`` to ``after`` (None: no comment),
    the comment being written at ``version``, the count of the product's comments each
    group holds included."""
    moves = facet_moves(listed(before), listed(after))
    parts = held_parts(table, before, after)
    if not (moves.put or moves.delete or moves.counters):
        return parts
    either = after if after is not None else before
    assert either is not None  # moves come from a comment that is, or was
    if (
        before is not None
        and after is not None
        and before.group_id != after.group_id
        and replace(before, group_id=after.group_id) == after
    ):
        # A group move: what the product's entries copy is unchanged, so they stay (they
        # copy an older version, which only lets a vote's follow-up bring their counts up).
        put = frozenset(p for p in moves.put if p[0].kind is ScopeKind.GROUP)
        moves = replace(moves, put=put)
    if moves.put:
        assert after is not None  # entries are put for the comment as it becomes
        for n, entry in enumerate(entry_items(after, sorted(moves.put, key=_order), version)):
            parts.append(Part(f"{ENTRY} {n}", {"Put": put_request(table.name, entry)}))
    for n, (scope, value) in enumerate(sorted(moves.delete, key=_order)):
        key = entry_key(either.comment_id, scope, value)
        parts.append(Part(f"{ENTRY} -{n}", {"Delete": delete_request(table.name, key)}))
    for n, ((scope, value), deltas) in enumerate(sorted(moves.counters.items(), key=_first)):
        u = Update()
        for name, delta in sorted(deltas.items()):
            u.add(name, delta)
            if delta < 0:
                u.condition(Attr(name).ge(-delta))
        key = {"PK": {"S": scope.pk}, "SK": {"S": counter_sk(value)}}
        parts.append(Part(f"{COUNTER} {n}", {"Update": u.request(table.name, key)}))
    return parts


def held_parts(table: TableRef, before: Comment | None, after: Comment | None) -> list[Part]:
    """The moves of the counts groups hold of the comment's product (``HELD#<group>`` in
    the product's partition): out of the group it counted in, into the one it counts in.
    A decrement conditions on the count holding it (below zero would be drift)."""
    was, now = counted_in(before), counted_in(after)
    if was == now:
        return []
    either = after if after is not None else before
    assert either is not None
    parts = []
    for group, delta in ((was, -1), (now, 1)):
        if group is None:
            continue
        u = Update()
        u.add(COUNT_ATTR, delta)
        if delta < 0:
            u.condition(Attr(COUNT_ATTR).ge(1))
        key = held_key(either.product_id, group)
        parts.append(Part(f"{HELD} {delta:+d}", {"Update": u.request(table.name, key)}))
    return parts


def _order(pair: tuple[Scope, object]) -> tuple[str, str]:
    scope, value = pair
    return scope.token, str(value)


def _first(item: tuple[tuple[Scope, object], object]) -> tuple[str, str]:
    return _order(item[0])
