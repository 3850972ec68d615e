"""The counter moves of a write: ``S`` and ``S#<lang>`` by ADD, and the leaderboard entry.

An update expression cannot format a number, so a write that changes ``count_5`` conditions
on the value it read and sets the padded entry from it; a writer that lost the race learns
the new value from the cancellation (ALL_OLD) and tries again. A decrement conditions on the
counter being at least what it takes away: a counter below zero is impossible, and a
condition failure that is not a lost race means the counters drifted (never clamped).
"""

from __future__ import annotations

from dataclasses import dataclass

from storage import keys, stats
from storage.errors import CounterInvariantBroken
from storage.expressions import Attr, Update, get_request
from storage.items import number
from storage.model import Comment
from storage.table import TableRef
from storage.writes.transaction import CallBudget, Cancellation, Part

FIVE = stats.FIVE_ATTR
ALL = "stats"
LANGUAGE = "stats-language"


@dataclass(frozen=True, slots=True)
class Move:
    """A comment's counters moving by ``delta`` (1 to count it, -1 to uncount it)."""

    comment: Comment
    delta: int


@dataclass(slots=True)
class FiveStars:
    """``count_5`` of a product's S item as this writer last saw it (5-star moves only)."""

    count: int | None = None


async def learn_five(table: TableRef, product_id: str, budget: CallBudget, seen: FiveStars) -> None:
    """Read ``count_5`` (strongly consistent) before a write that moves it."""
    budget.spend()
    response = await table.client.get_item(
        **get_request(
            table.name, stats.stats_key(product_id, None), projection=[FIVE], consistent=True
        )
    )
    seen.count = number(response.get("Item") or {}, FIVE)


def parts(table: TableRef, moves: list[Move], five: FiveStars) -> list[Part]:
    """The stats updates of one or more moves of the same product (one part per item)."""
    by_scope: dict[tuple[str, str | None], list[Move]] = {}
    for move in moves:
        for language in (None, move.comment.language):
            by_scope.setdefault((move.comment.product_id, language), []).append(move)
    return [
        _update(table, pid, language, scope_moves, five)
        for (pid, language), scope_moves in by_scope.items()
    ]


def _part_name(language: str | None) -> str:
    return ALL if language is None else f"{LANGUAGE}:{language}"


def _update(
    table: TableRef, product_id: str, language: str | None, moves: list[Move], five: FiveStars
) -> Part:
    u = Update()
    stats.name_scope(u, product_id, language)
    deltas = [0] * len(keys.RATINGS)
    for move in moves:
        deltas[move.comment.rating - 1] += move.delta
    stats.add_counts(u, deltas)
    five_delta = deltas[4]
    if language is None and five_delta:
        if five.count is None:
            raise AssertionError("a write that moves count_5 must read it first")
        count = Attr(FIVE)
        same = count.eq(five.count)
        u.condition(count.not_exists() | same if five.count == 0 else same)
        stats.set_leader(u, five.count + five_delta)
    request = u.request(table.name, stats.stats_key(product_id, language), return_old=True)
    return Part(_part_name(language), {"Update": request})


def lost_five_star_race(cancel: Cancellation, five: FiveStars) -> bool:
    """True when the S item's condition failed because ``count_5`` moved since we read it;
    ``five`` then holds the new value. Any other counter condition failure is drift."""
    if not cancel.failed(ALL):
        return False
    observed = number(cancel.item(ALL), FIVE)
    if five.count is not None and observed != five.count:
        five.count = observed
        return True
    return False


def check_no_drift(cancel: Cancellation, product_id: str) -> None:
    """Raise when a counter's own condition failed (it would have gone below zero)."""
    if any(name.startswith(ALL) for name in cancel.reasons if cancel.failed(name)):
        raise_drift(product_id)


def raise_drift(product_id: str) -> None:
    raise CounterInvariantBroken(
        f"the counters of product {product_id} no longer match its comments"
    )
