"""``verify-stats`` for product groups: what each group holds of each product recounted
from the comments, each group's member items against the memberships, and its member
count against them; repairs each on the condition that what it fixes is still as
scanned. A group's entries and counters are facet items, checked by
``storage.ops.facet_check`` from the group each comment stores.

``GroupTally`` sees the items of ``storage.ops.verify``'s one scan; nothing scans twice.
"""

from __future__ import annotations

import enum
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from storage.base.errors import ConditionFailed
from storage.base.expressions import (
    Attr,
    Update,
    check_request,
    delete_request,
    put_request,
)
from storage.base.types import Item
from storage.engine.table import TableRef
from storage.model import keys
from storage.model.comments import Comment
from storage.model.groups import (
    COUNT_ATTR,
    MEMBER_PREFIX,
    Membership,
    held_key,
    is_held_item,
    is_member_item,
    is_members_item,
    is_membership_item,
    member_key,
    members_key,
    membership_key,
)
from storage.model.items import number
from storage.writes.transaction import CallBudget, Part, transact


class GroupDriftKind(enum.Enum):
    HELD = "comments a group holds of a product"
    MEMBERS = "a group's member count"
    MEMBER = "a member item"


@dataclass(frozen=True, slots=True)
class GroupDrift:
    """A held count or member count that disagrees (``stored``/``expected`` counts), or
    a member item missing (``expected`` 1) or left over (``expected`` 0)."""

    kind: GroupDriftKind
    group_id: str
    product_id: str | None  # None for a group's member count
    stored: int | None  # None: no item
    expected: int
    membership: Item | None = None  # a member item's product's membership as scanned

    def describe(self) -> str:
        where = f"group {self.group_id}" + (
            f", product {self.product_id}" if self.product_id else ""
        )
        if self.kind is GroupDriftKind.MEMBER:
            return f"{where}: member item {'missing' if self.expected else 'left over'}"
        return f"{where}: {self.kind.value} {self.stored} != {self.expected}"

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": self.kind.name,
            "groupId": self.group_id,
            "productId": self.product_id,
            "stored": self.stored,
            "expected": self.expected,
            "description": self.describe(),
        }


@dataclass
class GroupTally:
    """What one scan saw of groups, and what the comments and memberships say."""

    memberships: dict[str, tuple[Item, Membership]] = field(default_factory=dict)
    members: set[tuple[str, str]] = field(default_factory=set)  # (group, product)
    member_counts: dict[str, int] = field(default_factory=dict)
    held: dict[tuple[str, str], int] = field(default_factory=dict)  # (product, group)
    expected_held: Counter[tuple[str, str]] = field(default_factory=Counter)
    ungrouped: set[str] = field(default_factory=set)  # products with comments in no group

    def see(self, item: Item) -> bool:
        """Take ``item`` if it is a group item (True), else leave it to the caller."""
        pk, sk = item["PK"]["S"], item["SK"]["S"]
        if is_membership_item(item):
            pid = keys.product_id_from_pk(pk)
            self.memberships[pid] = (item, Membership.of(pid, item))
        elif is_held_item(item):
            pid = keys.product_id_from_pk(pk)
            self.held[(pid, sk.split("#", 1)[1])] = number(item, COUNT_ATTR)
        elif is_member_item(item):
            self.members.add((pk.split("#", 1)[1], sk.removeprefix(MEMBER_PREFIX)))
        elif is_members_item(item):
            self.member_counts[pk.split("#", 1)[1]] = number(item, COUNT_ATTR)
        else:
            return False
        return True

    def comment(self, comment: Comment) -> None:
        """A comment of the scan: a published one counts in the group it stores."""
        if not comment.published:
            return
        if comment.group_id is None:
            self.ungrouped.add(comment.product_id)
        else:
            self.expected_held[(comment.product_id, comment.group_id)] += 1

    @property
    def moving(self) -> tuple[str, ...]:
        """Products whose move is not certified complete, or with published comments that
        count outside their group (written by an import, which places none yet): a group
        move of the product finishes them."""

        def group(pid: str) -> str | None:
            found = self.memberships.get(pid)
            return None if found is None else found[1].group_id

        flagged = {p for p, (_, m) in self.memberships.items() if m.moving}
        flagged |= {p for p, g in self.expected_held if g != group(p)}
        flagged |= {p for p in self.ungrouped if group(p) is not None}
        return tuple(sorted(flagged))

    def drifts(self) -> tuple[GroupDrift, ...]:
        found = []
        for pid, gid in sorted(self.held.keys() | self.expected_held.keys()):
            stored, want = self.held.get((pid, gid)), self.expected_held.get((pid, gid), 0)
            if (stored or 0) != want:
                found.append(GroupDrift(GroupDriftKind.HELD, gid, pid, stored, want))
        expected_members = {
            (m.group_id, pid) for pid, (_, m) in self.memberships.items() if m.group_id
        }
        for gid, pid in sorted(self.members ^ expected_members):
            raw = self.memberships.get(pid, (None, None))[0]
            want = int((gid, pid) in expected_members)
            found.append(GroupDrift(GroupDriftKind.MEMBER, gid, pid, 1 - want, want, raw))
        counted = Counter(gid for gid, _ in expected_members)
        for gid in sorted(self.member_counts.keys() | counted.keys()):
            stored_n, want_n = self.member_counts.get(gid), counted.get(gid, 0)
            if (stored_n or 0) != want_n:
                found.append(GroupDrift(GroupDriftKind.MEMBERS, gid, None, stored_n, want_n))
        return tuple(found)


async def repair_groups(table: TableRef, drifts: tuple[GroupDrift, ...]) -> tuple[int, int]:
    """Rewrite each drifting item on the condition that it (and, for a member item, its
    product's membership) is still as scanned; (repaired, skipped)."""
    repaired = skipped = 0
    for drift in drifts:
        if drift.kind is GroupDriftKind.MEMBER:
            ok = await transact(table, _member_repair(table, drift), CallBudget(1)) is None
        else:
            try:
                await table.client.update_item(**_count_repair(table, drift))
                ok = True
            except ConditionFailed:
                ok = False
        repaired += ok
        skipped += not ok
    return repaired, skipped


def _count_repair(table: TableRef, drift: GroupDrift) -> dict[str, Any]:
    u = Update()
    u.set(COUNT_ATTR, drift.expected)
    n = Attr(COUNT_ATTR)
    u.condition(n.not_exists() if drift.stored is None else n.eq(drift.stored))
    if drift.kind is GroupDriftKind.HELD:
        assert drift.product_id is not None
        key = held_key(drift.product_id, drift.group_id)
    else:
        key = members_key(drift.group_id)
    return u.request(table.name, key)


def _member_repair(table: TableRef, drift: GroupDrift) -> list[Part]:
    assert drift.product_id is not None
    pid = drift.product_id
    as_read = Membership.of(pid, drift.membership).unchanged()
    check = check_request(table.name, membership_key(pid), as_read)
    key = member_key(drift.group_id, pid)
    if drift.expected:
        item = {**key, "productId": {"S": pid}}
        fix = {"Put": put_request(table.name, item, Attr("PK").not_exists())}
    else:
        fix = {"Delete": delete_request(table.name, key, Attr("PK").exists())}
    return [Part("membership", {"ConditionCheck": check}), Part("member", fix)]
