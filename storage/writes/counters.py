"""The counter moves of a write: ``S`` and ``S#<lang>`` by ADD, and the leaderboard entry.

An update expression cannot format a number, so a write that changes ``count_5`` conditions
on the value it read and sets the padded entry from it; a writer that lost the race learns
the new value from the cancellation (ALL_OLD) and tries again. A decrement conditions on the
counter being at least what it takes away: a counter below zero is impossible, and a
condition failure that is not a lost race means the counters drifted (never clamped).

An entry that stays keeps its shard (only ``storage.ops.reshard`` moves entries). A new entry
(the count leaving zero) goes to the product's home shard of the layout this process
remembers, and the transaction checks that the table's layout item still records that
layout; a writer that lost that race learns the layout from the cancellation and tries
again, so no entry is ever placed by a layout the table has left. Only a product's first
5-star comment makes that check, so the layout item is no hot spot.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass

from storage.base.errors import CounterInvariantBroken
from storage.base.expressions import Attr, Update, check_request, get_request
from storage.engine.leaderboard_layout import known_layout
from storage.engine.table import TableRef
from storage.model import rules, stats
from storage.model.comments import Comment, Status
from storage.model.items import QUEUE_COUNT_ATTR, number, queue_count_key
from storage.model.leaderboard import LAYOUT_KEY, LeaderLayout, layout_of
from storage.writes.transaction import CallBudget, Cancellation, Part

FIVE = stats.FIVE_ATTR
ALL = "stats"
LANGUAGE = "stats-language"
QUEUE = "queue-count"
LAYOUT = "leaders-layout"


# The moderation queue's length: one item, moved with every entry into and exit from
# PENDING, so moderationQueue's totalCount is exact without a scan.
def queue_parts(table: TableRef, before: Comment | None, after: Comment | None) -> list[Part]:
    """The queue length's move when a comment enters (+1) or leaves (-1) PENDING."""
    return queue_move(table, _pending(after) - _pending(before))


def queue_move(table: TableRef, delta: int) -> list[Part]:
    """The queue length's move by ``delta`` comments (no part for 0), by ADD; a decrement
    conditions on the count holding it (below zero would be drift)."""
    if not delta:
        return []
    u = Update()
    u.add(QUEUE_COUNT_ATTR, delta)
    if delta < 0:
        u.condition(Attr(QUEUE_COUNT_ATTR).ge(-delta))
    return [Part(QUEUE, {"Update": u.request(table.name, queue_count_key())})]


def _pending(c: Comment | None) -> int:
    return int(c is not None and c.status is Status.PENDING)


@dataclass(frozen=True, slots=True)
class Move:
    """A comment's counters moving by ``delta`` (1 to count it, -1 to uncount it)."""

    comment: Comment
    delta: int


def moves(before: Comment | None, after: Comment | None) -> list[Move]:
    """The counter moves of a transition from ``before`` to ``after`` (None: no comment):
    only PUBLISHED comments are counted, so the one read is uncounted and the one written
    counted exactly when each is published. An edit that keeps rating, language and status
    moves nothing."""
    out = []
    if before is not None and before.published:
        out.append(Move(before, -1))
    if after is not None and after.published:
        out.append(Move(after, 1))
    if len(out) == 2 and _counted_as(out[0].comment) == _counted_as(out[1].comment):
        return []
    return out


def _counted_as(c: Comment) -> tuple[str, int, bool]:
    return (c.language, c.rating, c.verified)


def moves_five(product_moves: list[Move]) -> bool:
    """Whether these moves change the product's 5-star count (and so its leaderboard)."""
    return sum(m.delta for m in product_moves if m.comment.rating == 5) != 0


@asynccontextmanager
async def five_star_turn(
    table: TableRef, product_id: str, product_moves: list[Move]
) -> AsyncIterator[None]:
    """Writes of one process that move a product's ``count_5`` take turns instead of
    racing; the transaction's condition on ``count_5`` still guards against other
    processes."""
    if not moves_five(product_moves):
        yield
        return
    async with table.five_star_locks.hold(product_id):
        yield


@dataclass(slots=True)
class FiveStars:
    """``count_5`` of a product's S item as this writer last saw it, and the leaderboard's
    layout a new entry is placed by (5-star moves only)."""

    count: int | None = None
    layout: LeaderLayout | None = None


async def learn_five(table: TableRef, product_id: str, budget: CallBudget, seen: FiveStars) -> None:
    """Read ``count_5`` (strongly consistent) before a write that moves it, and the layout
    when this process has not read it yet."""
    if table.leader_layout.known is None:
        budget.spend()
    seen.layout = await known_layout(table)
    budget.spend()
    response = await table.client.get_item(
        **get_request(
            table.name, stats.stats_key(product_id, None), projection=[FIVE], consistent=True
        )
    )
    seen.count = number(response.get("Item") or {}, FIVE)


def parts(table: TableRef, product_moves: list[Move], five: FiveStars) -> list[Part]:
    """The stats updates of one or more moves of the same product (one part per item)."""
    by_scope: dict[tuple[str, str | None], list[Move]] = {}
    for move in product_moves:
        for language in (None, move.comment.language):
            by_scope.setdefault((move.comment.product_id, language), []).append(move)
    updates = [
        _update(table, pid, language, scope_moves, five)
        for (pid, language), scope_moves in by_scope.items()
    ]
    found = [u for u in updates if u is not None]
    if _places_entry(product_moves, five):
        found.append(_layout_check(table, five))
    return found


def _places_entry(product_moves: list[Move], five: FiveStars) -> bool:
    """Whether the S item's entry comes into being (its 5-star count leaves zero)."""
    delta = sum(m.delta for m in product_moves if m.comment.rating == 5)
    return five.count == 0 and delta > 0


def _layout_check(table: TableRef, five: FiveStars) -> Part:
    """The check that the layout the new entry is placed by is still the table's."""
    if five.layout is None:
        raise AssertionError("a write that places an entry must know the layout")
    check = check_request(table.name, LAYOUT_KEY, five.layout.unchanged())
    return Part(LAYOUT, {"ConditionCheck": check})


def _part_name(language: str | None) -> str:
    return ALL if language is None else f"{LANGUAGE}:{language}"


def _update(
    table: TableRef,
    product_id: str,
    language: str | None,
    scope_moves: list[Move],
    five: FiveStars,
) -> Part | None:
    """The update of one stats item; None when the moves cancel out on it (an edit that
    changes the language only leaves the all-languages item as it is)."""
    u = Update()
    stats.name_scope(u, product_id, language)
    deltas = [0] * stats.TALLY_SIZE
    for move in scope_moves:
        deltas[move.comment.rating - 1] += move.delta
        if move.comment.verified:
            deltas[len(rules.RATINGS) + move.comment.rating - 1] += move.delta
    if not any(deltas):
        return None
    stats.add_counts(u, deltas)
    five_delta = deltas[4]
    if language is None and five_delta:
        if five.count is None:
            raise AssertionError("a write that moves count_5 must read it first")
        count = Attr(FIVE)
        same = count.eq(five.count)
        u.condition(count.not_exists() | same if five.count == 0 else same)
        if five.layout is None:
            raise AssertionError("a write that moves count_5 must read the layout first")
        stats.move_leader(u, five.count, five.count + five_delta, five.layout.home(product_id))
    request = u.request(table.name, stats.stats_key(product_id, language), return_old=True)
    return Part(_part_name(language), {"Update": request})


def lost_five_star_race(table: TableRef, cancel: Cancellation, five: FiveStars) -> bool:
    """True when the S item's condition failed because ``count_5`` moved since we read it,
    or the layout check failed because the leaderboard's layout changed; ``five`` then
    holds the new value. Any other counter condition failure is drift."""
    if cancel.failed(LAYOUT):
        five.layout = layout_of(cancel.item(LAYOUT))
        table.leader_layout.known = five.layout
        return True
    if not cancel.failed(ALL):
        return False
    observed = number(cancel.item(ALL), FIVE)
    if five.count is not None and observed != five.count:
        five.count = observed
        return True
    return False


def check_no_drift(cancel: Cancellation, product_id: str) -> None:
    """Raise when a counter's own condition failed (it would have gone below zero)."""
    if any(name.startswith(ALL) or name == QUEUE for name in cancel.reasons if cancel.failed(name)):
        raise_drift(product_id)


def raise_drift(product_id: str) -> None:
    raise CounterInvariantBroken(
        f"the counters of product {product_id} no longer match its comments"
    )
