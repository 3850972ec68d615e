"""A product's group: reading it for a write, the check that the write still sees it, and
changing it.

Every write that places a comment in a group (one that makes it published: a create
under POST moderation, an approval; and a group move) takes the product's membership (as
this process remembers it, else read) and checks its epoch in the same transaction; a
lost race, or a memory gone stale, learns the membership from the cancellation (ALL_OLD)
and places the comment again. A write that keeps a comment published keeps the group the
comment stores (its version condition covers it), and an unpublished comment counts in
no group. So once a change of membership commits, no write
places a comment of the product in any other group.
"""

from __future__ import annotations

from dataclasses import replace

from storage.base.bounded import BoundedCache
from storage.base.errors import CounterInvariantBroken, WriteConflict
from storage.base.expressions import Attr, Update, check_request, delete_request, put_request
from storage.engine.retry import DEFAULT_BACKOFF, Backoff
from storage.engine.table import TableRef
from storage.model.comments import Comment
from storage.model.groups import (
    COUNT_ATTR,
    Membership,
    member_key,
    members_key,
    membership_key,
)
from storage.model.rules import validate_product_id
from storage.writes.transaction import CallBudget, Cancellation, Part, transact

MEMBERSHIP = "membership"
# The memberships a process remembers, within this many bytes: each charged its ids'
# UTF-8 bytes and a fixed overhead (about 40,000 products at the longest ids).
MEMORY_BYTES = 16 * 1024 * 1024
_ENTRY_OVERHEAD = 150


class MembershipMemory:
    """The memberships this process last saw, a hint that writes check (the epoch in the
    transaction) and never trust alone: a stale one costs a cancelled transaction whose
    ALL_OLD image is the membership as it is. Bounded in bytes, least recently used out."""

    def __init__(self, max_bytes: int = MEMORY_BYTES) -> None:
        self._kept: BoundedCache[str, Membership] = BoundedCache(max_bytes)

    def recall(self, product_id: str) -> Membership | None:
        return self._kept.get(product_id)

    def remember(self, membership: Membership) -> None:
        ids = membership.product_id + (membership.group_id or "")
        charge = _ENTRY_OVERHEAD + len(ids.encode())
        self._kept.put(membership.product_id, membership, charge)


async def membership_for_write(
    table: TableRef, product_id: str, budget: CallBudget | None = None
) -> Membership:
    """The membership to place a comment by: remembered by this process, else read (and
    remembered). The write's check of its epoch is what makes it safe."""
    memory = table.memory(MembershipMemory)
    known = memory.recall(product_id)
    if known is None:
        known = await read_membership(table, product_id, budget)
    return known


async def read_membership(
    table: TableRef, product_id: str, budget: CallBudget | None = None
) -> Membership:
    """The product's membership, strongly consistent (epoch 0: never set)."""
    if budget is not None:
        budget.spend()
    response = await table.client.get_item(
        TableName=table.name, Key=membership_key(product_id), ConsistentRead=True
    )
    found = Membership.of(product_id, response.get("Item"))
    table.memory(MembershipMemory).remember(found)
    return found


def membership_check(table: TableRef, membership: Membership) -> Part:
    """The check that the product's membership is still the one a write placed by."""
    key = membership_key(membership.product_id)
    check = check_request(table.name, key, membership.unchanged())
    return Part(MEMBERSHIP, {"ConditionCheck": check})


def learned(table: TableRef, cancel: Cancellation, membership: Membership) -> Membership | None:
    """The membership a failed check found, remembered (None: the check did not fail)."""
    if not cancel.failed(MEMBERSHIP):
        return None
    found = Membership.of(membership.product_id, cancel.item(MEMBERSHIP))
    table.memory(MembershipMemory).remember(found)
    return found


def enters_group(before: Comment | None, after: Comment | None) -> bool:
    """Whether the transition makes the comment published (so it must be placed)."""
    return after is not None and after.published and (before is None or not before.published)


def placed(
    before: Comment | None, after: Comment | None, membership: Membership | None
) -> Comment | None:
    """``after`` with the group it counts in: the membership's when it becomes published,
    the one it stores while it stays published, none while unpublished."""
    if after is None:
        return None
    if not after.published:
        return after if after.group_id is None else replace(after, group_id=None)
    if enters_group(before, after):
        assert membership is not None, "a comment becoming published needs its membership"
        return replace(after, group_id=membership.group_id)
    return after


async def change_membership(
    table: TableRef,
    product_id: str,
    group_id: str | None,
    *,
    budget: CallBudget | None = None,
    backoff: Backoff = DEFAULT_BACKOFF,
) -> tuple[Membership, Membership]:
    """Put the product in ``group_id`` (None: in no group) in one transaction conditioned
    on the epoch read: the membership (next epoch, a move begun), the member items and
    both groups' member counts. Returns (before, after); unchanged when it already is."""
    validate_product_id(product_id)
    if group_id is not None:
        validate_product_id(group_id)
    budget = CallBudget() if budget is None else budget
    transient = 0
    while True:
        before = await read_membership(table, product_id, budget)
        if before.group_id == group_id:
            return before, before
        after = before.changed_to(group_id)
        parts = [
            Part(
                MEMBERSHIP,
                {"Put": put_request(table.name, after.to_item(), before.unchanged())},
            )
        ]
        if before.group_id is not None:
            old = before.group_id
            gone = delete_request(table.name, member_key(old, product_id), Attr("PK").exists())
            parts.append(Part("member out", {"Delete": gone}))
            parts.append(_members_move(table, old, -1))
        if group_id is not None:
            new = put_request(
                table.name,
                {**member_key(group_id, product_id), "productId": {"S": product_id}},
                Attr("PK").not_exists(),
            )
            parts.append(Part("member in", {"Put": new}))
            parts.append(_members_move(table, group_id, 1))
        cancel = await transact(table, parts, budget)
        if cancel is None:
            table.memory(MembershipMemory).remember(after)
            return before, after
        if cancel.failed(MEMBERSHIP):
            continue  # changed since we read it: read again
        if cancel.any_condition_failed:
            raise CounterInvariantBroken(
                f"the member items of product {product_id} disagree with its membership "
                "(verify-stats --repair mends them)"
            )
        transient += 1
        if transient >= backoff.attempts:
            raise WriteConflict("storage kept rejecting the change; retry later")
        await backoff.sleep(transient)


def _members_move(table: TableRef, group_id: str, delta: int) -> Part:
    u = Update()
    u.add(COUNT_ATTR, delta)
    if delta < 0:
        u.condition(Attr(COUNT_ATTR).ge(1))
    name = "members out" if delta < 0 else "members in"
    return Part(name, {"Update": u.request(table.name, members_key(group_id))})
