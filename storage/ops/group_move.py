"""Moving a product between groups: resumable, race-safe, with both groups exact at every
moment.

Step one changes the membership in one transaction (the next epoch, ``moving`` set:
``storage.writes.membership``). From that commit on, no write places a comment of the
product in any group but the new one. Then every published comment whose stored group is
not the new one is moved, one transaction per comment (``storage.writes.transition``):
the comment rewritten with its new group under its version condition, its group entries
and counters out of the old group and into the new (``facet_moves``), the counts the two
groups hold of the product, and a check of the membership's epoch. A comment therefore
counts in exactly one group at every commit: the one it stores.

Completion is certified, not assumed: the product's published comments are found through
an eventually consistent index, so one published just before the change may not show
yet. What the new group holds of the product (``HELD#<group>``) and the product's
published total (``count_total`` of its stats item) move in the same transactions as the
comments; what other groups (or no group) hold of it can only fall once the membership
changed. So the move is complete exactly when the new group holds as many as the total,
and the transaction that clears ``moving`` checks that (and that the epoch is still the
one moved to), deleting the emptied held items of the old groups. Until then a pass reads
the index again after a pause; after ``passes`` it stops (``GroupMoveUnfinished``), and
running the move again resumes it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, replace

from storage.base.errors import CommentNotFound, GroupChanged, GroupMoveUnfinished
from storage.base.expressions import (
    Attr,
    Condition,
    Update,
    check_request,
    delete_request,
    query_request,
)
from storage.engine.batch import get_together
from storage.engine.retry import DEFAULT_BACKOFF, Backoff
from storage.engine.table import TableRef
from storage.model import keys
from storage.model.groups import (
    COUNT_ATTR,
    HELD_PREFIX,
    MOVING_ATTR,
    Membership,
    held_key,
    membership_key,
)
from storage.model.indexes import Index
from storage.model.items import COMMENT_GROUP_ATTR, number
from storage.model.stats import TOTAL_ATTR, stats_key
from storage.writes.membership import (
    MEMBERSHIP,
    change_membership,
    membership_check,
    read_membership,
)
from storage.writes.state import Stored
from storage.writes.transaction import CallBudget, Part, transact
from storage.writes.transition import Change, apply

Progress = Callable[[str], None]
PAGE = 100
# Certification deletes the old groups' emptied held items in its own transaction.
MAX_CLEARED = 80


@dataclass(frozen=True, slots=True)
class MoveResult:
    """What one run of a move did."""

    product_id: str
    group_id: str | None
    changed: bool  # this run changed the membership (False: resumed or already there)
    moved: int  # comments this run moved
    passes: int  # reads of the product's comments
    total: int  # the product's published comments when certified

    def describe(self) -> str:
        where = self.group_id or "no group"
        return (
            f"{self.product_id}: in {where}, all {self.total} published comments counted "
            f"there; {self.moved} moved in {self.passes} pass(es)"
        )


async def move_product(
    table: TableRef,
    product_id: str,
    group_id: str | None,
    *,
    progress: Progress | None = None,
    concurrency: int = 8,
    passes: int = 8,
    pause: float = 0.25,
    backoff: Backoff = DEFAULT_BACKOFF,
) -> MoveResult:
    """Put the product in ``group_id`` (None: no group) and move its published comments
    there; returns once the group provably holds all of them (``GroupMoveUnfinished`` when
    it does not after ``passes``: run it again). Resumes a move left unfinished."""
    say = progress or (lambda _line: None)
    before, after = await change_membership(table, product_id, group_id, backoff=backoff)
    changed = before != after
    if changed:
        say(
            f"{product_id}: membership {before.group_id or 'none'} -> "
            f"{after.group_id or 'none'} (epoch {after.epoch})"
        )
    elif after.moving:
        say(f"{product_id}: resuming the move to {after.group_id or 'no group'}")
    result = await finish_move(
        table,
        product_id,
        progress=say,
        concurrency=concurrency,
        passes=passes,
        pause=pause,
        backoff=backoff,
    )
    return replace(result, changed=changed)


async def finish_move(
    table: TableRef,
    product_id: str,
    *,
    progress: Progress | None = None,
    concurrency: int = 8,
    passes: int = 8,
    pause: float = 0.25,
    backoff: Backoff = DEFAULT_BACKOFF,
) -> MoveResult:
    """Move every published comment of the product into the group its membership names,
    until that is certified (a membership that changes meanwhile is followed)."""
    say = progress or (lambda _line: None)
    moved = 0
    for n in range(1, passes + 1):
        membership = await read_membership(table, product_id)
        total = await _certify(table, membership)
        if total is not None:
            say(f"{product_id}: done, {membership.group_id or 'no group'} holds all {total}")
            return MoveResult(product_id, membership.group_id, False, moved, n - 1, total)
        if n > 1:
            await asyncio.sleep(pause * (n - 1))  # an index catching up
        try:
            moved += await _pass(table, membership, n, say, concurrency, backoff)
        except GroupChanged:
            say(f"{product_id}: the membership changed meanwhile; following it")
    membership = await read_membership(table, product_id)
    total = await _certify(table, membership)
    if total is not None:
        return MoveResult(product_id, membership.group_id, False, moved, passes, total)
    raise GroupMoveUnfinished(
        f"product {product_id}: {membership.group_id or 'no group'} does not yet hold all its "
        f"published comments after {passes} passes; run the move again to finish it"
    )


async def _pass(
    table: TableRef,
    membership: Membership,
    number_: int,
    say: Progress,
    concurrency: int,
    backoff: Backoff,
) -> int:
    """One read of the product's published comments (the all-comments index, eventually
    consistent), moving each that counts elsewhere; the comments it moved."""
    pid, target = membership.product_id, membership.group_id
    gate = asyncio.Semaphore(max(1, concurrency))
    read = moved = 0

    async def one(comment_id: str) -> bool:
        async with gate:
            return await move_comment(table, comment_id, membership, backoff=backoff)

    params = query_request(
        table.name,
        index=Index.ALL.value,
        key=Attr(Index.ALL.partition_attr).eq(keys.all_pk(pid)),
        forward=True,
        limit=PAGE,
        projection=["commentId", COMMENT_GROUP_ATTR],
    )
    while True:
        page = await table.client.query(**params)
        items = page.get("Items", [])
        read += len(items)
        elsewhere = [
            i["commentId"]["S"] for i in items if i.get(COMMENT_GROUP_ATTR, {}).get("S") != target
        ]
        done = await asyncio.gather(*(one(c) for c in elsewhere), return_exceptions=True)
        moved += sum(d is True for d in done)
        for outcome in done:
            if isinstance(outcome, BaseException):
                raise outcome  # every move of the page has ended: none left running
        say(f"{pid}: pass {number_}: {read} published comments read, {moved} moved")
        if "LastEvaluatedKey" not in page:
            return moved
        params["ExclusiveStartKey"] = page["LastEvaluatedKey"]


async def move_comment(
    table: TableRef, comment_id: str, membership: Membership, *, backoff: Backoff = DEFAULT_BACKOFF
) -> bool:
    """Move one comment into the membership's group, if it is published and counts
    elsewhere: its group entries, counters and held counts, under its version and the
    membership's epoch (``GroupChanged`` when that moved on). True when it moved."""
    target = membership.group_id

    def decide(stored: Stored) -> Change:
        c = stored.comment
        if not c.published or c.group_id == target:
            return Change(c)  # moved, unpublished or deleted since the index showed it
        return Change(
            replace(c, group_id=target),
            parts=(membership_check(table, membership),),
            refusals=((MEMBERSHIP, _changed(membership)),),
        )

    try:
        applied = await apply(table, comment_id, decide, backoff=backoff)
    except CommentNotFound:
        return False
    after = applied.after
    return after is not None and after.group_id != applied.before.comment.group_id


def _changed(membership: Membership) -> Callable[[], GroupChanged]:
    def error() -> GroupChanged:
        return GroupChanged(f"product {membership.product_id} changed group")

    return error


async def held_counts(table: TableRef, product_id: str) -> dict[str, int]:
    """What each group holds of the product (strongly consistent)."""
    # Every sort key that starts with HELD# ('$' follows '#').
    held = Attr("SK").between(HELD_PREFIX, HELD_PREFIX[:-1] + "$")
    params = query_request(
        table.name,
        index=None,
        key=Attr("PK").eq(keys.product_pk(product_id)) & held,
        forward=True,
        limit=100,
    )
    params["ConsistentRead"] = True
    found: dict[str, int] = {}
    while True:
        page = await table.client.query(**params)
        for item in page.get("Items", []):
            found[item["SK"]["S"].removeprefix(HELD_PREFIX)] = number(item, COUNT_ATTR)
        if "LastEvaluatedKey" not in page:
            return found
        params["ExclusiveStartKey"] = page["LastEvaluatedKey"]


async def _certify(table: TableRef, membership: Membership) -> int | None:
    """Clear ``moving`` if the membership's group holds every published comment of the
    product, checked in the same transaction; the total when the move is complete (or
    was already), None when it is not yet."""
    pid, target = membership.product_id, membership.group_id
    held = await held_counts(table, pid)
    # The total and what the group holds, as of one moment. Read apart, a comment leaving
    # the group between the two reads and one arriving in no group (an import, which the
    # group move places after) would make them equal with the newcomer left out. What the
    # other groups hold only falls, so their counts read above may only be too high.
    wanted = [stats_key(pid, None)] + ([] if target is None else [held_key(pid, target)])
    stats, *in_target = await get_together(table, wanted)
    total = number(stats or {}, TOTAL_ATTR)
    if target is not None:
        held[target] = number(in_target[0] or {}, COUNT_ATTR)
    others = {g: n for g, n in held.items() if g != target}
    if target is not None and held.get(target, 0) != total:
        return None
    if any(others.values()):
        return None
    if not membership.moving and not others:
        return total
    u = Update()
    u.remove(MOVING_ATTR)
    u.condition(membership.unchanged())
    parts = [Part(MEMBERSHIP, {"Update": u.request(table.name, membership_key(pid))})]
    same = _count_is(Attr(TOTAL_ATTR), total)
    parts.append(
        Part("total", {"ConditionCheck": check_request(table.name, stats_key(pid, None), same)})
    )
    if target is not None:
        holds = _count_is(Attr(COUNT_ATTR), total)
        check = check_request(table.name, held_key(pid, target), holds)
        parts.append(Part("held", {"ConditionCheck": check}))
    for n, group in enumerate(sorted(others)[:MAX_CLEARED]):
        empty = delete_request(table.name, held_key(pid, group), _count_is(Attr(COUNT_ATTR), 0))
        parts.append(Part(f"emptied {n}", {"Delete": empty}))
    if await transact(table, parts, CallBudget(1)) is not None:
        return None  # something moved since the reads: the next pass looks again
    return total


def _count_is(count: Attr, n: int) -> Condition:
    return count.eq(n) if n else count.not_exists() | count.eq(0)
