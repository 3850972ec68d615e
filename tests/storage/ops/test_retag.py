"""The re-tagging backfill: after a taxonomy change every comment ends tagged with the new
one, through a run stopped midway and finished by the next while writers edit comments,
with every counter and entry exact after; a finished run costs no scan, a newer taxonomy
starts over, and a run waits until no process can tag with the one before."""

from __future__ import annotations

import asyncio
import random
from typing import Any

import pytest

from storage.base.errors import StorageError, StorageUnavailable
from storage.engine.table import TableRef
from storage.model.comments import Comment, NewComment
from storage.model.facets import FacetKind
from storage.model.items import is_comment_item, item_to_comment
from storage.model.topics import Tagger
from storage.ops.retag import CHECKPOINT_KEY, retag_comments
from storage.ops.verify import scan_pages, verify
from storage.writes import create_comment
from storage.writes.delete import delete_comment
from storage.writes.edit import Edit, edit_comment
from storage.writes.moderate import Decision, moderate_comment
from storage.writes.tagging import FreshTaxonomy, TaxonomyCache, tag
from tests.helpers import FAST, FaultyClient, own_table
from tests.storage.facet_samples import Recording, store_taxonomy, taxonomy

OLD = taxonomy({"battery": ["battery"], "screen": ["screen"]})
NEW = taxonomy({"battery": ["battery", "charge"], "sound": ["sound"], "price": ["price"]})
PHRASES = ["battery", "charge", "screen", "sound", "price", "nothing"]


async def _comments(table: TableRef) -> list[Comment]:
    return [
        item_to_comment(item)
        async for page in scan_pages(table)
        for item in page.get("Items", [])
        if is_comment_item(item)
    ]


async def _seed(table: TableRef, count: int) -> list[Comment]:
    """``count`` comments tagged with OLD, on two products, in English and German."""
    await store_taxonomy(table, OLD)
    rng = random.Random(3)
    made = []
    for n in range(count):
        body = " and ".join(rng.sample(PHRASES, 3))
        new = NewComment(f"p{n % 2}", ["en", "de"][n % 4 == 3], rng.randint(1, 5), body, f"a{n}")
        result = await create_comment(
            table, new, taxonomy=FreshTaxonomy(), answers=[], backoff=FAST
        )
        made.append(result.comment)
    return made


def _assert_tagged_with(comments: list[Comment], tagger: Tagger) -> None:
    for c in comments:
        assert c.tagging is not None
        assert c.tagging.fingerprint == tagger.fingerprint
        topics = {f for f in c.facets if f.kind is FacetKind.TOPIC}
        assert topics == {f for f in tag(tagger, c).facets if f.kind is FacetKind.TOPIC}


async def test_a_stopped_run_is_finished_by_the_next_while_writers_edit(table: TableRef) -> None:
    own = await own_table(table, "retag")
    made = await _seed(own, 24)
    # A process still holding OLD tags an edit after NEW is saved: re-tagged like the rest.
    stale_cache = TaxonomyCache(check_seconds=3600)
    await stale_cache.tagger(own)
    await store_taxonomy(own, NEW)
    await edit_comment(
        own, made[0].comment_id, Edit(body="screen"), author_id="a0", taxonomy=stale_cache
    )
    # The first run fails on its third re-tag after its first checkpoint: mid-page.
    checkpoints = retags = 0

    def rule(operation: str, kwargs: dict[str, Any]) -> Exception | None:
        nonlocal checkpoints, retags
        if operation == "put_item" and kwargs["Item"]["SK"] == CHECKPOINT_KEY["SK"]:
            checkpoints += 1
        if operation == "transact_write_items" and checkpoints:
            retags += 1
            if retags == 3:
                return StorageUnavailable("injected")
        return None

    faulty = TableRef(FaultyClient(own.client, rule), own.name)
    lines: list[str] = []
    with pytest.raises(StorageUnavailable):
        await retag_comments(faulty, page_items=15, settle_seconds=0, progress=lines.append)
    assert checkpoints >= 1
    assert lines[0].startswith("re-tagging: 15/~")
    assert "items/s" in lines[0]

    # Writers edit, moderate and delete while the next run finishes the work.
    async def writer(seed: int) -> None:
        rng = random.Random(seed)
        for _ in range(5):
            c = rng.choice(made)
            try:
                step = rng.randrange(3)
                if step == 0:
                    body = " ".join(rng.sample(PHRASES, 2))
                    edit = Edit(body=body, rating=rng.randint(1, 5))
                    await edit_comment(
                        own, c.comment_id, edit, author_id=c.author_id, taxonomy=FreshTaxonomy()
                    )
                elif step == 1:
                    decision = rng.choice([Decision.REJECT, Decision.APPROVE])
                    await moderate_comment(own, c.comment_id, decision, moderator="m")
                else:
                    await delete_comment(own, c.comment_id, author_id=c.author_id)
            except StorageError:
                pass  # deleted already, or nothing to decide

    recording = Recording(own.client)
    watched = TableRef(recording, own.name)
    run = asyncio.ensure_future(retag_comments(watched, page_items=15, settle_seconds=0))
    await asyncio.gather(run, *(writer(seed) for seed in range(3)))
    finished = run.result()
    assert finished.resumed
    assert "ExclusiveStartKey" in next(kw for op, kw in recording.calls if op == "scan")
    assert finished.retagged_in_all >= finished.retagged > 0
    comments = await _comments(own)
    _assert_tagged_with(comments, Tagger.for_taxonomy(NEW))
    assert (await verify(own)).exact

    # Finished: the next run reads its checkpoint and scans nothing.
    recording.calls.clear()
    again = await retag_comments(watched, settle_seconds=0)
    assert again.already_done
    assert recording.count("scan") == 0
    # A newer taxonomy: from the start.
    newest = taxonomy({"price": ["price", "cheap"]})
    await store_taxonomy(own, newest)
    fresh = await retag_comments(watched, settle_seconds=0)
    assert not fresh.resumed
    assert fresh.retagged == len(comments)
    _assert_tagged_with(await _comments(own), Tagger.for_taxonomy(newest))
    assert (await verify(own)).exact


async def test_a_run_waits_until_no_process_tags_with_the_taxonomy_before(
    table: TableRef,
) -> None:
    own = await own_table(table, "retagwait")
    # No taxonomy at all: nothing to converge to, nothing to wait for.
    nothing = await retag_comments(own, settle_seconds=60)
    assert (nothing.fingerprint, nothing.retagged) == (None, 0)
    await store_taxonomy(own, OLD)
    waits: list[float] = []

    async def sleep(seconds: float) -> None:
        waits.append(seconds)

    head_time = (
        await own.client.get_item(
            TableName=own.name, Key={"PK": {"S": "TAXONOMY"}, "SK": {"S": "HEAD"}}
        )
    )["Item"]["savedAt"]["N"]
    lines: list[str] = []
    await retag_comments(
        own,
        settle_seconds=60,
        wall_clock=lambda: float(head_time) + 45,
        sleep=sleep,
        progress=lines.append,
    )
    assert waits == [pytest.approx(15)]
    assert lines[0] == "waiting 15 s for every process to take the new taxonomy"
