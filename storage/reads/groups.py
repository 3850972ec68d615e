"""Reads of product groups: a product's group, a group's products by keyset, and how many
it has (``storage.model.groups`` keeps them as items)."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

from storage.base.expressions import Attr, query_request
from storage.engine.table import TableRef
from storage.model.groups import (
    COUNT_ATTR,
    MEMBER_PREFIX,
    Membership,
    group_pk,
    members_key,
    membership_key,
)
from storage.model.items import number
from storage.model.rules import validate_product_id


@dataclass(frozen=True, slots=True)
class Members:
    """One page of a group's products, by product id."""

    product_ids: tuple[str, ...]
    # More products follow the page.
    has_more: bool
    # How many products the group has; None: it has never had any (no such group).
    total: int | None


async def product_group(table: TableRef, product_id: str) -> str | None:
    """The group a product belongs to now (None: none); eventually consistent, as any read
    of a page is."""
    response = await table.client.get_item(
        TableName=table.name, Key=membership_key(validate_product_id(product_id))
    )
    return Membership.of(product_id, response.get("Item")).group_id


async def group_members(table: TableRef, group_id: str, *, size: int, after: str | None) -> Members:
    """Up to ``size`` of the group's products after ``after`` (a product id), with whether
    more follow and the group's exact count (read alongside, one round)."""
    validate_product_id(group_id)
    # Past the cursor's product: nothing sorts between an id and the id and a space (ids
    # hold no control characters, the only ones below a space).
    start = MEMBER_PREFIX + ("" if after is None else after + " ")
    last = MEMBER_PREFIX + "\U0010ffff"
    key = Attr("PK").eq(group_pk(group_id)) & Attr("SK").between(start, last)
    params = query_request(table.name, index=None, key=key, forward=True, limit=size + 1)
    page, counted = await asyncio.gather(
        table.client.query(**params),
        table.client.get_item(TableName=table.name, Key=members_key(group_id)),
    )
    ids = [item["SK"]["S"].removeprefix(MEMBER_PREFIX) for item in page.get("Items", [])]
    count_item = counted.get("Item")
    total = None if count_item is None else number(count_item, COUNT_ATTR)
    return Members(tuple(ids[:size]), len(ids) > size, total)


async def group_size(table: TableRef, group_id: str) -> int | None:
    """How many products the group has; None when it has never had any (no such group)."""
    response = await table.client.get_item(
        TableName=table.name, Key=members_key(validate_product_id(group_id))
    )
    found = response.get("Item")
    return None if found is None else number(found, COUNT_ATTR)
