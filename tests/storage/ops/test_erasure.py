"""Privacy requests in storage: the export holds exactly what one author made; an erasure in
either mode leaves every count exact (``verify``), nothing that links to the subject, and
no limit or idempotency item of theirs; it is idempotent, resumes after a crash, and
holds its cut while the author keeps writing."""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
from dataclasses import dataclass
from typing import Any

import pytest

from storage.base.errors import AuthorErasing, StorageError
from storage.base.types import Response
from storage.engine.table import TableRef
from storage.engine.wrapping import ClientWrapper
from storage.model import keys
from storage.model.comments import NewComment, Status, Vote
from storage.model.erasure import ANONYMOUS, ANONYMOUS_PREFIX, Mode, State, job_key
from storage.model.facets import FacetValue
from storage.model.items import is_comment_item, item_to_comment
from storage.ops.erasure import read_job, run_erasure, start_erasure
from storage.ops.verify import scan_pages, verify
from storage.reads.author_data import export_document, find_author_data
from storage.writes import DEFAULT_LIMITS, create_comment, get_comment
from storage.writes.edit import Edit, edit_comment
from storage.writes.moderate import Decision, moderate_comment
from storage.writes.reports import report_comment
from storage.writes.votes import vote_helpful
from tests.helpers import FAST, own_table

SUBJECT = "alice@example.com"
BATTERY = FacetValue.topic("battery")
FIT = FacetValue.attribute("fit", "small")
OTHERS = ("bob", "carol", "dave")
VOTERS = ("erin", "frank", "gina")


def _new(
    author: str, product: str, rating: int, key: str | None = None, *, topic: bool = False
) -> NewComment:
    return NewComment(
        facets=frozenset({BATTERY, FIT}) if topic else frozenset(),
        product_id=product,
        language="en",
        rating=rating,
        body=f"a review of {product}",
        author_id=author,
        author_name=author.split("@")[0].title(),
        idempotency_key=key,
    )


@dataclass
class World:
    table: TableRef
    mine: list[str]  # the subject's comments
    theirs: list[str]  # others' comments


async def _world(table: TableRef, prefix: str) -> World:
    """The subject's comments in every status (with idempotency records and limit items),
    others' comments, and the subject's votes and reports on others' comments (and theirs
    on the subject's)."""
    own = await own_table(table, prefix)
    limits = DEFAULT_LIMITS
    mine = []
    for n, product in enumerate(("p1", "p2", "p3", "p4")):
        made = await create_comment(
            own,
            # With facet values: their entries copy the author too.
            _new(SUBJECT, product, 5 - n % 2, key=f"k{n}", topic=n == 0),
            write_limits=limits,
            backoff=FAST,
        )
        mine.append(made.comment.comment_id)
    # PENDING (reported back to the queue by others) and REJECTED.
    for reporter in OTHERS:
        await report_comment(own, mine[1], reporter=reporter, reason="SPAM", backoff=FAST)
    await moderate_comment(own, mine[2], Decision.REJECT, moderator="mod", backoff=FAST)
    theirs = []
    for author in OTHERS:
        for product in ("p1", "p2"):
            made = await create_comment(
                own, _new(author, product, 5), write_limits=limits, backoff=FAST
            )
            theirs.append(made.comment.comment_id)
    for cid in theirs[:4]:
        await vote_helpful(own, cid, voter=SUBJECT, vote=Vote.HELPFUL, backoff=FAST)
    await vote_helpful(own, theirs[4], voter=SUBJECT, vote=Vote.NOT_HELPFUL, backoff=FAST)
    for voter in VOTERS:
        await vote_helpful(own, theirs[0], voter=voter, vote=Vote.HELPFUL, backoff=FAST)
        await vote_helpful(own, mine[0], voter=voter, vote=Vote.HELPFUL, backoff=FAST)
    for cid in theirs[2:4]:
        await report_comment(own, cid, reporter=SUBJECT, reason="OFF_TOPIC", backoff=FAST)
    await report_comment(own, theirs[3], reporter="erin", reason="SPAM", backoff=FAST)
    # The subject voted on a comment that was unpublished since.
    await moderate_comment(own, theirs[1], Decision.REJECT, moderator="mod", backoff=FAST)
    return World(own, mine, theirs)


def _traces(subject: str) -> list[str]:
    """The subject and every digest of it the table's keys use."""
    return [
        subject,
        keys.author_pk(subject),
        keys.vote_sk(subject),
        keys.report_sk(subject),
        hashlib.sha256(subject.encode()).hexdigest()[:32],
    ]


async def _all_items(table: TableRef) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    async for page in scan_pages(table):
        items += page.get("Items", [])
    return items


async def _linked(table: TableRef, subject: str) -> list[str]:
    """Every item whose text holds the subject or one of its digests."""
    traces = _traces(subject)
    return [
        f"{i['PK']['S']} {i['SK']['S']}"
        for i in await _all_items(table)
        if any(t in json.dumps(i) for t in traces)
    ]


async def _erase(table: TableRef, mode: Mode) -> tuple[str, dict[str, int]]:
    job = await start_erasure(table, SUBJECT, mode)
    done = await asyncio.wait_for(run_erasure(table, job.request_id, backoff=FAST), 60)
    assert done.state is State.DONE
    return job.request_id, done.counts


async def test_the_export_holds_exactly_what_the_author_made(table: TableRef) -> None:
    w = await _world(table, "privacyexport")
    found = await asyncio.wait_for(find_author_data(w.table, SUBJECT), 30)
    doc = export_document(SUBJECT, found, "2026-01-01T00:00:00.000Z")
    assert sorted(c["id"] for c in doc["comments"]) == sorted(w.mine)
    statuses = sorted(c["status"] for c in doc["comments"])
    assert statuses == ["PENDING", "PUBLISHED", "PUBLISHED", "REJECTED"]
    assert {c["body"] for c in doc["comments"]} == {f"a review of p{n}" for n in (1, 2, 3, 4)}
    assert {c["authorName"] for c in doc["comments"]} == {"Alice"}
    assert [c["answers"] for c in doc["comments"] if c["answers"]] == [[FIT.token]]
    votes = {(v["commentId"], v["vote"]) for v in doc["votes"]}
    assert votes == {(cid, "HELPFUL") for cid in w.theirs[:4]} | {(w.theirs[4], "NOT_HELPFUL")}
    assert sorted(r["commentId"] for r in doc["reports"]) == sorted(w.theirs[2:4])
    assert {r["reason"] for r in doc["reports"]} == {"OFF_TOPIC"}
    assert doc["replies"] == []
    assert doc["photos"] == []
    # Idempotency records of the subject's comments, and nobody else's items.
    assert len(found.records) == 4
    assert json.loads(json.dumps(doc)) == doc  # plain JSON


@pytest.mark.parametrize("mode", [Mode.DELETE, Mode.ANONYMIZE])
async def test_an_erasure_leaves_counts_exact_and_nothing_linked(
    table: TableRef, mode: Mode
) -> None:
    w = await _world(table, f"privacy{mode.value.lower()}")
    own = w.table
    assert (await verify(own)).exact
    linked = await _linked(own, SUBJECT)
    # The comments, their facet entries, votes, reports, records, limit items.
    assert any(" FACET#" in line for line in linked)
    before = {cid: await get_comment(own, cid) for cid in w.theirs}
    request_id, counts = await _erase(own, mode)
    report = await verify(own)
    assert report.exact, report.describe()
    assert await _linked(own, SUBJECT) == []
    assert counts == {"comments": 4, "votes": 5, "reports": 2, "replies": 0}
    # Others' comments lost exactly the subject's votes and reports.
    after = {cid: await get_comment(own, cid) for cid in w.theirs}
    for cid in w.theirs[:4]:
        assert after[cid].helpful == before[cid].helpful - 1  # type: ignore[union-attr]
    assert after[w.theirs[4]].not_helpful == 0  # type: ignore[union-attr]
    assert after[w.theirs[3]].moderation.report_count == 1  # type: ignore[union-attr]
    assert after[w.theirs[2]].moderation.report_count == 0  # type: ignore[union-attr]
    items = await _all_items(own)
    assert not [i for i in items if i["PK"]["S"].startswith(keys.IDEMPOTENCY_PREFIX)]
    assert not [
        i
        for i in items
        if i["PK"]["S"].startswith(keys.AUTHOR_PREFIX + "")
        and i["PK"]["S"] == keys.author_pk(SUBJECT)
    ]
    comments = [item_to_comment(i) for i in items if is_comment_item(i)]
    kept = [c for c in comments if c.comment_id in w.mine]
    if mode is Mode.DELETE:
        assert kept == []
    else:
        assert sorted(c.comment_id for c in kept) == sorted(w.mine)
        assert {c.author_name for c in kept} == {ANONYMOUS}
        ids = {c.author_id for c in kept}
        assert len(ids) == 4
        assert all(i.startswith(ANONYMOUS_PREFIX) for i in ids)
        assert {c.status for c in kept} == {Status.PUBLISHED, Status.PENDING, Status.REJECTED}
        # Others' votes on the anonymized comment stay, counted.
        assert next(c for c in kept if c.comment_id == w.mine[0]).helpful == 3
    job = await read_job(own, request_id)
    assert job is not None
    assert job.subject is None
    assert job.mode is mode
    # The agreed shape of the job item.
    stored = (await own.client.get_item(TableName=own.name, Key=job_key(request_id)))["Item"]
    assert set(stored) >= {"PK", "SK", "requestId", "mode", "state", "counts"}
    assert set(stored["counts"]["M"]) == {"comments", "votes", "reports", "replies"}
    assert "subject" not in stored

    # Idempotent: running the job again, or a new erasure, changes nothing more.
    snapshot = sorted(json.dumps(i, sort_keys=True) for i in await _all_items(own))
    again = await run_erasure(own, request_id, backoff=FAST)
    assert again.counts == counts
    second, counted = await _erase(own, mode)
    assert counted == {"comments": 0, "votes": 0, "reports": 0, "replies": 0}
    now = sorted(
        json.dumps(i, sort_keys=True)
        for i in await _all_items(own)
        if not i["PK"]["S"].startswith(keys.ERASURE_PREFIX)
    )
    assert now == [s for s in snapshot if keys.ERASURE_PREFIX not in s]
    assert second != request_id


class CrashAfter(ClientWrapper):
    """Raises instead of the ``after``-th write call: a process dying mid-way."""

    WRITES = frozenset(
        {"transact_write_items", "update_item", "delete_item", "put_item", "batch_write_item"}
    )

    def __init__(self, inner: Any, after: int) -> None:
        super().__init__(inner)
        self.after, self.writes = after, 0

    async def _call(self, operation: str, kwargs: dict[str, Any]) -> Response:
        if operation in self.WRITES:
            self.writes += 1
            if self.writes >= self.after:
                raise Crashed(f"crashed at write {self.writes}")
        return await super()._call(operation, kwargs)


class Crashed(Exception):
    pass


@pytest.mark.parametrize(("mode", "after"), [(Mode.DELETE, 7), (Mode.ANONYMIZE, 12)])
async def test_a_crashed_erasure_is_finished_by_the_next_run(
    table: TableRef, mode: Mode, after: int
) -> None:
    w = await _world(table, f"privacycrash{after}")
    own = w.table
    job = await start_erasure(own, SUBJECT, mode)
    crashing = TableRef(CrashAfter(own.client, after), own.name)
    with pytest.raises((Crashed, StorageError, ExceptionGroup)):
        await asyncio.wait_for(run_erasure(crashing, job.request_id, backoff=FAST), 60)
    middle = await read_job(own, job.request_id)
    assert middle is not None
    assert middle.state is State.RUNNING
    assert (await verify(own)).exact  # every step is a whole transition
    # A second start returns the running job; the run resumes it.
    assert (await start_erasure(own, SUBJECT, mode)).request_id == job.request_id
    done = await asyncio.wait_for(run_erasure(own, job.request_id, backoff=FAST), 60)
    assert done.state is State.DONE
    assert (await verify(own)).exact
    assert await _linked(own, SUBJECT) == []
    # At most the steps in flight at the crash went uncounted.
    assert done.counts["comments"] + done.counts["votes"] + done.counts["reports"] >= 11 - 8


async def test_the_subjects_new_comments_are_refused_while_the_erasure_runs(
    table: TableRef,
) -> None:
    own = await own_table(table, "privacyfence")
    await create_comment(own, _new(SUBJECT, "p1", 4), backoff=FAST)
    job = await start_erasure(own, SUBJECT, Mode.DELETE)
    with pytest.raises(AuthorErasing):
        await create_comment(own, _new(SUBJECT, "p2", 4), backoff=FAST)
    # Others write as ever.
    await create_comment(own, _new("bob", "p2", 4), backoff=FAST)
    await asyncio.wait_for(run_erasure(own, job.request_id, backoff=FAST), 30)
    # After the job, the subject's writes are new data.
    made = await create_comment(own, _new(SUBJECT, "p2", 3), backoff=FAST)
    assert made.created
    assert (await verify(own)).exact


@pytest.mark.parametrize("mode", [Mode.DELETE, Mode.ANONYMIZE])
async def test_the_authors_own_writes_racing_the_erasure(table: TableRef, mode: Mode) -> None:
    """The subject creates, edits, votes and reports while the job runs (real concurrency,
    with the process's lanes and the engine's transactions): every count is exact after,
    no comment of theirs is left, and each refused create was refused by the fence."""
    w = await _world(table, f"privacyrace{mode.value.lower()}")
    own = w.table
    refused: list[str] = []
    made: list[str] = []
    stop = asyncio.Event()

    async def author() -> None:
        n = 0
        while not stop.is_set():
            n += 1
            target = w.theirs[n % len(w.theirs)]
            try:
                c = await create_comment(own, _new(SUBJECT, f"q{n}", 1 + n % 5), backoff=FAST)
                made.append(c.comment.comment_id)
                await edit_comment(
                    own,
                    c.comment.comment_id,
                    Edit(rating=1 + (n + 2) % 5),
                    author_id=SUBJECT,
                    backoff=FAST,
                )
            except AuthorErasing:
                refused.append(f"q{n}")
            except StorageError:
                pass  # erased under the edit: NotAuthor, CommentNotFound
            for step in (
                vote_helpful(
                    own,
                    target,
                    voter=SUBJECT,
                    vote=Vote(("HELPFUL", "NOT_HELPFUL")[n % 2]),
                    backoff=FAST,
                ),
                report_comment(own, target, reporter=SUBJECT, reason="SPAM", backoff=FAST),
            ):
                with contextlib.suppress(StorageError):
                    await step
            await asyncio.sleep(0)

    writers = [asyncio.create_task(author()) for _ in range(2)]
    await asyncio.sleep(0.2)  # writing before the job starts
    job = await start_erasure(own, SUBJECT, mode)
    # One pass races the writers; the job then stays RUNNING (it found things to erase).
    first = await asyncio.wait_for(run_erasure(own, job.request_id, backoff=FAST, max_passes=1), 60)
    assert first.state is State.RUNNING
    stop.set()
    await asyncio.wait_for(asyncio.gather(*writers), 30)
    done = await asyncio.wait_for(run_erasure(own, job.request_id, backoff=FAST), 60)
    assert done.state is State.DONE
    assert refused, "the author wrote while the job ran"
    report = await verify(own)
    assert report.exact, report.describe()
    # The cut: no comment of the subject's is left (each was erased or refused).
    items = await _all_items(own)
    left = [i for i in items if is_comment_item(i) and i["author"]["S"] == SUBJECT]
    assert left == []
    # The writers stopped before the last passes began: nothing links to the subject.
    assert await _linked(own, SUBJECT) == []
    assert made  # some creates came before the fence
