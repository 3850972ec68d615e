"""Importing reviews from JSON Lines: once each, exact counters, invalid lines reported,
resumable after a crash, and the ``comments import`` command."""

from __future__ import annotations

import asyncio
import io
import json
import re
import uuid
from collections import Counter
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, cast

import pytest

from server.cli import main as cli_main
from server.dev.local_engine import LocalEngine
from storage.base.errors import InvalidInput, StorageUnavailable
from storage.base.types import DynamoClient, Response
from storage.engine.table import TableRef
from storage.engine.wrapping import ClientWrapper
from storage.model import keys
from storage.model.comments import NewComment, Status
from storage.model.leaderboard import LeaderLayout
from storage.model.rules import BODY_MAX, TITLE_MAX
from storage.ops.group_move import move_product
from storage.ops.import_lines import FUTURE_SKEW
from storage.ops.importer import (
    LINE_MAX_BYTES,
    MAX_ACTIONS,
    ImportSummary,
    _batches,
    _parts,
    import_comments,
    jsonl_lines,
    parse_line,
)
from storage.ops.verify import scan_pages, verify
from storage.reads.reader import author_total, get_counts, last_commented_at, queue_length
from storage.writes import create_comment, delete_comment, get_comment
from storage.writes.counters import FiveStars
from storage.writes.moderate import Decision, moderate_comment
from tests.helpers import FAST, own_table

DROP = object()  # a field left out of the line


def review(external_id: str, product_id: str = "p-1", **fields: Any) -> dict[str, Any]:
    value: dict[str, Any] = {
        "externalId": external_id,
        "productId": product_id,
        "rating": 5,
        "language": "en",
        "title": f"title {external_id}",
        "body": f"body of {external_id}",
        "author": f"author-{external_id}",
        "createdAt": "2024-03-01T12:00:00+02:00",
    }
    value.update(fields)
    return {k: v for k, v in value.items() if v is not DROP}


def line(external_id: str, product_id: str = "p-1", **fields: Any) -> bytes:
    return json.dumps(review(external_id, product_id, **fields)).encode()


def mixed(product_ids: list[str], count: int, prefix: str) -> list[dict[str, Any]]:
    """Reviews in three languages, every rating, every status, a third verified, by nine
    authors (so one author often has several reviews of one product, in one batch)."""
    return [
        review(
            f"{prefix}-{n}",
            product_ids[n % len(product_ids)],
            author=f"{prefix}-customer-{n % 9}",
            rating=[5, 4, 5, 1, 2, 3, 5][n % 7],
            language=["en", "de", "pt-BR"][n % 3],
            status=["PUBLISHED", "PUBLISHED", "PENDING", "PUBLISHED", "REJECTED"][n % 5],
            verified=n % 3 == 1,
            createdAt=f"2024-03-{1 + n % 28:02d}T{n % 24:02d}:30:00Z",
        )
        for n in range(count)
    ]


def encode(reviews: list[dict[str, Any]]) -> list[bytes]:
    return [json.dumps(r).encode() for r in reviews]


async def run(table: TableRef, lines: list[bytes], **options: Any) -> ImportSummary:
    return await import_comments(table, lines, backoff=FAST, **options)


async def records_and_comments(table: TableRef) -> tuple[list[dict[str, Any]], list[str]]:
    """Every import record (as items) and every comment id in the table."""
    records: list[dict[str, Any]] = []
    comments: list[str] = []
    async for page in scan_pages(table):
        for item in page.get("Items", []):
            pk = item["PK"]["S"]
            if pk.startswith(keys.IMPORT_PREFIX):
                records.append(item)
            elif pk.startswith(keys.COMMENT_PREFIX) and item["SK"]["S"] == pk:
                comments.append(item["commentId"]["S"])
    return records, comments


async def assert_each_imported_once(table: TableRef, external_ids: set[str]) -> None:
    """One record per external id, naming the one comment derived from it, and no other
    comment: nothing half-written, nothing twice."""
    records, comments = await records_and_comments(table)
    by_id = Counter(r["externalId"]["S"] for r in records)
    assert set(by_id) == external_ids
    assert set(by_id.values()) <= {1}
    for record in records:
        assert record["commentId"]["S"] == keys.imported_comment_id(record["externalId"]["S"])
    assert sorted(comments) == sorted(keys.imported_comment_id(e) for e in external_ids)


def expected_counts(
    reviews: list[dict[str, Any]], product_id: str, language: str | None
) -> tuple[list[int], list[int]]:
    """Counts per rating and verified counts per rating of the published reviews."""
    counts, verified = [0] * 5, [0] * 5
    for r in reviews:
        if r["productId"] != product_id or r.get("status", "PUBLISHED") != "PUBLISHED":
            continue
        if language is not None and r["language"].lower() != language:
            continue
        counts[r["rating"] - 1] += 1
        if r.get("verified"):
            verified[r["rating"] - 1] += 1
    return counts, verified


# Parsing a line (no engine)


def test_a_line_becomes_the_comment_the_api_would_store() -> None:
    record = parse_line(
        line(
            "shop-17",
            language="pt-BR",
            createdAt="2024-03-01T12:00:00.123456+02:00",
            status="PENDING",
            verified=True,
            authorName="Ann",
        )
    )
    c = record.comment
    assert record.external_id == "shop-17"
    assert c.comment_id == keys.imported_comment_id("shop-17")
    assert (c.language, c.rating, c.status, c.verified) == ("pt-br", 5, Status.PENDING, True)
    assert c.created_at == "2024-03-01T10:00:00.123Z"
    assert c.submitted_at == c.created_at  # its place in the moderation queue
    assert (c.author_id, c.author_name, c.title) == ("author-shop-17", "Ann", "title shop-17")


def test_defaults_published_and_not_verified() -> None:
    c = parse_line(line("x", title=DROP, createdAt="2024-03-01T10:00:00Z")).comment
    assert (c.status, c.verified, c.title, c.author_name) == (Status.PUBLISHED, False, None, None)
    assert c.created_at == "2024-03-01T10:00:00.000Z"


def test_imported_ids_are_fixed_and_shaped_like_generated_ones() -> None:
    ids = {keys.imported_comment_id(e) for e in ("a", "b", "a ", "A")}
    assert len(ids) == 4
    assert keys.imported_comment_id("a") == keys.imported_comment_id("a")
    for comment_id in ids:
        keys.validate_sort_key(f"2024-03-01T10:00:00.000Z#{comment_id}")  # cursors accept it


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        (b'{"externalId": "x"', "not JSON"),
        (b"[1, 2]", "not a JSON object"),
        (b"\xff\xfe{}", "not UTF-8"),
        (b"[" * 100_000 + b"]" * 100_000, "not JSON"),
        (b"x" * (LINE_MAX_BYTES + 1), "line longer than"),
        (line("x", body=DROP), "missing body"),
        (line("x", createdAt=None), "missing createdAt"),
        (line("x", stars=5), "unknown field 'stars'"),
        (line("x", rating=6), "rating must be an integer from 1 to 5"),
        (line("x", rating="5"), "rating must be an integer from 1 to 5"),
        (line("x", rating=True), "rating must be an integer from 1 to 5"),
        (line("x", language="en/US"), "language must be a BCP 47 tag"),
        (line("x", productId="a#b"), "product id must be"),
        (line("x", body="x" * (BODY_MAX + 1)), "body must be at most"),
        (line("x", title="t" * (TITLE_MAX + 1)), "title must be at most"),
        (line("x", body="half a pair \ud800"), "body holds an unpaired surrogate"),
        (line("x", author="\udc00"), "author holds an unpaired surrogate"),
        (line("x", body="\u200b "), "body must not be empty"),
        (line("x", title="a\u202eb"), "bidirectional"),
        (line("x", author=""), "author id must be a non-empty string"),
        (line("x", createdAt="2024-03-01T10:00:00"), "createdAt must be an ISO-8601 time"),
        (line("x", createdAt="yesterday"), "createdAt must be an ISO-8601 time"),
        (line("x", createdAt="2024-02-30T10:00:00Z"), "createdAt must be an ISO-8601 time"),
        (line("x", createdAt=1709287200), "createdAt must be an ISO-8601 time"),
        (line("x", createdAt="0001-01-01T00:00:00+01:00"), "createdAt must be"),
        (line("x", createdAt="9999-12-31T23:59:59Z"), "createdAt 9999-12-31T23:59:59.000Z is in"),
        (line("x", status="published"), "status must be PENDING, PUBLISHED or REJECTED"),
        (line("x", verified="yes"), "verified must be true or false"),
        (line("", rating=5), "externalId must be a non-empty string"),
        (line("x" * 257), "externalId must be at most 256 characters"),
        (line("a\nb"), "externalId must not contain control characters"),
        (line(7, rating=5), "externalId must be a non-empty string"),  # type: ignore[arg-type]
    ],
)
def test_invalid_lines_say_why(text: bytes, reason: str) -> None:
    with pytest.raises(InvalidInput, match=re.escape(reason)):
        parse_line(text)


def test_created_at_may_be_ahead_of_the_clock_by_the_skew_only() -> None:
    now = datetime(2026, 11, 27, 12, 0, tzinfo=UTC)
    ahead = (now + FUTURE_SKEW).isoformat()
    assert parse_line(line("x", createdAt=ahead), now=now).comment.created_at == (
        "2026-11-27T12:05:00.000Z"
    )
    later = (now + FUTURE_SKEW + timedelta(milliseconds=1)).isoformat()
    with pytest.raises(InvalidInput, match="more than 5 minutes ahead of this machine's clock"):
        parse_line(line("x", createdAt=later), now=now)


def test_reading_lines_bounds_each_line() -> None:
    long = b"y" * (3 * LINE_MAX_BYTES)
    stream = io.BytesIO(b"\xef\xbb\xbf" + b'{"a": 1}\r\n' + long + b"\n\n" + b'{"b": 2}')
    lines = list(jsonl_lines(stream))
    assert lines[0] == b'{"a": 1}'
    assert len(lines[1]) == LINE_MAX_BYTES + 2  # cut just past the limit: refused, not read
    assert lines[2:] == [b"", b'{"b": 2}']


@pytest.mark.parametrize("languages", [["en"], ["en", "de", "fr", "es", "ja"]])
def test_batches_fill_transactions_up_to_the_limit(languages: list[str]) -> None:
    reviews = mixed(["p"], 300, "b")
    for n, r in enumerate(reviews):
        r["language"] = languages[n % len(languages)]
    records = [parse_line(text) for text in encode(reviews)]
    offline = TableRef(cast(DynamoClient, object()), "offline")
    batches = list(_batches(records))
    assert [r for batch in batches for r in batch] == records
    # A product without 5-star comments yet: its entry is created, with the layout's check.
    first_five = FiveStars(count=0, layout=LeaderLayout())
    for batch, following in zip(batches, [*batches[1:], []], strict=True):
        parts = _parts(offline, batch, first_five)
        assert len(parts) <= MAX_ACTIONS
        if following:  # full: the next record would not have fitted
            more = _parts(offline, [*batch, following[0]], first_five)
            assert len(more) > MAX_ACTIONS


# Importing (DynamoDB Local)


async def test_counters_are_exact_per_status_language_and_verified(table: TableRef) -> None:
    own = await own_table(table, "import_counts")
    # Two windows; the first holds 91 reviews of one product: two transactions.
    reviews = mixed(["big"] * 10 + ["small"], 121, "mix")
    summary = await run(own, encode(reviews), window_lines=100, concurrency=4)
    assert (summary.imported, summary.already_imported, summary.invalid) == (121, 0, 0)
    report = await verify(own)
    assert report.exact, report.describe()
    assert report.comments == 121
    for product_id in ("big", "small"):
        for language in (None, "en", "de", "pt-br"):
            counts = await get_counts(own, product_id, language)
            assert (list(counts.by_rating), list(counts.verified)) == expected_counts(
                reviews, product_id, language
            ), (product_id, language)
    pending = [r for r in reviews if r["status"] == "PENDING"]
    stored = await get_comment(own, keys.imported_comment_id(pending[0]["externalId"]))
    assert stored is not None
    assert stored.status is Status.PENDING
    assert await queue_length(own) == len(pending) == 24
    # Every imported comment holds its author's slot, whatever its status.
    by_author = Counter(r["author"] for r in reviews)
    for author, count in by_author.items():
        assert await author_total(own, author) == count, author
    await assert_each_imported_once(own, {r["externalId"] for r in reviews})


async def test_imported_comments_live_on_as_created_ones_do(table: TableRef) -> None:
    """Moderating, deleting: the transitions move what the import counted."""
    own = await own_table(table, "import_life")
    lines = [
        line("wait", status="PENDING", verified=True),
        line("shown", rating=4),
        line("again", rating=4, author="author-shown"),  # the same author's second
    ]
    await run(own, lines)
    assert await queue_length(own) == 1
    assert await author_total(own, "author-shown") == 2
    await moderate_comment(own, keys.imported_comment_id("wait"), Decision.APPROVE, moderator="m")
    await delete_comment(own, keys.imported_comment_id("shown"))
    assert await queue_length(own) == 0
    assert await author_total(own, "author-shown") == 1
    counts = await get_counts(own, "p-1", None)
    assert (counts.by_rating, counts.verified) == ((0, 0, 0, 1, 1), (0, 0, 0, 0, 1))
    report = await verify(own)
    assert report.exact, report.describe()


class NoShortcut(ClientWrapper):
    """Finds no import record by BatchGetItem, so that only the transactions' conditions
    can tell what is in already."""

    async def _call(self, operation: str, kwargs: dict[str, Any]) -> Response:
        if operation == "batch_get_item":
            return {"Responses": {}}
        return await super()._call(operation, kwargs)


def without_shortcut(table: TableRef, shortcut: bool) -> TableRef:
    return table if shortcut else TableRef(NoShortcut(table.client), table.name)


@pytest.mark.parametrize("shortcut", [True, False])
async def test_running_again_imports_nothing_twice(table: TableRef, shortcut: bool) -> None:
    own = await own_table(table, "import_again")
    reviews = mixed(["a", "b", "c"], 30, "again")
    first = await run(own, encode(reviews), window_lines=7)
    again = await run(without_shortcut(own, shortcut), encode(reviews), window_lines=7)
    assert (first.imported, first.already_imported) == (30, 0)
    assert (again.imported, again.already_imported) == (0, 30)
    report = await verify(own)
    assert report.exact, report.describe()
    assert report.comments == 30
    await assert_each_imported_once(own, {r["externalId"] for r in reviews})


async def test_two_imports_of_one_file_at_once_import_each_review_once(table: TableRef) -> None:
    own = await own_table(table, "import_together")
    reviews = mixed(["a", "b"], 40, "together")
    one, other = await asyncio.gather(
        run(own, encode(reviews), window_lines=10), run(own, encode(reviews), window_lines=10)
    )
    assert one.imported + other.imported == 40
    assert one.already_imported + other.already_imported == 40
    report = await verify(own)
    assert report.exact, report.describe()
    await assert_each_imported_once(own, {r["externalId"] for r in reviews})


@pytest.mark.parametrize("window_lines", [10, 1])
async def test_a_repeated_external_id_is_invalid(table: TableRef, window_lines: int) -> None:
    """The first line with an external id counts; a later one is reported, whatever it
    holds (within a window and across windows), on every run."""
    own = await own_table(table, "import_twice")
    lines = [line("d-1", rating=5), line("d-2"), line("d-1", rating=1, productId="other")]
    lines.append(lines[0])
    for attempt in range(2):
        summary = await run(own, lines, window_lines=window_lines)
        assert (summary.imported + summary.already_imported, summary.invalid) == (2, 2)
        assert summary.imported == (2 if attempt == 0 else 0)
        assert [bad.describe() for bad in summary.invalid_lines] == [
            "line 3: externalId repeats line 1",
            "line 4: externalId repeats line 1",
        ]
    assert (await get_counts(own, "p-1", None)).by_rating == (0, 0, 0, 0, 2)
    assert (await get_counts(own, "other", None)).total == 0
    assert (await verify(own)).exact
    await assert_each_imported_once(own, {"d-1", "d-2"})


@pytest.mark.parametrize("shortcut", [True, False])
async def test_other_content_under_an_imported_id_is_a_conflict(
    table: TableRef, shortcut: bool
) -> None:
    """Never overwritten: reported with its line number, the stored review and every
    count as they were. The same review written differently (another offset for the same
    moment, the default status spelled out) is the same review."""
    own = await own_table(table, "import_conflict")
    first = [line("k-1", rating=5), line("k-2", status="PENDING"), line("k-3")]
    await run(own, first)
    later = [
        line("k-1", rating=5, createdAt="2024-03-01T10:00:00.000Z", status="PUBLISHED"),
        line("k-2", status="PUBLISHED"),  # approved in the shop since
        line("k-3", body="edited in the shop"),
        line("k-4"),
    ]
    seen: list[str] = []
    summary = await run(
        without_shortcut(own, shortcut), later, on_invalid=lambda bad: seen.append(bad.describe())
    )
    assert (summary.imported, summary.already_imported) == (1, 1)
    assert (summary.invalid, summary.conflicts, summary.skipped) == (0, 2, 2)
    reason = "externalId imported before with other content; the stored review is left as it is"
    assert seen == [f"line 2: {reason}", f"line 3: {reason}"]
    pending = await get_comment(own, keys.imported_comment_id("k-2"))
    kept = await get_comment(own, keys.imported_comment_id("k-3"))
    assert pending is not None
    assert pending.status is Status.PENDING
    assert kept is not None
    assert kept.body == "body of k-3"
    assert (await get_counts(own, "p-1", None)).by_rating == (0, 0, 0, 0, 3)
    assert await queue_length(own) == 1
    report = await verify(own)
    assert report.exact, report.describe()


@pytest.mark.parametrize("shortcut", [True, False])
async def test_a_deleted_imported_comment_stays_deleted(table: TableRef, shortcut: bool) -> None:
    own = await own_table(table, "import_deleted")
    lines = [line("gone"), line("kept")]
    await run(own, lines)
    await delete_comment(own, keys.imported_comment_id("gone"))
    again = await run(without_shortcut(own, shortcut), lines)
    assert (again.imported, again.already_imported) == (0, 2)
    assert await get_comment(own, keys.imported_comment_id("gone")) is None
    assert (await get_counts(own, "p-1", None)).by_rating == (0, 0, 0, 0, 1)
    assert (await verify(own)).exact


async def test_invalid_lines_are_reported_and_the_rest_imported(table: TableRef) -> None:
    own = await own_table(table, "import_invalid")
    lines = [
        line("ok-1"),
        b"{not json",
        line("bad-1", rating=0),
        b"",
        line("ok-2", rating=3, status="PENDING"),
        line("bad-2", body=DROP),
        line("bad-3", language="english please"),
        line("bad-4", status="APPROVED"),
        line("bad-5", createdAt="2024-03-01"),
        line("bad-6", body="x" * (BODY_MAX + 1)),
        line("ok-1", rating=1),
        line("ok-3", rating=2, status="REJECTED", verified=True),
    ]
    seen: list[str] = []
    summary = await run(own, lines, on_invalid=lambda bad: seen.append(bad.describe()))
    assert (summary.lines, summary.imported, summary.invalid, summary.conflicts) == (12, 3, 8, 0)
    assert [(bad.number, bad.reason.split()[0]) for bad in summary.invalid_lines] == [
        (2, "not"),
        (3, "rating"),
        (6, "missing"),
        (7, "language"),
        (8, "status"),
        (9, "createdAt"),
        (10, "body"),
        (11, "externalId"),
    ]
    assert seen == [bad.describe() for bad in summary.invalid_lines]
    assert seen[1] == "line 3: rating must be an integer from 1 to 5"
    assert seen[-1] == "line 11: externalId repeats line 1"
    counts = await get_counts(own, "p-1", None)
    assert (counts.by_rating, counts.verified) == ((0, 0, 0, 0, 1), (0, 0, 0, 0, 0))
    assert await queue_length(own) == 1
    report = await verify(own)
    assert report.exact, report.describe()
    await assert_each_imported_once(own, {"ok-1", "ok-2", "ok-3"})


async def test_a_review_from_the_future_is_refused_and_leaves_the_product_alone(
    table: TableRef,
) -> None:
    # Stored, it would head the newest-first listing and be lastCommentedAt for ever.
    own = await own_table(table, "import_future")
    soon = (datetime.now(UTC) + timedelta(minutes=1)).isoformat()
    lines = [line("ok", createdAt=soon), line("future", createdAt="9999-12-31T00:00:00Z")]
    summary = await run(own, lines)
    assert (summary.imported, summary.invalid) == (1, 1)
    (bad,) = summary.invalid_lines
    assert bad.describe() == (
        "line 2: createdAt 9999-12-31T00:00:00.000Z is in the future (more than 5 minutes "
        "ahead of this machine's clock)"
    )
    (last,) = await last_commented_at(own, ["p-1"])
    assert last is not None
    assert last < "9999"
    assert (await get_counts(own, "p-1", None)).total == 1


class Crash(ClientWrapper):
    """Storage goes away once ``after`` transactions were sent: every later call fails as
    a lost connection does. With ``lost``, the last one commits and its answer is lost."""

    def __init__(self, inner: DynamoClient, after: int, *, lost: bool) -> None:
        super().__init__(inner)
        self.after = after
        self.lost = lost
        self.sent = 0

    async def _call(self, operation: str, kwargs: dict[str, Any]) -> Response:
        if self.sent >= self.after:
            raise ConnectionResetError("storage went away")
        if operation == "transact_write_items":
            self.sent += 1
            if self.sent == self.after and self.lost:
                await super()._call(operation, kwargs)
                raise ConnectionResetError("the answer was lost")
        return await super()._call(operation, kwargs)


@pytest.mark.parametrize("lost", [False, True])
async def test_a_crashed_import_resumes_exactly(table: TableRef, lost: bool) -> None:
    own = await own_table(table, "import_crash")
    reviews = mixed([f"c{n}" for n in range(12)], 60, "crash")
    external_ids = {r["externalId"] for r in reviews}
    crashing = TableRef(Crash(own.client, 5, lost=lost), own.name)
    with pytest.raises(StorageUnavailable):
        await run(crashing, encode(reviews), window_lines=25, concurrency=3)
    # Nothing half-written: what committed is whole, counters included.
    report = await verify(own)
    assert report.exact, report.describe()
    records, _ = await records_and_comments(own)
    committed = {r["externalId"]["S"] for r in records}
    assert 0 < len(committed) < len(external_ids)
    await assert_each_imported_once(own, committed)

    resumed = await run(own, encode(reviews), window_lines=25, concurrency=3)
    assert (resumed.imported, resumed.already_imported) == (
        len(external_ids) - len(committed),
        len(committed),
    )
    report = await verify(own)
    assert report.exact, report.describe()
    await assert_each_imported_once(own, external_ids)


class LateAnswer(ClientWrapper):
    """The first transaction is sent, and reaches storage only once the second one has
    failed, as a request still on the wire does: the client giving up on it (a
    cancellation) cannot call it back. ``unsettled`` counts requests not yet answered."""

    def __init__(self, inner: DynamoClient) -> None:
        super().__init__(inner)
        self.transactions = 0
        self.unsettled = 0
        self.failed = asyncio.Event()
        self.landing: list[asyncio.Task[Response]] = []

    async def _call(self, operation: str, kwargs: dict[str, Any]) -> Response:
        if operation != "transact_write_items":
            return await super()._call(operation, kwargs)
        self.transactions += 1
        if self.transactions == 2:
            self.failed.set()
            raise ConnectionResetError("storage went away")
        if self.transactions > 2:
            raise ConnectionResetError("storage is gone")
        landing = asyncio.ensure_future(self._land(kwargs))
        self.landing.append(landing)
        return await asyncio.shield(landing)

    async def _land(self, kwargs: dict[str, Any]) -> Response:
        self.unsettled += 1
        try:
            await self.failed.wait()
            await asyncio.sleep(0.05)  # the wire is slower than giving up
            return await super()._call("transact_write_items", kwargs)
        finally:
            self.unsettled -= 1


async def test_a_failed_import_raises_only_once_its_sent_writes_are_answered(
    table: TableRef,
) -> None:
    # One product's batch fails while another's is on its way: the import must not report
    # the failure (and its tally) while a write it sent may still land, or a resume
    # started at once, and the tally printed, disagree with what the table ends with.
    own = await own_table(table, "import_in_flight")
    late = LateAnswer(own.client)
    settled: list[int] = []
    lines = [line(f"f{n}", f"p-{n % 2}", rating=3) for n in range(4)]
    with pytest.raises(StorageUnavailable):
        await run(TableRef(late, own.name), lines, concurrency=2, progress=settled.append)
    assert late.unsettled == 0
    records, _ = await records_and_comments(own)
    assert len(records) == 2  # the late batch landed, before the import said it failed
    assert settled[-1] == len(records)
    await asyncio.gather(*late.landing)
    assert len((await records_and_comments(own))[0]) == len(records)


class FiveStarRival(ClientWrapper):
    """Before the first transaction goes through, another writer adds a 5-star comment to
    the product, so the import's count_5 condition fails and it must learn the new count."""

    def __init__(self, inner: DynamoClient, rival: TableRef, product_id: str) -> None:
        super().__init__(inner)
        self.rival = rival
        self.product_id = product_id
        self.raced = False

    async def _call(self, operation: str, kwargs: dict[str, Any]) -> Response:
        if operation == "transact_write_items" and not self.raced:
            self.raced = True
            rival = NewComment(self.product_id, "en", 5, "first!", "rival")
            await create_comment(self.rival, rival, backoff=FAST)
        return await super()._call(operation, kwargs)


async def test_the_import_loses_a_five_star_race_and_stays_exact(table: TableRef) -> None:
    own = await own_table(table, "import_race")
    racing = FiveStarRival(own.client, TableRef(own.client, own.name), "hot")
    summary = await run(TableRef(racing, own.name), [line(f"r{n}", "hot") for n in range(4)])
    assert racing.raced
    assert summary.imported == 4
    assert (await get_counts(own, "hot", None)).by_rating == (0, 0, 0, 0, 5)
    report = await verify(own)
    assert report.exact, report.describe()  # the leaderboard entry says 5 as well


# The command


def test_the_import_command(engine: LocalEngine, tmp_path: Path, capsys: Any) -> None:
    name = f"cli_import_{uuid.uuid4().hex[:8]}"
    connection = ["--endpoint-url", engine.endpoint_url, "--table", name]
    assert cli_main(["create-table", *connection]) == 0
    good = [line(f"cli-{n}", "cli-p", rating=1 + n % 5) for n in range(5)]
    mixed_file = tmp_path / "reviews.jsonl"
    mixed_file.write_bytes(b"\n".join([*good[:2], b"oops", *good[2:], line("bad", rating=9)]))
    valid_file = tmp_path / "valid.jsonl"
    valid_file.write_bytes(b"\n".join(good) + b"\n")
    capsys.readouterr()

    assert cli_main(["import", str(mixed_file), *connection]) == 1
    out, err = capsys.readouterr()
    assert "imported 5, already imported 0, invalid 2, conflicts 0 (7 lines)" in out
    assert "line 3: not JSON" in err
    assert "line 7: rating must be an integer from 1 to 5" in err
    assert "importing [" in err  # the progress bar, on stderr only
    assert "\r" not in err  # whole lines, as stderr is no terminal here
    assert "7/7" in err
    assert "importing" not in out

    assert cli_main(["import", str(valid_file), *connection]) == 0
    out, _ = capsys.readouterr()
    assert "imported 0, already imported 5, invalid 0, conflicts 0" in out

    changed_file = tmp_path / "changed.jsonl"
    changed_file.write_bytes(line("cli-1", "cli-p", rating=1) + b"\n" + good[2])
    assert cli_main(["import", str(changed_file), *connection]) == 1
    out, err = capsys.readouterr()
    assert "imported 0, already imported 1, invalid 0, conflicts 1 (2 lines)" in out
    assert "line 1: externalId imported before with other content" in err

    assert cli_main(["verify-stats", *connection]) == 0
    assert "5 comments" in capsys.readouterr().out

    assert cli_main(["import", str(tmp_path / "missing.jsonl"), *connection]) == 2
    assert "cannot read" in capsys.readouterr().err


def test_the_import_command_says_what_its_exit_codes_mean(capsys: Any) -> None:
    with pytest.raises(SystemExit):
        cli_main(["import", "--help"])
    help_text = " ".join(capsys.readouterr().out.split())
    assert "0 when every line is in, 1 when some lines were skipped" in help_text


async def test_a_grouped_products_imported_comments_are_placed_in_its_group(
    table: TableRef,
) -> None:
    own = await own_table(table, "import_group")
    await move_product(own, "variant", "model")  # in a group before the import
    reviews = mixed(["variant", "loner"], 40, "grp")
    summary = await run(own, encode(reviews))
    assert summary.placed == ("variant",)
    published = [r for r in reviews if r["productId"] == "variant" and r["status"] == "PUBLISHED"]
    assert published
    for r in published:
        stored = await get_comment(own, keys.imported_comment_id(r["externalId"]))
        assert stored is not None
        assert stored.group_id == "model"
    report = await verify(own)
    assert report.exact, report.describe()
    assert not report.moving


async def test_an_import_places_comments_in_a_group_another_process_moved_the_product_to(
    table: TableRef,
) -> None:
    # This process last saw the product in no group (a create placed a comment there);
    # another process then moved it into one. The import must place its comments there:
    # no transaction checks what the import decides from, so a remembered membership,
    # which only a write's own check makes safe, cannot be trusted.
    own = await own_table(table, "import_stale")
    here, there = TableRef(own.client, own.name), TableRef(own.client, own.name)
    await create_comment(here, NewComment("variant", "en", 5, "before", "ann"), backoff=FAST)
    await move_product(there, "variant", "model")
    summary = await run(here, [line("stale-1", "variant")])
    assert summary.placed == ("variant",)
    stored = await get_comment(own, keys.imported_comment_id("stale-1"))
    assert stored is not None
    assert stored.group_id == "model"
    report = await verify(own)
    assert report.exact, report.describe()
    assert not report.moving
