"""A grouped product's comments count in its group: a comment becoming published is placed
by the membership it checks in the same transaction, one staying published keeps the
group it stores, and a write that loses the race with a change of membership is placed
again in the new group, never in the old one."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import replace
from typing import Any

from storage.base.types import Response
from storage.engine.table import TableRef
from storage.engine.wrapping import ClientWrapper
from storage.model.comments import Comment, ModerationMode, NewComment
from storage.model.facets import ACTION_BUDGET, MAX_FACET_VALUES, FacetValue
from storage.model.groups import held_key, members_key
from storage.model.items import is_comment_item, number
from storage.ops.group_move import held_counts, move_product
from storage.ops.verify import scan_pages, verify
from storage.writes import create_comment
from storage.writes.delete import delete_comment
from storage.writes.edit import Edit, edit_comment
from storage.writes.facet_parts import facet_parts
from storage.writes.membership import change_membership, read_membership
from storage.writes.moderate import Decision, moderate_comment
from tests.helpers import FAST, own_table

FIT = FacetValue.attribute("fit", "small")


class BeforeFirstTransaction(ClientWrapper):
    """Runs ``step`` once, just before the first transaction is sent: a race lost on
    purpose. Counts the transactions."""

    def __init__(self, inner: Any, step: Callable[[], Awaitable[object]]) -> None:
        super().__init__(inner)
        self.step: Callable[[], Awaitable[object]] | None = step
        self.transactions = 0

    async def _call(self, operation: str, kwargs: dict[str, Any]) -> Response:
        if operation == "transact_write_items":
            self.transactions += 1
            step, self.step = self.step, None
            if step is not None:
                await step()
        return await super()._call(operation, kwargs)


async def _get(table: TableRef, key: dict[str, Any]) -> dict[str, Any]:
    response = await table.client.get_item(TableName=table.name, Key=key, ConsistentRead=True)
    return dict(response.get("Item") or {})


async def _counts(table: TableRef, group: str) -> int:
    """The group's stats: its published comments, all languages and ratings."""
    item = await _get(table, {"PK": {"S": f"GROUP#{group}"}, "SK": {"S": "F#*"}})
    return sum(int(v["N"]) for k, v in item.items() if k.startswith("c#*#"))


async def _held(table: TableRef, product: str, group: str) -> int:
    return number(await _get(table, held_key(product, group)), "n")


async def test_a_grouped_products_comments_count_in_its_group(table: TableRef) -> None:
    own = await own_table(table, "grouped")
    await change_membership(own, "p1", "g1")
    new = NewComment("p1", "en", 4, "Fits", "ann", facets=frozenset({FIT}))
    made = (await create_comment(own, new, backoff=FAST)).comment
    assert made.group_id == "g1"
    assert (await _counts(own, "g1"), await _held(own, "p1", "g1")) == (1, 1)
    pending = await create_comment(
        own, NewComment("p1", "de", 2, "Eng", "bob"), moderation=ModerationMode.PRE
    )
    assert pending.comment.group_id is None  # unpublished: counted nowhere
    assert await _counts(own, "g1") == 1
    approved = await moderate_comment(
        own, pending.comment.comment_id, Decision.APPROVE, moderator="m"
    )
    assert approved.group_id == "g1"
    assert (await _counts(own, "g1"), await _held(own, "p1", "g1")) == (2, 2)
    edited = await edit_comment(own, made.comment_id, Edit(rating=1), author_id="ann")
    assert edited.group_id == "g1"
    rejected = await moderate_comment(own, made.comment_id, Decision.REJECT, moderator="m")
    assert rejected.group_id is None
    assert (await _counts(own, "g1"), await _held(own, "p1", "g1")) == (1, 1)
    assert (await verify(own)).exact
    await delete_comment(own, approved.comment_id, backoff=FAST)
    assert (await _counts(own, "g1"), await _held(own, "p1", "g1")) == (0, 0)
    assert (await verify(own)).exact


async def test_membership_changes_are_epochs_with_exact_member_counts(table: TableRef) -> None:
    own = await own_table(table, "members")
    assert (await read_membership(own, "p1")).epoch == 0
    await change_membership(own, "p1", "g1")
    await change_membership(own, "p2", "g1")
    before, after = await change_membership(own, "p1", "g2")
    assert (before.group_id, before.epoch, after.group_id, after.epoch) == ("g1", 1, "g2", 2)
    assert after.moving
    same = await change_membership(own, "p1", "g2")
    assert same[0] == same[1]  # no change, no new epoch
    await change_membership(own, "p2", None)
    assert number(await _get(own, members_key("g1")), "n") == 0
    assert number(await _get(own, members_key("g2")), "n") == 1
    page = await own.client.query(
        TableName=own.name,
        KeyConditionExpression="PK = :pk AND begins_with(SK, :m)",
        ExpressionAttributeValues={":pk": {"S": "GROUP#g2"}, ":m": {"S": "MEMBER#"}},
    )
    assert [i["SK"]["S"] for i in page["Items"]] == ["MEMBER#p1"]
    assert (await verify(own)).exact


async def test_a_create_racing_a_change_of_membership_lands_in_the_new_group(
    table: TableRef,
) -> None:
    own = await own_table(table, "grouprace")
    await change_membership(own, "p1", "g1")
    racing = BeforeFirstTransaction(own.client, lambda: change_membership(own, "p1", "g2"))
    view = TableRef(racing, own.name)
    made = (
        await create_comment(view, NewComment("p1", "en", 5, "Hi", "ann"), backoff=FAST)
    ).comment
    # The first transaction checked epoch 1 and failed; the second placed it by epoch 2.
    assert racing.transactions == 2
    assert made.group_id == "g2"
    assert (await _counts(own, "g1"), await _counts(own, "g2")) == (0, 1)
    assert (await _held(own, "p1", "g1"), await _held(own, "p1", "g2")) == (0, 1)
    assert (await verify(own)).exact


async def test_an_approval_racing_a_change_of_membership_lands_in_the_new_group(
    table: TableRef,
) -> None:
    own = await own_table(table, "approverace")
    await change_membership(own, "p1", "g1")
    pending = await create_comment(
        own, NewComment("p1", "en", 3, "Hi", "ann"), moderation=ModerationMode.PRE
    )
    racing = BeforeFirstTransaction(own.client, lambda: change_membership(own, "p1", None))
    view = TableRef(racing, own.name)
    approved = await moderate_comment(
        view, pending.comment.comment_id, Decision.APPROVE, moderator="m", backoff=FAST
    )
    assert racing.transactions == 2
    assert approved.group_id is None  # the product left its group: it counts in none
    assert await _counts(own, "g1") == 0
    assert (await verify(own)).exact


async def test_a_create_outside_any_group_checks_that_none_was_set(table: TableRef) -> None:
    own = await own_table(table, "ungrouped")
    racing = BeforeFirstTransaction(own.client, lambda: change_membership(own, "p1", "g1"))
    view = TableRef(racing, own.name)
    made = (
        await create_comment(view, NewComment("p1", "en", 5, "Hi", "ann"), backoff=FAST)
    ).comment
    assert made.group_id == "g1"
    assert racing.transactions == 2
    assert await _counts(own, "g1") == 1
    assert (await verify(own)).exact


def test_the_largest_comments_group_move_fits_the_budget(table: TableRef) -> None:
    # Every value, incentivized, from one group to another: its group entries and
    # counters out and in, the two held counts; with the comment and the membership's
    # check, the move's transaction. The product's own entries stay as they are.
    values = frozenset(FacetValue.topic(f"t{i}") for i in range(MAX_FACET_VALUES))
    before = Comment(
        "0" * 32,
        "p1",
        "en",
        5,
        None,
        "b",
        "ann",
        "2024-01-01T00:00:00.000Z",
        facets=values,
        incentivized=True,
        verified=True,
        group_id="g1",
    )
    after = replace(before, group_id="g2")
    parts = facet_parts(table, before, after, version=2)
    listed = MAX_FACET_VALUES + 1  # and the group's own listing
    assert len(parts) == 2 * listed + 2 * (listed + 1) + 2
    assert len(parts) + 2 == 46 <= ACTION_BUDGET
    assert not any("P:p1" in str(p.action) for p in parts)


class Counting(ClientWrapper):
    """Counts reads of memberships and transactions."""

    def __init__(self, inner: Any) -> None:
        super().__init__(inner)
        self.membership_reads = 0
        self.transactions = 0

    async def _call(self, operation: str, kwargs: dict[str, Any]) -> Response:
        if operation == "get_item" and kwargs["Key"]["SK"] == {"S": "GROUP"}:
            self.membership_reads += 1
        self.transactions += operation == "transact_write_items"
        return await super()._call(operation, kwargs)


async def test_a_process_remembers_memberships_and_a_stale_one_costs_one_retry(
    table: TableRef,
) -> None:
    own = await own_table(table, "groupmemory")
    await change_membership(own, "p1", "g1")
    counting = Counting(own.client)
    process = TableRef(counting, own.name)  # another process: its own memory
    for n in range(3):
        await create_comment(process, NewComment("p1", "en", 4, "Hi", f"a{n}"), backoff=FAST)
    assert (counting.membership_reads, counting.transactions) == (1, 3)
    await change_membership(own, "p1", "g2")  # by the first process
    made = await create_comment(process, NewComment("p1", "en", 4, "Hi", "b"), backoff=FAST)
    assert made.comment.group_id == "g2"
    # The remembered epoch failed its check, whose image was the new membership.
    assert (counting.membership_reads, counting.transactions) == (1, 5)
    assert (await _counts(own, "g1"), await _counts(own, "g2")) == (3, 1)


async def test_creates_racing_changes_of_membership_count_exactly(table: TableRef) -> None:
    own = await own_table(table, "groupflips")
    await change_membership(own, "p1", "g1")
    two = TableRef(own.client, own.name)  # another process, with its own memory

    async def creates() -> None:
        await asyncio.gather(
            *(
                create_comment(
                    two if n % 2 else own,
                    NewComment("p1", "en", 1 + n % 5, f"c{n}", f"a{n}"),
                    backoff=FAST,
                )
                for n in range(30)
            )
        )

    async def flips() -> None:
        for group in ("g2", None, "g1", "g3"):
            await asyncio.sleep(0.01)
            await change_membership(own, "p1", group)

    await asyncio.gather(creates(), flips())
    report = await verify(own)
    assert report.exact, report.describe()
    assert report.moving == ("p1",)
    held = {g: await _held(own, "p1", g) for g in ("g1", "g2", "g3")}
    assert sum(held.values()) + await _ungrouped(own) == 30
    assert [await _counts(own, g) for g in ("g1", "g2", "g3")] == list(held.values())
    # Finishing the move gathers them from every group they landed in, and from none.
    done = await move_product(own, "p1", "g3", pause=0)
    assert done.total == 30
    assert await held_counts(own, "p1") == {"g3": 30}
    assert [await _counts(own, g) for g in ("g1", "g2", "g3")] == [0, 0, 30]
    assert (await verify(own)).exact


async def _ungrouped(table: TableRef) -> int:
    """Published comments of p1 stored in no group, by a scan."""
    found = 0
    async for page in scan_pages(table):
        for item in page.get("Items", []):
            if is_comment_item(item) and "groupId" not in item:
                found += 1
    return found
