"""Answers checked against the stored definitions, topics tagged with the stored taxonomy,
on create and on edit: every problem named with its path, nothing written when refused,
entries and counters exact after each step, and the largest comment's edit fits."""

from __future__ import annotations

import asyncio
from dataclasses import replace
from typing import Any

import pytest

from storage.base.errors import IdempotencyKeyReused
from storage.engine.table import TableRef
from storage.model.attributes import parse_definitions
from storage.model.comments import NewComment
from storage.model.facets import ACTION_BUDGET, FacetKind, FacetValue, Scope
from storage.model.items import INCENTIVIZED_ATTR, comment_key
from storage.model.problems import InvalidFields
from storage.model.topics import Tagger
from storage.ops.group_move import move_product
from storage.ops.verify import scan_pages, verify
from storage.writes import create_comment, get_comment
from storage.writes.edit import Edit, edit_comment
from storage.writes.facet_settings import read_definitions, save_definitions
from storage.writes.tagging import FreshTaxonomy, TaxonomyCache
from tests.helpers import FAST, own_table
from tests.storage.facet_samples import (
    DEFINITIONS,
    FIT,
    Recording,
    store_definitions,
    store_taxonomy,
    taxonomy,
)

FRESH = FreshTaxonomy()
FIT_SMALL = {"key": "fit", "value": "small"}


def answers(facets: frozenset[FacetValue]) -> set[str]:
    return {f.token for f in facets if f.kind is FacetKind.ATTRIBUTE}


def topics(facets: frozenset[FacetValue]) -> set[str]:
    return {f.key for f in facets if f.kind is FacetKind.TOPIC}


def _sk(action: dict[str, Any]) -> str:
    [(_, request)] = action.items()
    key = request.get("Key") or request["Item"]
    return str(key["SK"]["S"])


async def _items(table: TableRef) -> list[dict[str, Any]]:
    return [item async for page in scan_pages(table) for item in page.get("Items", [])]


async def test_answers_are_refused_with_every_problem_and_its_path(table: TableRef) -> None:
    own = await own_table(table, "answers")
    await store_definitions(own, "p1", DEFINITIONS)
    before = await _items(own)
    bad = [
        {"key": "fit", "value": "huge"},
        {"key": "colour", "value": "red"},
        {"key": "fit", "value": "small"},
        {"key": "comfort"},
        {"key": "width", "value": "small"},
    ]
    new = NewComment("p1", "en", 4, "Fine", "ann")
    with pytest.raises(InvalidFields) as caught:
        await create_comment(own, new, answers=bad, taxonomy=FRESH, backoff=FAST)
    assert [(p.dotted, p.code) for p in caught.value.problems] == [
        ("attributes", "TOO_MANY_ANSWERS"),
        ("attributes[0].value", "VALUE_NOT_ALLOWED"),
        ("attributes[1].key", "UNKNOWN_KEY"),
        ("attributes[2].key", "DUPLICATE_ANSWER"),
        ("attributes[3].value", "REQUIRED"),
    ]
    assert await _items(own) == before  # nothing was written
    # A product without definitions asks nothing: any answer is an unknown key.
    with pytest.raises(InvalidFields) as caught:
        await create_comment(
            own,
            NewComment("p2", "en", 4, "Fine", "ann"),
            answers=[{"key": "fit", "value": "small"}],
        )
    assert [(p.dotted, p.code) for p in caught.value.problems] == [
        ("attributes[0].key", "UNKNOWN_KEY")
    ]


async def test_a_create_keeps_its_answers_and_its_tags_and_why(table: TableRef) -> None:
    own = await own_table(table, "tagcreate")
    await store_definitions(own, "p1", DEFINITIONS)
    chosen = taxonomy()
    await store_taxonomy(own, chosen)
    new = NewComment(
        "p1", "en", 5, "The battery lasts; the screen is bright. Batteries!", "ann", title="Sound"
    )
    given = [{"key": "fit", "value": "small"}, {"key": "comfort", "value": "4"}]
    made = (await create_comment(own, new, answers=given, taxonomy=FRESH, backoff=FAST)).comment
    assert answers(made.facets) == {"a:fit=small", "a:comfort=4"}
    assert topics(made.facets) == {"battery", "screen", "sound"}
    record = made.tagging
    assert record is not None
    assert record.fingerprint == Tagger.for_taxonomy(chosen).fingerprint
    assert record.topics == (("battery", 2), ("screen", 1), ("sound", 1))
    texts = {"title": made.title or "", "body": made.body}
    shown = {(m.topic, m.field, texts[m.field][m.start : m.end]) for m in record.matches}
    assert shown == {
        ("battery", "body", "battery"),
        ("battery", "body", "Batteries"),
        ("screen", "body", "screen"),
        ("sound", "title", "Sound"),
    }
    assert await get_comment(own, made.comment_id) == made  # stored as made, record and all
    assert (await verify(own)).exact


async def test_edits_replace_answers_and_tag_again_only_when_the_text_changes(
    table: TableRef,
) -> None:
    base = await own_table(table, "tagedit")
    recording = Recording(base.client)
    own = TableRef(recording, base.name)
    await store_definitions(own, "p1", DEFINITIONS)
    await store_taxonomy(own, taxonomy())
    new = NewComment("p1", "en", 4, "Good battery", "ann")
    given = [{"key": "fit", "value": "small"}, {"key": "would-recommend", "value": "yes"}]
    made = (await create_comment(own, new, answers=given, taxonomy=FRESH, backoff=FAST)).comment
    cid = made.comment_id

    async def edit(change: Edit) -> Any:
        return await edit_comment(own, cid, change, author_id="ann", taxonomy=FRESH, backoff=FAST)

    # Answers replaced: the tags and their record stay as they were, no taxonomy read.
    recording.calls.clear()
    after = await edit(Edit(attributes=[{"key": "comfort", "value": "2"}]))
    assert answers(after.facets) == {"a:comfort=2"}
    assert topics(after.facets) == {"battery"}
    assert after.tagging == made.tagging
    taxonomy_reads = [
        kw for name, kw in recording.calls if kw.get("Key", {}).get("PK") == {"S": "TAXONOMY"}
    ]
    assert taxonomy_reads == []
    # A rating alone: answers left (None), no definitions read, no tagging.
    recording.calls.clear()
    after = await edit(Edit(rating=2))
    assert answers(after.facets) == {"a:comfort=2"}
    assert recording.count("get_item") == 1  # the comment, as every transition reads it
    # The body: tagged again.
    after = await edit(Edit(body="The screen and the display, not the sound"))
    assert topics(after.facets) == {"screen", "sound"}
    assert after.tagging is not None
    assert after.tagging.topics == (("screen", 2), ("sound", 1))
    assert (await verify(own)).exact
    # [] clears the answers; the language tags with that language's words.
    after = await edit(Edit(attributes=[], language="de", body="Der Akku hält"))
    assert answers(after.facets) == set()
    assert topics(after.facets) == {"battery"}
    # A language the taxonomy has no words for: not tagged, and the record says so.
    after = await edit(Edit(language="fr"))
    assert topics(after.facets) == set()
    assert after.tagging is not None
    assert after.tagging.method.value == "UNTAGGED"
    assert (await verify(own)).exact


async def test_a_retired_value_stays_where_it_is_and_is_never_given_anew(table: TableRef) -> None:
    own = await own_table(table, "retired")
    await store_definitions(own, "p1", [FIT])
    large = [{"key": "fit", "value": "large"}]
    first = NewComment("p1", "en", 3, "Roomy", "ann")
    kept = (await create_comment(own, first, answers=large, backoff=FAST)).comment
    second = NewComment("p1", "en", 3, "Snug", "bob")
    other = (
        await create_comment(own, second, answers=[{"key": "fit", "value": "small"}], backoff=FAST)
    ).comment
    narrower = parse_definitions([{**FIT, "values": FIT["values"][:2]}])  # type: ignore[index]
    scope = Scope.product("p1")
    stored = await save_definitions(own, scope, narrower, revision=1)
    assert [(r.key, r.value) for r in stored.retired] == [("fit", "large")]
    # Resent unchanged with the rest of an edit: kept.
    after = await edit_comment(
        own, kept.comment_id, Edit(attributes=large, body="Roomier"), author_id="ann"
    )
    assert answers(after.facets) == {"a:fit=large"}
    # Given anew, by a create or an edit of another answer: refused, with its path.
    for attempt in (
        create_comment(own, NewComment("p1", "en", 3, "Big", "cat"), answers=large),
        edit_comment(own, other.comment_id, Edit(attributes=large), author_id="bob"),
    ):
        with pytest.raises(InvalidFields) as caught:
            await attempt
        assert [(p.dotted, p.code) for p in caught.value.problems] == [
            ("attributes[0].value", "VALUE_NOT_ALLOWED")
        ]
    assert (await read_definitions(own, scope)).revision == 2
    assert (await verify(own)).exact


async def test_incentivized_is_stored_and_no_edit_changes_it(table: TableRef) -> None:
    own = await own_table(table, "incentive")
    await store_definitions(own, "p1", DEFINITIONS)
    with pytest.raises(TypeError):
        Edit(incentivized=False)  # type: ignore[call-arg]
    new = NewComment("p1", "en", 5, "Free sample", "ann", incentivized=True)
    made = (await create_comment(own, new, answers=[FIT_SMALL], backoff=FAST)).comment
    for change in (
        Edit(body="Still a free sample"),
        Edit(rating=3, language="de"),
        Edit(attributes=[]),
    ):
        after = await edit_comment(own, made.comment_id, change, author_id="ann", backoff=FAST)
        assert after.incentivized
    item = await own.client.get_item(TableName=own.name, Key=comment_key(made.comment_id))
    assert item["Item"][INCENTIVIZED_ATTR] == {"BOOL": True}
    counter = await own.client.get_item(
        TableName=own.name, Key={"PK": {"S": "PRODUCT#p1"}, "SK": {"S": "F#inc"}}
    )
    assert counter["Item"]["i#de#3"] == {"N": "1"}
    assert (await verify(own)).exact


async def test_the_largest_comment_edited_to_replace_every_value_commits(table: TableRef) -> None:
    base = await own_table(table, "largest")
    recording = Recording(base.client)
    own = TableRef(recording, base.name)
    await store_definitions(own, "p1", DEFINITIONS)
    await store_taxonomy(own, taxonomy())
    cache = TaxonomyCache()
    new = NewComment(
        "p1",
        "en",
        5,
        "battery, screen, sound and price",
        "ann",
        verified=True,
        incentivized=True,
    )
    given = [
        {"key": "fit", "value": "small"},
        {"key": "width", "value": "small"},
        {"key": "would-recommend", "value": "yes"},
        {"key": "comfort", "value": "5"},
    ]
    made = (await create_comment(own, new, answers=given, taxonomy=cache, backoff=FAST)).comment
    assert len(made.facets) == 8
    replaced = [
        {"key": "fit", "value": "large"},
        {"key": "width", "value": "large"},
        {"key": "would-recommend", "value": "no"},
        {"key": "quality", "value": "1"},
    ]
    edit = Edit(attributes=replaced, body="size, weight, color and delivery", rating=1)
    recording.calls.clear()
    after = await edit_comment(
        own, made.comment_id, edit, author_id="ann", taxonomy=cache, backoff=FAST
    )
    assert not (after.facets & made.facets)
    assert topics(after.facets) == {"size", "weight", "color", "delivery"}
    [committed] = recording.transactions()
    # 8 entries put, 8 deleted, 17 counter items (16 values and the incentivized one);
    # with the comment and its stats, within the facets' budget, far from DynamoDB's 100.
    facet_parts = [a for a in committed if _sk(a).startswith(("FACET#", "F#"))]
    assert len(facet_parts) == 8 + 8 + 17
    assert len(committed) <= ACTION_BUDGET
    assert (await verify(own)).exact


async def test_a_repeated_create_is_the_same_request_only_with_the_same_answers(
    table: TableRef,
) -> None:
    own = await own_table(table, "answerskey")
    await store_definitions(own, "p1", DEFINITIONS)
    new = NewComment("p1", "en", 4, "Fine", "ann", idempotency_key="k1")
    first = await create_comment(own, new, answers=[FIT_SMALL], taxonomy=FRESH, backoff=FAST)
    again = await create_comment(own, new, answers=[FIT_SMALL], taxonomy=FRESH, backoff=FAST)
    assert (again.created, again.comment.comment_id) == (False, first.comment.comment_id)
    for other, incentivized in (([{"key": "fit", "value": "large"}], False), ([FIT_SMALL], True)):
        with pytest.raises(IdempotencyKeyReused):
            await create_comment(
                own, replace(new, incentivized=incentivized), answers=other, backoff=FAST
            )


async def test_creates_racing_a_definitions_change_leave_each_answer_counted(
    table: TableRef,
) -> None:
    own = await own_table(table, "answersrace")
    await store_definitions(own, "p1", [FIT])
    large = [{"key": "fit", "value": "large"}]
    narrower = parse_definitions([{**FIT, "values": FIT["values"][:2]}])  # type: ignore[index]

    async def create(n: int) -> str:
        new = NewComment("p1", "en", 1 + n % 5, f"take {n}", f"a{n}")
        try:
            await create_comment(own, new, answers=large, backoff=FAST)
        except InvalidFields as exc:
            return ",".join(p.code for p in exc.problems)
        return "created"

    outcomes = await asyncio.gather(
        *(create(n) for n in range(8)),
        save_definitions(own, Scope.product("p1"), narrower, revision=1),
    )
    assert set(outcomes[:8]) <= {"created", "VALUE_NOT_ALLOWED"}
    created = outcomes[:8].count("created")
    # Every create checked against the set before the change (or refused by the one after);
    # those that committed count under the value now retired, exactly.
    assert (await create(99)) == "VALUE_NOT_ALLOWED"
    counter = await own.client.get_item(
        TableName=own.name, Key={"PK": {"S": "PRODUCT#p1"}, "SK": {"S": "F#a:fit=large"}}
    )
    counted = sum(int(v["N"]) for k, v in counter.get("Item", {}).items() if k.startswith("c#*#"))
    assert counted == created
    assert (await verify(own)).exact


async def test_a_grouped_products_reviewers_answer_the_groups_definitions(
    table: TableRef,
) -> None:
    own = await own_table(table, "groupanswers")
    pid, group = "variant-red", "model-x"
    await move_product(own, pid, group)
    # The group asks "fit"; the product itself asks nothing.
    await save_definitions(own, Scope.group(group), parse_definitions(DEFINITIONS), revision=0)
    made = await create_comment(
        own, NewComment(pid, "en", 4, "fits", "ann"), answers=[FIT_SMALL], backoff=FAST
    )
    assert answers(made.comment.facets) == {"a:fit=small"}
    with pytest.raises(InvalidFields) as refused:
        await create_comment(
            own,
            NewComment(pid, "en", 4, "fits", "bob"),
            answers=[{"key": "colour", "value": "red"}],
            backoff=FAST,
        )
    assert [p.dotted for p in refused.value.problems] == ["attributes[0].key"]
    assert (await verify(own)).exact
