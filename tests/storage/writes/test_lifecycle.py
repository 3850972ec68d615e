"""Each transition of a comment's life, one example at a time: what it stores, which
listings and counters it appears in, and that a recount agrees after every step. (The
concurrent model test drives all of them at once.)"""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from typing import Any

import pytest

from resolvers.auth import mint
from storage.base.errors import NoReply, NotAuthor, NotPublished, OwnComment, RevisedSinceReview
from storage.base.types import Response
from storage.engine.table import TableRef
from storage.engine.wrapping import ClientWrapper
from storage.model import keys
from storage.model.comments import ListingFilter, ModerationMode, NewComment, PageRequest, Status
from storage.model.indexes import Index
from storage.ops.verify import verify
from storage.reads.reader import (
    author_comments,
    author_total,
    get_counts,
    list_comments,
    moderation_queue,
    queue_length,
)
from storage.writes import create_comment, get_comment
from storage.writes.delete import delete_comment
from storage.writes.edit import Edit, edit_comment
from storage.writes.moderate import Decision, moderate_comment
from storage.writes.reply import delete_reply, reply_to_comment
from storage.writes.reports import report_comment
from tests.api_helpers import SECRET, running_api
from tests.helpers import FAST, FaultyClient, own_product_id, own_table


@pytest.fixture
async def fresh(table: TableRef) -> TableRef:
    return await own_table(table, "life")


async def listed(table: TableRef, listing: ListingFilter) -> list[str]:
    page = await list_comments(table, listing, PageRequest(size=100))
    return [c.comment_id for c in page.comments]


async def queued(table: TableRef) -> list[str]:
    page = await moderation_queue(table, PageRequest(size=100))
    return [c.comment_id for c in page.comments]


async def assert_exact(table: TableRef) -> None:
    report = await verify(table)
    assert report.exact, report.describe()


async def test_pre_moderation_holds_a_comment_until_approved(fresh: TableRef) -> None:
    pid = own_product_id()
    made = await create_comment(
        fresh,
        NewComment(pid, "en", 5, "wait", "ann", verified=True),
        moderation=ModerationMode.PRE,
        backoff=FAST,
    )
    cid = made.comment.comment_id
    assert made.comment.status is Status.PENDING
    assert await listed(fresh, ListingFilter(pid)) == []
    assert (await get_counts(fresh, pid, None)).total == 0
    assert await queued(fresh) == [cid]
    assert await queue_length(fresh) == 1
    await assert_exact(fresh)

    approved = await moderate_comment(fresh, cid, Decision.APPROVE, moderator="mod", note="ok")
    assert approved.status is Status.PUBLISHED
    assert approved.moderation.decided_by == "mod"
    assert await queued(fresh) == []
    assert await queue_length(fresh) == 0
    assert await listed(fresh, ListingFilter(pid)) == [cid]
    assert await listed(fresh, ListingFilter(pid, verified_only=True)) == [cid]
    counts = await get_counts(fresh, pid, "en")
    assert counts.by_rating == (0, 0, 0, 0, 1)
    assert counts.verified == (0, 0, 0, 0, 1)
    await assert_exact(fresh)

    rejected = await moderate_comment(fresh, cid, Decision.REJECT, moderator="mod", note="no")
    assert rejected.status is Status.REJECTED
    assert await listed(fresh, ListingFilter(pid)) == []
    assert (await get_counts(fresh, pid, None)).total == 0
    await assert_exact(fresh)


async def test_an_edit_moves_counters_between_ratings_and_languages(fresh: TableRef) -> None:
    pid = own_product_id()
    made = await create_comment(fresh, NewComment(pid, "en", 5, "first", "ann"), backoff=FAST)
    cid = made.comment.comment_id
    with pytest.raises(NotAuthor):
        await edit_comment(fresh, cid, Edit(rating=1), author_id="bob")
    after = await edit_comment(
        fresh, cid, Edit(rating=2, language="de", body="second"), author_id="ann"
    )
    assert (after.rating, after.language, after.body) == (2, "de", "second")
    assert after.edited_at is not None
    assert await listed(fresh, ListingFilter(pid, "en")) == []
    assert await listed(fresh, ListingFilter(pid, "de", frozenset({2}))) == [cid]
    assert (await get_counts(fresh, pid, None)).by_rating == (0, 1, 0, 0, 0)
    await assert_exact(fresh)
    # Under pre-moderation an edit waits again.
    waiting = await edit_comment(
        fresh, cid, Edit(body="third"), author_id="ann", moderation=ModerationMode.PRE
    )
    assert waiting.status is Status.PENDING
    assert await queued(fresh) == [cid]
    assert (await get_counts(fresh, pid, None)).total == 0
    await assert_exact(fresh)


async def test_a_blank_title_in_an_edit_removes_the_title(fresh: TableRef) -> None:
    made = await create_comment(
        fresh, NewComment(own_product_id(), "en", 4, "body", "ann", title="Title"), backoff=FAST
    )
    cid = made.comment.comment_id
    kept = await edit_comment(fresh, cid, Edit(body="new body"), author_id="ann")
    assert kept.title == "Title"
    blank = await edit_comment(fresh, cid, Edit(title="  \u3000 "), author_id="ann")
    assert (blank.title, blank.body) == (None, "new body")


async def test_a_decision_on_a_revision_the_author_replaced_is_refused(fresh: TableRef) -> None:
    pid = own_product_id()
    frozen = datetime(2026, 1, 1, tzinfo=UTC)
    made = await create_comment(
        fresh,
        NewComment(pid, "en", 3, "fine words", "ann"),
        moderation=ModerationMode.PRE,
        backoff=FAST,
        clock=lambda: frozen,
    )
    cid = made.comment.comment_id
    reviewed = made.comment.revised_at
    # Two edits within one millisecond (here: with a clock that stands still) are two
    # revisions all the same.
    edits = [
        await edit_comment(fresh, cid, Edit(body=body), author_id="ann", clock=lambda: frozen)
        for body in ("bad words", "worse words")
    ]
    revisions = [reviewed] + [e.revised_at for e in edits]
    assert revisions == sorted(set(revisions))
    for stale in revisions[:2]:
        with pytest.raises(RevisedSinceReview):
            await moderate_comment(
                fresh, cid, Decision.APPROVE, moderator="mo", reviewed=stale, backoff=FAST
            )
    assert await queued(fresh) == [cid]
    assert (await get_counts(fresh, pid, None)).total == 0
    approved = await moderate_comment(
        fresh, cid, Decision.APPROVE, moderator="mo", reviewed=revisions[-1], backoff=FAST
    )
    assert (approved.status, approved.body) == (Status.PUBLISHED, "worse words")
    await assert_exact(fresh)


async def test_reports_reaching_the_threshold_unpublish(fresh: TableRef) -> None:
    pid = own_product_id()
    cid = (await create_comment(fresh, NewComment(pid, "en", 4, "x", "ann"))).comment.comment_id
    with pytest.raises(OwnComment):
        await report_comment(fresh, cid, reporter="ann", reason="SPAM")
    first = await report_comment(fresh, cid, reporter="r1", reason="SPAM", threshold=2)
    assert first.counted
    assert first.comment.moderation.report_count == 1
    again = await report_comment(fresh, cid, reporter="r1", reason="FAKE", threshold=2)
    assert not again.counted
    assert again.comment.moderation.report_count == 1
    second = await report_comment(fresh, cid, reporter="r2", reason="FAKE", threshold=2)
    assert second.comment.status is Status.PENDING
    assert second.comment.moderation.reasons == ("SPAM", "FAKE")
    assert await listed(fresh, ListingFilter(pid)) == []
    assert await queued(fresh) == [cid]
    await assert_exact(fresh)
    with pytest.raises(NotPublished):
        await report_comment(fresh, cid, reporter="r3", reason="SPAM", threshold=2)
    # A decision starts a new round: r1 may report again, and counts once.
    await moderate_comment(fresh, cid, Decision.APPROVE, moderator="mod")
    anew = await report_comment(fresh, cid, reporter="r1", reason="OTHER", threshold=2)
    assert anew.counted
    assert anew.comment.moderation.report_count == 1
    await assert_exact(fresh)


async def test_replies_need_a_published_comment(fresh: TableRef) -> None:
    pid = own_product_id()
    cid = (await create_comment(fresh, NewComment(pid, "en", 3, "x", "ann"))).comment.comment_id
    with pytest.raises(NoReply):
        await delete_reply(fresh, cid)
    replied = await reply_to_comment(fresh, cid, "Thanks!", merchant_name="Shop")
    assert replied.reply is not None
    assert replied.reply.edited_at is None
    replaced = await reply_to_comment(fresh, cid, "Thanks again!", merchant_name="Shop")
    assert replaced.reply is not None
    assert replaced.reply.edited_at is not None
    assert replaced.reply.created_at == replied.reply.created_at
    assert (await delete_reply(fresh, cid)).reply is None
    await moderate_comment(fresh, cid, Decision.REJECT, moderator="mod")
    with pytest.raises(NotPublished):
        await reply_to_comment(fresh, cid, "late", merchant_name="Shop")


async def test_the_author_index_has_every_status_newest_first(fresh: TableRef) -> None:
    pid = own_product_id()
    ids = []
    for n, mode in enumerate([ModerationMode.POST, ModerationMode.PRE, ModerationMode.POST]):
        new = NewComment(
            pid, "en", 1 + n, f"c{n}", "writer", created_at=f"2026-01-0{n + 1}T00:00:00.000Z"
        )
        ids.append((await create_comment(fresh, new, moderation=mode)).comment.comment_id)
    await moderate_comment(fresh, ids[2], Decision.REJECT, moderator="mod")
    page = await author_comments(fresh, "writer", PageRequest(size=2))
    assert [c.comment_id for c in page.comments] == ids[::-1][:2]
    assert page.has_more
    assert page.plan.index is Index.BY_AUTHOR
    assert await author_total(fresh, "writer") == 3
    rest = await author_comments(fresh, "writer", PageRequest(size=2, position=page.positions[-1]))
    assert [c.comment_id for c in rest.comments] == [ids[0]]


async def test_delete_of_a_pending_comment_moves_no_counter(fresh: TableRef) -> None:
    pid = own_product_id()
    made = await create_comment(
        fresh, NewComment(pid, "en", 5, "x", "ann"), moderation=ModerationMode.PRE
    )
    assert await queue_length(fresh) == 1
    await delete_comment(fresh, made.comment.comment_id)
    assert await queued(fresh) == []
    assert await queue_length(fresh) == 0
    await assert_exact(fresh)


async def report_items(table: TableRef, cid: str) -> list[str]:
    response = await table.client.query(
        TableName=table.name,
        KeyConditionExpression="PK = :pk AND begins_with(SK, :r)",
        ExpressionAttributeValues={
            ":pk": {"S": keys.comment_pk(cid)},
            ":r": {"S": keys.REPORT_PREFIX},
        },
        ConsistentRead=True,
    )
    return [i["SK"]["S"] for i in response["Items"]]


async def test_a_delete_takes_the_reports_along_and_looks_only_when_there_were_some(
    fresh: TableRef,
) -> None:
    pid = own_product_id()
    counting = FaultyClient(fresh.client, lambda operation, kwargs: None)
    table = TableRef(counting, fresh.name)
    quiet, loud = [
        (await create_comment(table, NewComment(pid, "en", 4, "x", "ann"))).comment.comment_id
        for _ in range(2)
    ]
    await report_comment(table, loud, reporter="r1", reason="SPAM")
    assert await report_items(fresh, loud)
    counting.calls.clear()
    await delete_comment(table, quiet)
    # Never reported (round 0, no count): no query for reports.
    assert "query" not in counting.calls
    await delete_comment(table, loud)
    assert "query" in counting.calls
    assert await report_items(fresh, loud) == []
    await assert_exact(fresh)


class _StuckReportQueries(ClientWrapper):
    """Storage that never answers the query for a comment's reports."""

    async def _call(self, operation: str, kwargs: dict[str, Any]) -> Response:
        if operation == "query" and kwargs.get("ConsistentRead"):
            await asyncio.sleep(3600)
        return await super()._call(operation, kwargs)


async def test_a_committed_delete_is_answered_as_done_when_the_tidy_up_stalls(
    fresh: TableRef,
) -> None:
    pid = own_product_id()
    cid = (await create_comment(fresh, NewComment(pid, "en", 4, "x", "ann"))).comment.comment_id
    await report_comment(fresh, cid, reporter="r1", reason="SPAM")
    query = "mutation($i: DeleteCommentInput!) { deleteComment(input: $i) { deletedId } }"
    async with running_api(_StuckReportQueries(fresh.client), fresh.name, storage_timeout=2) as api:
        body = await api.gql(query, {"i": {"id": cid}}, mint(SECRET, "ann"))
    assert "errors" not in body, body["errors"]
    assert body["data"]["deleteComment"]["deletedId"]
    assert await get_comment(fresh, cid) is None
    assert (await get_counts(fresh, pid, None)).total == 0
