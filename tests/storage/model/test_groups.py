"""Product groups' items: their keys, a membership as an item and back, and the condition
a write places a comment under."""

from __future__ import annotations

import pytest

from storage.base.errors import InvalidProductId
from storage.base.expressions import Placeholders
from storage.model.groups import (
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
from storage.model.stats import is_stats_item


def test_the_keys_of_a_groups_items() -> None:
    assert membership_key("sku-1") == {"PK": {"S": "PRODUCT#sku-1"}, "SK": {"S": "GROUP"}}
    assert member_key("boot", "sku-1") == {"PK": {"S": "GROUP#boot"}, "SK": {"S": "MEMBER#sku-1"}}
    assert members_key("boot") == {"PK": {"S": "GROUP#boot"}, "SK": {"S": "MEMBERS"}}
    assert held_key("sku-1", "boot") == {"PK": {"S": "PRODUCT#sku-1"}, "SK": {"S": "HELD#boot"}}
    with pytest.raises(InvalidProductId):
        member_key("boot#1", "sku-1")


def test_each_item_is_recognised_as_what_it_is_and_never_as_stats() -> None:
    items = {
        "membership": membership_key("p"),
        "member": member_key("g", "p"),
        "members": members_key("g"),
        "held": held_key("p", "g"),
    }
    checks = {
        "membership": is_membership_item,
        "member": is_member_item,
        "members": is_members_item,
        "held": is_held_item,
    }
    for name, item in items.items():
        assert [n for n, check in checks.items() if check(item)] == [name]
        assert not is_stats_item(item)


def test_a_membership_round_trips_and_each_change_is_the_next_epoch() -> None:
    never = Membership.of("p", None)
    assert (never.group_id, never.epoch, never.moving) == (None, 0, False)
    joined = never.changed_to("g")
    assert (joined.group_id, joined.epoch, joined.moving) == ("g", 1, True)
    assert Membership.of("p", joined.to_item()) == joined
    left = joined.changed_to(None)
    assert Membership.of("p", left.to_item()) == left
    assert "groupId" not in left.to_item()


def test_a_write_conditions_on_the_epoch_it_read() -> None:
    p = Placeholders()
    assert Membership("p").unchanged().render(p) == "attribute_not_exists(#n0)"
    q = Placeholders()
    assert Membership("p", "g", 3).unchanged().render(q) == "#n0 = :v0"
    assert q.into({})["ExpressionAttributeValues"] == {":v0": {"N": "3"}}
