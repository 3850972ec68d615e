"""Moving a product between groups: both groups equal a brute-force count of the comments
at every pause, under concurrent creates, edits, moderation and deletes, when the move is
interrupted and when it is resumed; it is done only when the new group provably holds
every published comment, even those an index has not shown yet."""

from __future__ import annotations

import asyncio
import random
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import pytest

from storage.base.errors import GroupMoveUnfinished, StorageError
from storage.base.types import Response
from storage.engine.table import TableRef
from storage.engine.wrapping import ClientWrapper
from storage.model import keys
from storage.model.comments import Comment, ModerationMode, NewComment
from storage.model.facets import FacetValue
from storage.model.groups import held_key, member_key, members_key
from storage.model.items import is_comment_item, is_entry_item, item_to_comment, number
from storage.ops.catalogue_groups import apply_catalogue
from storage.ops.group_move import held_counts, move_product
from storage.ops.importer import import_comments
from storage.ops.verify import repair, scan_pages, verify
from storage.writes import create_comment, get_comment
from storage.writes.delete import delete_comment
from storage.writes.edit import Edit, edit_comment
from storage.writes.membership import change_membership, read_membership
from storage.writes.moderate import Decision, moderate_comment
from tests.helpers import FAST, create_many, own_table

FIT = FacetValue.attribute("fit", "small")
BATTERY = FacetValue.topic("battery")


class Interrupted(Exception):
    """Stands for a crash between two of the move's transactions."""


async def _check(table: TableRef) -> dict[tuple[str, str | None], int]:
    """Every group's stats and held counts equal a brute-force count of the comments, each
    published comment is listed in exactly the group it stores, and verify is exact.
    Returns the published comments per (product, group)."""
    comments: list[Comment] = []
    stats: dict[str, Counter[int]] = {}
    held: dict[tuple[str, str], int] = {}
    listed_in: dict[str, set[str]] = {}
    async for page in scan_pages(table):
        for item in page.get("Items", []):
            pk, sk = item["PK"]["S"], item["SK"]["S"]
            if is_comment_item(item):
                comments.append(item_to_comment(item))
            elif is_entry_item(item) and sk.startswith("FACET#G:") and sk.endswith("#*"):
                group = sk.removeprefix("FACET#G:").removesuffix("#*")
                listed_in.setdefault(pk.removeprefix("COMMENT#"), set()).add(group)
            elif pk.startswith("GROUP#") and sk == "F#*":
                stats[pk.removeprefix("GROUP#")] = Counter(
                    {int(k[-1]): int(v["N"]) for k, v in item.items() if k.startswith("c#*#")}
                )
            elif pk.startswith("PRODUCT#") and sk.startswith("HELD#"):
                held[(pk.removeprefix("PRODUCT#"), sk.removeprefix("HELD#"))] = number(item, "n")
    brute: dict[str, Counter[int]] = {}
    brute_held: Counter[tuple[str, str]] = Counter()
    per_group: Counter[tuple[str, str | None]] = Counter()
    for c in comments:
        if not c.published:
            assert c.comment_id not in listed_in
            continue
        per_group[(c.product_id, c.group_id)] += 1
        if c.group_id is None:
            assert c.comment_id not in listed_in
            continue
        brute.setdefault(c.group_id, Counter())[c.rating] += 1
        brute_held[(c.product_id, c.group_id)] += 1
        assert listed_in.get(c.comment_id) == {c.group_id}  # in exactly one group
    for group in brute.keys() | stats.keys():
        assert +stats.get(group, Counter()) == brute.get(group, Counter()), group
    assert {k: n for k, n in held.items() if n} == dict(brute_held)
    report = await verify(table)
    assert report.exact, report.describe()
    return dict(per_group)


@dataclass
class Writers:
    """Concurrent shoppers and moderators on a product while it moves."""

    table: TableRef
    product: str
    made: list[Comment] = field(default_factory=list)
    done: Counter[str] = field(default_factory=Counter)
    stop: asyncio.Event = field(default_factory=asyncio.Event)

    async def run(self, seed: int) -> None:
        rng = random.Random(seed)
        n = 0
        while not self.stop.is_set():
            n += 1
            step = rng.randrange(6)
            try:
                if step <= 1 or not self.made:
                    mode = ModerationMode.PRE if step == 1 else ModerationMode.POST
                    new = NewComment(
                        self.product,
                        rng.choice(["en", "de"]),
                        rng.randint(1, 5),
                        f"w{seed}-{n}",
                        f"w{seed}-{n}",
                        facets=frozenset(rng.sample([FIT, BATTERY], rng.randint(0, 2))),
                        incentivized=rng.random() < 0.3,
                    )
                    made = await create_comment(self.table, new, moderation=mode, backoff=FAST)
                    self.made.append(made.comment)
                    self.done["create"] += 1
                    continue
                c = rng.choice(self.made)
                if step == 2:
                    edit = Edit(rating=rng.randint(1, 5), language=rng.choice(["en", "de"]))
                    await edit_comment(
                        self.table, c.comment_id, edit, author_id=c.author_id, backoff=FAST
                    )
                    self.done["edit"] += 1
                elif step in (3, 4):
                    decision = Decision.APPROVE if step == 3 else Decision.REJECT
                    await moderate_comment(
                        self.table, c.comment_id, decision, moderator="m", backoff=FAST
                    )
                    self.done["moderate"] += 1
                else:
                    await delete_comment(self.table, c.comment_id, backoff=FAST, clean_up=False)
                    self.made.remove(c)
                    self.done["delete"] += 1
            except StorageError:
                self.done["refused"] += 1  # deleted by another writer meanwhile

    async def during(self, work: Any) -> Any:
        """Run ``work`` with three writers going, and stop them when it ends."""
        self.stop.clear()
        tasks = [asyncio.create_task(self.run(seed)) for seed in range(3)]
        try:
            return await work
        finally:
            self.stop.set()
            await asyncio.gather(*tasks)


def _seeded(product: str, count: int) -> list[NewComment]:
    rng = random.Random(11)
    return [
        NewComment(
            product,
            rng.choice(["en", "de", "fr"]),
            rng.randint(1, 5),
            f"body {n}",
            f"author-{n}",
            facets=frozenset(rng.sample([FIT, BATTERY], rng.randint(0, 2))),
            verified=n % 2 == 0,
            incentivized=n % 5 == 0,
        )
        for n in range(count)
    ]


async def test_a_move_under_concurrent_writes_interrupted_and_resumed_stays_exact(
    table: TableRef,
) -> None:
    own = await own_table(table, "groupmove")
    for product, group in (("p1", "g1"), ("q1", "g1"), ("r1", "g2")):
        await change_membership(own, product, group)
    await create_many(own, [*_seeded("p1", 300), *_seeded("q1", 6), *_seeded("r1", 6)], limit=32)
    writers = Writers(own, "p1")
    assert await _check(own) == {("p1", "g1"): 300, ("q1", "g1"): 6, ("r1", "g2"): 6}

    lines: list[str] = []

    def interrupt(line: str) -> None:
        lines.append(line)
        if "moved" in line and int(line.rsplit(" ", 2)[1]) > 0:
            raise Interrupted  # after the first page's comments moved

    with pytest.raises(Interrupted):
        await writers.during(
            move_product(own, "p1", "g2", progress=interrupt, pause=0.05, concurrency=16)
        )
    halfway = await _check(own)
    membership = await read_membership(own, "p1")
    assert (membership.group_id, membership.moving) == ("g2", True)
    assert halfway[("p1", "g1")] > 0
    assert halfway[("p1", "g2")] > 0
    assert lines[0] == "p1: membership g1 -> g2 (epoch 2)"

    resumed = await writers.during(move_product(own, "p1", "g2", pause=0.05, concurrency=16))
    assert not resumed.changed
    assert resumed.moved > 0
    after = await _check(own)
    membership = await read_membership(own, "p1")
    assert (membership.group_id, membership.moving) == ("g2", False)
    # Every published comment of p1 counts in g2 (writers went on after the certificate).
    assert ("p1", "g1") not in after
    assert ("p1", None) not in after
    assert await held_counts(own, "p1") == {"g2": after[("p1", "g2")]}  # g1's item is gone
    # The writers raced the whole time, every kind of write committing.
    assert all(writers.done[k] > 0 for k in ("create", "edit", "moderate", "delete"))


class LaggingIndex(ClientWrapper):
    """An index that has not caught up: the first read of the all-comments index leaves
    out its last ``hide`` comments. Counts the index's reads."""

    def __init__(self, inner: Any, hide: int) -> None:
        super().__init__(inner)
        self.hide = hide
        self.index_reads = 0

    async def _call(self, operation: str, kwargs: dict[str, Any]) -> Response:
        response = await super()._call(operation, kwargs)
        if operation == "query" and kwargs.get("IndexName") == "all":
            self.index_reads += 1
            if self.index_reads == 1:
                response = {**response, "Items": response["Items"][: -self.hide]}
        return response


async def test_a_move_is_done_only_when_the_new_group_holds_every_comment(
    table: TableRef,
) -> None:
    own = await own_table(table, "grouplag")
    await change_membership(own, "p1", "g1")
    await create_many(own, _seeded("p1", 12))
    lagging = LaggingIndex(own.client, hide=3)
    view = TableRef(lagging, own.name)
    with pytest.raises(GroupMoveUnfinished):
        await move_product(view, "p1", "g2", passes=1, pause=0)
    assert (await read_membership(own, "p1")).moving  # not certified: 3 still in g1
    assert (await verify(own)).moving == ("p1",)
    assert await held_counts(own, "p1") == {"g1": 3, "g2": 9}
    assert (await _check(own)) == {("p1", "g1"): 3, ("p1", "g2"): 9}
    finished = await move_product(view, "p1", "g2", pause=0)
    assert (finished.moved, finished.passes, lagging.index_reads) == (3, 1, 2)
    assert not (await read_membership(own, "p1")).moving
    assert (await _check(own)) == {("p1", "g2"): 12}


async def test_joining_a_group_moves_comments_published_before_it(table: TableRef) -> None:
    own = await own_table(table, "groupjoin")
    await create_many(own, _seeded("p1", 5))  # in no group
    assert (await _check(own)) == {("p1", None): 5}
    assert (await verify(own)).moving == ()
    await change_membership(own, "p1", "g1")
    assert (await verify(own)).moving == ("p1",)
    joined = await move_product(own, "p1", "g1", pause=0)
    assert (joined.changed, joined.moved, joined.total) == (False, 5, 5)  # resumed
    assert (await _check(own)) == {("p1", "g1"): 5}
    left = await move_product(own, "p1", None, pause=0)
    assert (left.moved, left.total) == (5, 5)
    assert (await _check(own)) == {("p1", None): 5}
    assert await held_counts(own, "p1") == {}


async def test_a_catalogue_puts_each_product_in_its_group_and_reports_bad_lines(
    table: TableRef,
) -> None:
    own = await own_table(table, "catalogue")
    await change_membership(own, "q1", "old")
    await create_many(own, [*_seeded("p1", 3), *_seeded("q1", 2)])
    lines = [
        '{"productId": "p1", "groupId": "shoe"}\n',
        "not json\n",
        '{"productId": "q1"}\n',
        '{"productId": "p1", "groupId": "boot"}\n',
        '{"productId": "r1", "groupId": "shoe", "gtin": "123"}\n',
        '{"productId": "s1", "groupId": "shoe"}\n',
    ]
    said: list[str] = []
    outcome = await apply_catalogue(own, lines, progress=said.append)
    assert [(p.line, p.product_id) for p in outcome.problems] == [(2, None), (4, None), (5, None)]
    assert (outcome.products, outcome.changed, outcome.moved) == (3, 3, 5)
    assert (await read_membership(own, "p1")).group_id == "shoe"
    assert (await read_membership(own, "q1")).group_id is None
    assert (await _check(own)) == {("p1", "shoe"): 3, ("q1", None): 2}
    again = await apply_catalogue(own, lines)
    assert (again.changed, again.unchanged, again.moved) == (0, 3, 0)


async def test_verify_recounts_and_repairs_held_counts_and_members(table: TableRef) -> None:
    own = await own_table(table, "groupverify")
    await change_membership(own, "p1", "g1")
    await create_comment(own, NewComment("p1", "en", 4, "Fits", "ann"), backoff=FAST)
    assert (await verify(own)).exact
    await own.client.update_item(
        TableName=own.name,
        Key=held_key("p1", "g1"),
        UpdateExpression="ADD n :one",
        ExpressionAttributeValues={":one": {"N": "1"}},
    )
    await own.client.delete_item(TableName=own.name, Key=member_key("g1", "p1"))
    await own.client.put_item(
        TableName=own.name, Item={**member_key("g1", "zz"), "productId": {"S": "zz"}}
    )
    await own.client.update_item(
        TableName=own.name,
        Key=members_key("g2"),
        UpdateExpression="ADD n :one",
        ExpressionAttributeValues={":one": {"N": "1"}},
    )
    report = await verify(own)
    assert sorted(d.describe() for d in report.group_drifts) == [
        "group g1, product p1: comments a group holds of a product 2 != 1",
        "group g1, product p1: member item missing",
        "group g1, product zz: member item left over",
        "group g2: a group's member count 1 != 0",
    ]
    fixed = await repair(own, report)
    assert (fixed.repaired, fixed.skipped) == (4, 0)
    assert (await verify(own)).exact


class ChangeAt(ClientWrapper):
    """Changes the product's group to ``group`` just before the ``at``-th transaction."""

    def __init__(self, inner: Any, table: TableRef, group: str, at: int) -> None:
        super().__init__(inner)
        self.table, self.group, self.at = table, group, at
        self.transactions = 0

    async def _call(self, operation: str, kwargs: dict[str, Any]) -> Response:
        if operation == "transact_write_items":
            self.transactions += 1
            if self.transactions == self.at:
                await change_membership(self.table, "p1", self.group)
        return await super()._call(operation, kwargs)


async def test_a_move_follows_a_membership_changed_under_it(table: TableRef) -> None:
    own = await own_table(table, "groupfollow")
    await change_membership(own, "p1", "g1")
    await create_many(own, _seeded("p1", 10))
    # The 1st transaction changes the membership to g2; before the 4th, it changes to g3.
    changing = ChangeAt(own.client, own, "g3", at=4)
    said: list[str] = []
    result = await move_product(
        TableRef(changing, own.name), "p1", "g2", progress=said.append, pause=0, concurrency=1
    )
    assert "p1: the membership changed meanwhile; following it" in said
    assert result.group_id == "g3"
    assert (await _check(own)) == {("p1", "g3"): 10}
    assert await held_counts(own, "p1") == {"g3": 10}


class AfterHeldCounts(ClientWrapper):
    """Runs ``between`` once, right after a query of a product's held counts answers: a
    write landing between the move's reads of what groups hold and of the product's total."""

    def __init__(self, inner: Any, between: Any) -> None:
        super().__init__(inner)
        self.between = between
        self.armed = True

    async def _call(self, operation: str, kwargs: dict[str, Any]) -> Response:
        answer = await super()._call(operation, kwargs)
        if self.armed and operation == "query" and "HELD#" in str(kwargs):
            self.armed = False
            await self.between()
        return answer


async def test_a_finished_move_is_not_certified_by_a_total_read_after_a_comment_left(
    table: TableRef,
) -> None:
    # The group holds E; an imported comment C, in no group, waits to be placed. Between
    # the certificate's read of what the group holds (E) and its read of the total, E is
    # deleted: the total (C alone) then equals what the group was read to hold, though C
    # is in no group. The two must be read as of one moment.
    own = await own_table(table, "certify")
    await move_product(own, "v", "m")
    made = await create_comment(own, NewComment("v", "en", 4, "E", "ann"), backoff=FAST)
    line = b'{"externalId": "c-1", "productId": "v", "rating": 5, "language": "en", '
    line += b'"body": "C", "author": "bob", "createdAt": "2025-01-01T00:00:00Z"}'

    async def delete_e() -> None:
        await delete_comment(own, made.comment.comment_id, backoff=FAST)

    racing = TableRef(AfterHeldCounts(own.client, delete_e), own.name)
    summary = await import_comments(racing, [line], backoff=FAST)
    assert summary.placed == ("v",)
    stored = await get_comment(own, keys.imported_comment_id("c-1"))
    assert stored is not None
    assert stored.group_id == "m"
    assert not (await verify(own)).moving
