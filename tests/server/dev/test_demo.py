"""The demo data: deterministic, with comments in every part of their life, and seeded with
every counter exact (the moderation queue's and the authors' per-product counts included)."""

from __future__ import annotations

import uuid
from collections import Counter
from dataclasses import replace

import httpx
import pytest

from server.dev.demo import demo_comments
from server.dev.local_engine import LocalEngine
from storage.base.errors import InvalidInput
from storage.engine.table import TableRef
from storage.model.comments import Comment, PageRequest, Status
from storage.ops.bulk import load_new_products
from storage.ops.verify import verify
from storage.reads.reader import author_total, moderation_queue, queue_length
from testing.live_server import live_server
from tests.api_helpers import SECRET
from tests.helpers import own_product_id, own_table

PRODUCTS = 3  # besides sku-hot, whose 2,000 comments hold every kind


def test_the_same_seed_gives_the_same_data() -> None:
    assert list(demo_comments(PRODUCTS)) == list(demo_comments(PRODUCTS))
    assert list(demo_comments(PRODUCTS, seed=7)) != list(demo_comments(PRODUCTS))


def test_the_demo_has_comments_in_every_part_of_their_life() -> None:
    comments = list(demo_comments(PRODUCTS))
    statuses = Counter(c.status for c in comments)
    assert set(statuses) == set(Status)
    assert statuses[Status.PUBLISHED] > 0.9 * len(comments)
    pending = [c for c in comments if c.status is Status.PENDING]
    assert all(c.submitted_at == c.created_at for c in pending)
    rejected = [c for c in comments if c.status is Status.REJECTED]
    assert all(c.moderation.note and c.moderation.decided_by for c in rejected)
    assert all(c.created_at < (c.moderation.decided_at or "") for c in rejected)
    published = [c for c in comments if c.published]
    assert any(c.verified for c in published)
    assert any(not c.verified for c in published)
    edited = [c for c in published if c.edited_at is not None]
    assert edited
    assert all(c.created_at < (c.edited_at or "") for c in edited)
    replied = [c.reply for c in published if c.reply is not None]
    assert replied
    assert any(r.edited_at is not None for r in replied)
    # Only published comments are answered; only they are edited in the demo.
    assert all(c.reply is None and c.edited_at is None for c in pending + rejected)
    # Helpful votes for the most helpful order: many equal counts, and unvoted comments.
    helpful = [c.helpful for c in published]
    assert 0 in helpful
    assert len({h for h in helpful if h}) > 3
    assert len(helpful) - len(set(helpful)) > len(helpful) // 2


@pytest.fixture(scope="module")
async def seeded(table: TableRef) -> tuple[TableRef, list[Comment]]:
    fresh = await own_table(table, "demo")
    comments = list(demo_comments(PRODUCTS))
    assert await load_new_products(fresh, comments) == len(comments)
    return fresh, comments


async def test_the_seeded_demo_is_exact(seeded: tuple[TableRef, list[Comment]]) -> None:
    fresh, comments = seeded
    report = await verify(fresh)
    assert report.exact, report.describe()
    assert report.comments == len(comments)
    pending = sorted(
        (c for c in comments if c.status is Status.PENDING), key=lambda c: c.queue_key or ""
    )
    assert await queue_length(fresh) == len(pending)
    queue = await moderation_queue(fresh, PageRequest(size=100))
    assert [c.comment_id for c in queue.comments] == [c.comment_id for c in pending]
    ana = sum(c.author_id == "ana" for c in comments)
    assert await author_total(fresh, "ana") == ana


async def test_loading_the_demo_again_is_refused(seeded: tuple[TableRef, list[Comment]]) -> None:
    fresh, comments = seeded
    with pytest.raises(InvalidInput, match="already have comments"):
        await load_new_products(fresh, comments)
    report = await verify(fresh)
    assert report.exact, report.describe()


async def test_a_pending_comment_is_never_counted_twice(table: TableRef) -> None:
    fresh = await own_table(table, "demo")
    queued = replace(
        next(iter(demo_comments(0))),
        product_id=own_product_id(),
        status=Status.PENDING,
        submitted_at="2026-10-30T12:00:00.000Z",
    )
    await load_new_products(fresh, [queued])
    assert await queue_length(fresh) == 1
    # Its product has no published comment, so zero counters: its author's count says it
    # has comments.
    with pytest.raises(InvalidInput, match="already have comments"):
        await load_new_products(fresh, [queued])
    # Under another author's name no count says so: the comment's own condition does.
    with pytest.raises(InvalidInput, match="exist already"):
        await load_new_products(fresh, [replace(queued, author_id="someone-else")])
    assert await queue_length(fresh) == 1
    report = await verify(fresh)
    assert report.exact, report.describe()


FIRST_LOOK = """{
  topProducts(first: 3) { product { stats { total } } }
  productGroup(groupId: "demo-runner") { products { totalCount } topics(first: 1) { count } }
}"""


def test_a_server_that_makes_its_table_serves_its_demo_data(engine: LocalEngine) -> None:
    # One process, as `comments serve` runs by default: it makes the table, records its
    # layout, reads it (which opens its write gate), then writes the demo data through
    # that gate. Seeding before the first read had every write refused.
    table = f"demo_{uuid.uuid4().hex[:8]}"
    with live_server(
        engine.endpoint_url,
        table,
        SECRET,
        CREATE_TABLE="true",
        SEED_DEMO="true",
        DEMO_PRODUCTS="3",
        LIVE_UPDATES="false",
    ) as server:
        response = httpx.post(server.graphql_url, json={"query": FIRST_LOOK}, timeout=30).json()
    totals = [r["product"]["stats"]["total"] for r in response["data"]["topProducts"]]
    assert totals
    assert all(total > 0 for total in totals)
    # The facet reviews too (test_demo_facets.py counts them).
    group = response["data"]["productGroup"]
    assert group["products"]["totalCount"] == 3
    assert group["topics"][0]["count"] > 0
