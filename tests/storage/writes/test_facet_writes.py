"""Facet entries and counters move in every transition of a comment, in its transaction:
after any sequence of creates, edits, moderation decisions, replies and deletes, racing
or not, the table holds exactly the entries and counts a recount of the comments gives."""

from __future__ import annotations

import asyncio
import random
from typing import Any

from storage.base.errors import StorageError
from storage.engine.table import TableRef
from storage.model import keys
from storage.model.comments import ModerationMode, NewComment
from storage.model.facets import COUNTER_PREFIX, FacetValue, facet_moves
from storage.model.items import is_comment_item, is_entry_item, item_to_comment
from storage.ops.verify import repair, scan_pages, verify
from storage.writes import create_comment
from storage.writes.delete import delete_comment
from storage.writes.edit import Edit, edit_comment
from storage.writes.facet_parts import listed
from storage.writes.moderate import Decision, moderate_comment
from storage.writes.reply import reply_to_comment
from tests.helpers import FAST, own_table

FIT = FacetValue.attribute("fit", "small")
BATTERY = FacetValue.topic("battery")
LOUD = FacetValue.topic("loud")


async def _state(table: TableRef) -> tuple[dict[Any, dict[str, int]], set[tuple[str, str]]]:
    """The counter items (non-zero counts) and the entries the table holds."""
    counters: dict[Any, dict[str, int]] = {}
    entries: set[tuple[str, str]] = set()
    async for page in scan_pages(table):
        for item in page.get("Items", []):
            pk, sk = item["PK"]["S"], item["SK"]["S"]
            if is_entry_item(item):
                entries.add((pk, sk))
            elif pk.startswith(keys.PRODUCT_PREFIX) and sk.startswith(COUNTER_PREFIX):
                counts = {
                    name: int(value["N"])
                    for name, value in item.items()
                    if name not in ("PK", "SK") and int(value["N"])
                }
                if counts:
                    counters[(pk, sk)] = counts
    return counters, entries


async def _recount(table: TableRef) -> tuple[dict[Any, dict[str, int]], set[tuple[str, str]]]:
    """What the comments say the counters and entries must be."""
    counters: dict[Any, dict[str, int]] = {}
    entries: set[tuple[str, str]] = set()
    async for page in scan_pages(table):
        for item in page.get("Items", []):
            if not is_comment_item(item):
                continue
            comment = item_to_comment(item)
            moves = facet_moves(None, listed(comment))
            for scope, value in moves.put:
                entries.add((item["PK"]["S"], f"FACET#{scope.token}#{value.token}"))
            for (scope, value), deltas in moves.counters.items():
                into = counters.setdefault((scope.pk, f"F#{value.token}"), {})
                for name, delta in deltas.items():
                    into[name] = into.get(name, 0) + delta
    return counters, entries


async def _assert_exact(table: TableRef) -> None:
    assert await _state(table) == await _recount(table)


async def test_entries_and_counters_follow_each_transition(table: TableRef) -> None:
    own = await own_table(table, "facets")
    new = NewComment(
        "p1", "en", 5, "Fits", "ann", facets=frozenset({FIT, BATTERY}), incentivized=True
    )
    made = (await create_comment(own, new, backoff=FAST)).comment
    counters, entries = await _state(own)
    assert len(entries) == 2
    assert counters[("PRODUCT#p1", "F#t:battery")] == {
        "c#en#5": 1,
        "c#*#5": 1,
        "i#en#5": 1,
        "i#*#5": 1,
    }
    await _assert_exact(own)
    cid = made.comment_id
    await edit_comment(own, cid, Edit(rating=2, language="de"), author_id="ann", backoff=FAST)
    await _assert_exact(own)
    assert (await _state(own))[0][("PRODUCT#p1", "F#a:fit=small")]["c#de#2"] == 1
    await reply_to_comment(own, cid, "Thanks", merchant_name="shop", backoff=FAST)
    await _assert_exact(own)
    await moderate_comment(own, cid, Decision.REJECT, moderator="m", backoff=FAST)
    assert await _state(own) == ({}, set())  # rejected: listed nowhere, counted nowhere
    await moderate_comment(own, cid, Decision.APPROVE, moderator="m", backoff=FAST)
    await _assert_exact(own)
    await delete_comment(own, cid, author_id="ann", backoff=FAST)
    assert await _state(own) == ({}, set())


async def test_pending_comments_have_no_entries_until_approved(table: TableRef) -> None:
    own = await own_table(table, "facetspre")
    new = NewComment("p1", "en", 3, "Loud", "bob", facets=frozenset({LOUD}))
    made = await create_comment(own, new, moderation=ModerationMode.PRE, backoff=FAST)
    assert await _state(own) == ({}, set())
    await moderate_comment(own, made.comment.comment_id, Decision.APPROVE, moderator="m")
    await _assert_exact(own)


async def test_racing_transitions_leave_every_facet_exact(table: TableRef) -> None:
    own = await own_table(table, "facetsrace")
    rng = random.Random(7)
    values = [FIT, BATTERY, LOUD]
    made = []
    for n in range(6):
        facets = frozenset(rng.sample(values, rng.randint(0, 3)))
        new = NewComment(
            "p1",
            rng.choice(["en", "de"]),
            rng.randint(1, 5),
            f"c{n}",
            f"a{n}",
            facets=facets,
            incentivized=n % 3 == 0,
            verified=n % 2 == 0,
        )
        made.append((await create_comment(own, new, backoff=FAST)).comment)

    async def churn(seed: int) -> None:
        local = random.Random(seed)
        for _ in range(6):
            c = local.choice(made)
            try:
                step = local.randrange(4)
                if step == 0:
                    edit = Edit(rating=local.randint(1, 5), language=local.choice(["en", "de"]))
                    await edit_comment(own, c.comment_id, edit, author_id=c.author_id, backoff=FAST)
                elif step == 1:
                    decision = local.choice([Decision.REJECT, Decision.APPROVE])
                    await moderate_comment(own, c.comment_id, decision, moderator="m", backoff=FAST)
                elif step == 2:
                    await reply_to_comment(own, c.comment_id, "ok", merchant_name="s", backoff=FAST)
                else:
                    await delete_comment(own, c.comment_id, author_id=c.author_id, backoff=FAST)
            except StorageError:
                pass  # not found (deleted), not published (no reply), a lost race given up

    await asyncio.gather(*(churn(seed) for seed in range(4)))
    await _assert_exact(own)


async def test_verify_recounts_facets_and_repairs_counters_and_entries(table: TableRef) -> None:
    own = await own_table(table, "facetsverify")
    new = NewComment("p1", "en", 4, "Fits", "ann", facets=frozenset({FIT, BATTERY}))
    made = (await create_comment(own, new, backoff=FAST)).comment
    assert (await verify(own)).exact
    pk = keys.comment_pk(made.comment_id)
    # A counter off by one, an entry gone, an entry left over, an entry keyed wrong.
    await own.client.update_item(
        TableName=own.name,
        Key={"PK": {"S": "PRODUCT#p1"}, "SK": {"S": "F#a:fit=small"}},
        UpdateExpression="ADD #c :one",
        ExpressionAttributeNames={"#c": "c#en#4"},
        ExpressionAttributeValues={":one": {"N": "1"}},
    )
    await own.client.delete_item(
        TableName=own.name, Key={"PK": {"S": pk}, "SK": {"S": "FACET#P:p1#t:battery"}}
    )
    await own.client.put_item(
        TableName=own.name,
        Item={"PK": {"S": pk}, "SK": {"S": "FACET#P:p1#t:loud"}, "FPK": {"S": "F#P:p1#t:loud#4"}},
    )
    await own.client.update_item(
        TableName=own.name,
        Key={"PK": {"S": pk}, "SK": {"S": "FACET#P:p1#a:fit=small"}},
        UpdateExpression="SET FPK = :wrong",
        ExpressionAttributeValues={":wrong": {"S": "F#P:p1#a:fit=small#1"}},
    )
    report = await verify(own)
    assert len(report.facet_drifts) == 1
    assert sorted(d.describe().rsplit(": ", 1)[1] for d in report.entry_drifts) == [
        "facet entry keyed otherwise than its comment",
        "facet entry left over",
        "facet entry missing",
    ]
    assert report.to_json()["facetCounts"][0]["expected"] == {"c#en#4": 1, "c#*#4": 1}
    fixed = await repair(own, report)
    assert (fixed.repaired, fixed.skipped) == (4, 0)
    assert (await verify(own)).exact
    await _assert_exact(own)
