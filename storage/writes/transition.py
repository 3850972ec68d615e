"""Any change of an existing comment, as one conditioned transaction: the comment item
rewritten whole (or deleted), the counter and leaderboard moves between what it was and
what it becomes, and whatever other items the transition writes.

Each kind of transition (``edit``, ``moderate``, ``report``, ``reply``, ``delete``) is a
``decide`` function from the comment as read to a ``Change``; this module reads, decides,
commits under the condition that the comment is still exactly as read, and on a lost race
reads again and decides again. Rewriting the whole item means an index key the comment no
longer belongs to (a listing while not PUBLISHED, the queue while not PENDING) is gone
with no separate step.

Helpful votes do not come through here: they move the counts by ``ADD``, conditioned only
on the voter's own item (``storage.writes.votes``, the one exception to the rule in
``storage.writes``), and move the version by ``ADD`` too, so a transition that read the
comment before a vote fails its condition and reads again instead of overwriting the
counts.
"""

from __future__ import annotations

import enum
from collections.abc import Callable
from dataclasses import dataclass

from storage.base.errors import CommentNotFound, StorageError, WriteConflict
from storage.base.expressions import delete_request, put_request
from storage.engine.retry import DEFAULT_BACKOFF, Backoff
from storage.engine.table import TableRef
from storage.model import rules
from storage.model.comments import Comment
from storage.model.items import comment_key, comment_to_item
from storage.writes import counters
from storage.writes.facet_parts import facet_parts
from storage.writes.membership import (
    enters_group,
    learned,
    membership_check,
    membership_for_write,
    placed,
)
from storage.writes.state import Stored, read_stored
from storage.writes.transaction import CallBudget, Part, transact

COMMENT = "comment"


@dataclass(frozen=True, slots=True)
class Change:
    """What a transition makes of a comment as read."""

    after: Comment | None  # None: the comment is deleted
    # Other items written in the same transaction (a report, an author's slot).
    parts: tuple[Part, ...] = ()
    # Parts whose own condition failing means the transition must not happen, with the
    # error that says why (a repeated report).
    refusals: tuple[tuple[str, Callable[[], StorageError]], ...] = ()
    # Whether the comment holds its author's slot afterwards (None: as it did). An erasure
    # gives the slot up with the identity (``storage.writes.erase``).
    holds_slot: bool | None = None


Decide = Callable[[Stored], Change]


@dataclass(frozen=True, slots=True)
class Applied:
    """A committed transition: the comment as it was, and as it now is (None: deleted)."""

    before: Stored
    after: Comment | None


class _Outcome(enum.Enum):
    COMMITTED = "committed"
    CHANGED = "changed"  # the comment is not what we read: read again
    TRANSIENT = "transient"  # conflict or throttling: pause, then again


async def apply(
    table: TableRef,
    comment_id: str,
    decide: Decide,
    *,
    backoff: Backoff = DEFAULT_BACKOFF,
    budget: CallBudget | None = None,
) -> Applied:
    """Read the comment, ``decide`` what it becomes, and commit that with its counter moves
    under the condition that the comment is still as read; ``CommentNotFound`` when it
    does not exist. ``decide`` may raise to refuse (and is called again after every lost
    race, so it must not have effects). ``budget``: the calls it may make, when a caller
    shares its own among several steps."""
    rules.validate_comment_id(comment_id)
    budget = CallBudget() if budget is None else budget
    transient = 0
    while True:
        stored = await read_stored(table, comment_id, budget)
        if stored is None:
            raise CommentNotFound(f"comment {comment_id} does not exist")
        change = decide(stored)
        if change.after == stored.comment and not change.parts and change.holds_slot is None:
            return Applied(stored, stored.comment)  # nothing to write
        product_moves = counters.moves(stored.comment, change.after)
        async with counters.five_star_turn(table, stored.comment.product_id, product_moves):
            outcome, after = await _commit(table, stored, change, product_moves, budget, backoff)
        if outcome is _Outcome.COMMITTED:
            return Applied(stored, after)
        if outcome is _Outcome.TRANSIENT:
            transient += 1
            if transient >= backoff.attempts:
                raise WriteConflict("storage kept rejecting the write; retry later")
            await backoff.sleep(transient)


async def _commit(
    table: TableRef,
    stored: Stored,
    change: Change,
    product_moves: list[counters.Move],
    budget: CallBudget,
    backoff: Backoff,
) -> tuple[_Outcome, Comment | None]:
    five = counters.FiveStars()
    if counters.moves_five(product_moves):
        await counters.learn_five(table, stored.comment.product_id, budget, five)
    # A comment becoming published counts in its product's group as the membership says,
    # checked in the same transaction (storage.writes.membership).
    membership = None
    if enters_group(stored.comment, change.after):
        membership = await membership_for_write(table, stored.comment.product_id, budget)
    stale = 0
    while True:
        after = placed(stored.comment, change.after, membership)
        parts = [_comment_part(table, stored, after, change.holds_slot)]
        parts += counters.parts(table, product_moves, five)
        parts += counters.queue_parts(table, stored.comment, after)
        parts += facet_parts(table, stored.comment, after, version=stored.version + 1)
        if membership is not None:
            parts.append(membership_check(table, membership))
        parts += change.parts
        cancel = await transact(table, parts, budget)
        if cancel is None:
            return _Outcome.COMMITTED, after
        if cancel.failed(COMMENT):
            return _Outcome.CHANGED, after
        for name, refusal in change.refusals:
            if cancel.failed(name):
                raise refusal()
        lost_group = membership is not None and learned(table, cancel, membership)
        if lost_group:
            membership = lost_group
        if lost_group or counters.lost_five_star_race(table, cancel, five):
            stale += 1
            if stale > 2:
                await backoff.sleep(min(stale - 2, 3))
            continue
        counters.check_no_drift(cancel, stored.comment.product_id)
        if cancel.any_condition_failed:
            # Another part's own bound failed (an author's slot count below what this
            # comment holds): the counts drifted, which no retry mends.
            counters.raise_drift(stored.comment.product_id)
        return _Outcome.TRANSIENT, after


def _comment_part(
    table: TableRef, stored: Stored, after: Comment | None, holds_slot: bool | None
) -> Part:
    if after is None:
        delete = delete_request(
            table.name, comment_key(stored.comment.comment_id), stored.unchanged()
        )
        return Part(COMMENT, {"Delete": delete})
    slot = stored.holds_slot if holds_slot is None else holds_slot
    item = comment_to_item(after, version=stored.version + 1, holds_slot=slot)
    return Part(COMMENT, {"Put": put_request(table.name, item, stored.unchanged())})
