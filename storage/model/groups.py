"""Product groups as items: which group a product belongs to, a group's members, and how
many of a product's published comments each group counts.

=========================  ====================  =========================================
item                       key                   holds
=========================  ====================  =========================================
a product's membership     PRODUCT#<pid> GROUP   ``groupId`` (absent: none), ``epoch``
                                                 (raised by every change), ``moving``
                                                 (a move not yet certified complete)
a group's member           GROUP#<gid>           one per product in the group, paged by
                           MEMBER#<pid>          keyset (the sort key)
a group's members count    GROUP#<gid> MEMBERS   ``n``: its MEMBER items, exactly
what a group holds of a    PRODUCT#<pid>         ``n``: the product's published comments
product                    HELD#<gid>            counted in that group
=========================  ====================  =========================================

A published comment stores the group it counts in (``Comment.group_id``); its group
entries and counters follow that, never the membership directly. The membership's epoch
is what every write that places a comment in a group conditions on: after a change of
membership commits, no write places a comment of the product in any group but the new
one, so what the older groups hold of it only falls, and a move is complete exactly when
the new group holds all the product's published comments (``storage.ops.group_move``).
The held count lives in the product's partition beside the product's stats item, whose
``count_total`` it is compared with.

Pure: no I/O.
"""

from __future__ import annotations

from dataclasses import dataclass

from storage.base.expressions import Attr, Condition
from storage.base.types import Item
from storage.model import keys
from storage.model.facets import GROUP_PREFIX
from storage.model.items import number
from storage.model.rules import validate_product_id

MEMBERSHIP_SK = "GROUP"
MEMBER_PREFIX = "MEMBER#"
MEMBERS_SK = "MEMBERS"
HELD_PREFIX = "HELD#"
GROUP_ATTR = "groupId"
EPOCH_ATTR = "epoch"
MOVING_ATTR = "moving"
COUNT_ATTR = "n"


def group_pk(group_id: str) -> str:
    return GROUP_PREFIX + validate_product_id(group_id)  # a group id follows the same rule


def membership_key(product_id: str) -> Item:
    return {"PK": {"S": keys.product_pk(product_id)}, "SK": {"S": MEMBERSHIP_SK}}


def member_key(group_id: str, product_id: str) -> Item:
    sk = MEMBER_PREFIX + validate_product_id(product_id)
    return {"PK": {"S": group_pk(group_id)}, "SK": {"S": sk}}


def members_key(group_id: str) -> Item:
    return {"PK": {"S": group_pk(group_id)}, "SK": {"S": MEMBERS_SK}}


def held_key(product_id: str, group_id: str) -> Item:
    sk = HELD_PREFIX + validate_product_id(group_id)
    return {"PK": {"S": keys.product_pk(product_id)}, "SK": {"S": sk}}


@dataclass(frozen=True, slots=True)
class Membership:
    """A product's group as read; epoch 0 is a product whose membership was never set
    (no item: in no group)."""

    product_id: str
    group_id: str | None = None
    epoch: int = 0
    moving: bool = False

    @classmethod
    def of(cls, product_id: str, item: Item | None) -> Membership:
        """The membership an item holds (None or empty: never set)."""
        if not item:
            return cls(product_id)
        group = item.get(GROUP_ATTR, {}).get("S")
        moving = bool(item.get(MOVING_ATTR, {}).get("BOOL", False))
        return cls(product_id, group, number(item, EPOCH_ATTR), moving)

    def unchanged(self) -> Condition:
        """True only while the membership is the one read (its epoch)."""
        epoch = Attr(EPOCH_ATTR)
        return epoch.not_exists() if self.epoch == 0 else epoch.eq(self.epoch)

    def changed_to(self, group_id: str | None) -> Membership:
        """The membership after a change to ``group_id``: the next epoch, a move begun."""
        return Membership(self.product_id, group_id, self.epoch + 1, moving=True)

    def to_item(self) -> Item:
        item: Item = {**membership_key(self.product_id), EPOCH_ATTR: {"N": str(self.epoch)}}
        if self.group_id is not None:
            item[GROUP_ATTR] = {"S": self.group_id}
        if self.moving:
            item[MOVING_ATTR] = {"BOOL": True}
        return item


def is_membership_item(item: Item) -> bool:
    pk: str = item.get("PK", {}).get("S", "")
    return pk.startswith(keys.PRODUCT_PREFIX) and item.get("SK", {}).get("S") == MEMBERSHIP_SK


def is_held_item(item: Item) -> bool:
    pk: str = item.get("PK", {}).get("S", "")
    sk: str = item.get("SK", {}).get("S", "")
    return pk.startswith(keys.PRODUCT_PREFIX) and sk.startswith(HELD_PREFIX)


def is_member_item(item: Item) -> bool:
    pk: str = item.get("PK", {}).get("S", "")
    sk: str = item.get("SK", {}).get("S", "")
    return pk.startswith(GROUP_PREFIX) and sk.startswith(MEMBER_PREFIX)


def is_members_item(item: Item) -> bool:
    pk: str = item.get("PK", {}).get("S", "")
    return pk.startswith(GROUP_PREFIX) and item.get("SK", {}).get("S") == MEMBERS_SK
