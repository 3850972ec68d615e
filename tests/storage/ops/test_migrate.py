"""migrate-table on a table made by the previous version's create-table (four listing
indexes, comments without statuses): the missing indexes are added and built, the old
comments stay listed and reach the author index, and every write of today works on it.

These tests run on a DynamoDB Local of their own, not the session's. DynamoDB Local builds
a new index in a job on a pool of ten threads that it shares with its TTL sweeps: three
threads are its schedulers, and every table with TTL on gets a sweep that holds a thread for
as long as the engine runs (it scans the table again every ten seconds and never returns).
From the seventh table with TTL on, no index is ever built: it stays CREATING. The session's
engine has more than a dozen such tables by the time this module runs (create-table turns
TTL on), so the migration waited for ever. Here at most two tables get TTL (the CLI's
migration and the create-table after a migration turn it on); keep it under seven.
"""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

import pytest

from server.cli import main as cli_main
from server.dev.local_engine import LocalEngine
from storage.base.errors import StorageUnavailable
from storage.base.types import DynamoClient, Item, Response
from storage.engine.table import TableRef
from storage.engine.wrapping import ClientWrapper
from storage.model import keys, rules
from storage.model.comments import (
    Comment,
    ListingFilter,
    ModerationMode,
    NewComment,
    Order,
    PageRequest,
    Status,
    Vote,
)
from storage.model.indexes import LISTING_INDEXES, Index, table_definition
from storage.ops.backfill import backfill_helpful_keys
from storage.ops.create import create_table
from storage.ops.migrate import migrate
from storage.ops.verify import verify
from storage.reads.reader import author_comments, get_counts, list_comments, moderation_queue
from storage.writes import create_comment, get_comment
from storage.writes.delete import delete_comment
from storage.writes.edit import Edit, edit_comment
from storage.writes.votes import vote_helpful
from tests.helpers import FAST, oracle, own_engine_fixtures, own_product_id

pytestmark = pytest.mark.engine

# How long a migration may wait for one index before it fails with the indexes it waited
# for; DynamoDB Local builds one in well under a second on an engine this small.
BUILD_WAIT = 120.0
POLL = 0.05


# This module's own DynamoDB Local (see the module docstring for why).
engine, client = own_engine_fixtures()


# The previous version's create-table, written out as it was (storage/model/indexes.py before the
# life of a comment): four listing indexes sharing the sort key GSISK, projecting ALL.
_LEGACY_INDEXES = {
    "byLangAndRating": "GSIPK",
    "byLang": "GSI2PK",
    "byRating": "GSI3PK",
    "all": "GSI4PK",
}


def legacy_definition(name: str) -> dict[str, Any]:
    attrs = ["PK", "SK", "GSISK", *_LEGACY_INDEXES.values()]
    return {
        "TableName": name,
        "BillingMode": "PAY_PER_REQUEST",
        "KeySchema": [
            {"AttributeName": "PK", "KeyType": "HASH"},
            {"AttributeName": "SK", "KeyType": "RANGE"},
        ],
        "AttributeDefinitions": [{"AttributeName": a, "AttributeType": "S"} for a in attrs],
        "GlobalSecondaryIndexes": [
            {
                "IndexName": index,
                "KeySchema": [
                    {"AttributeName": partition, "KeyType": "HASH"},
                    {"AttributeName": "GSISK", "KeyType": "RANGE"},
                ],
                "Projection": {"ProjectionType": "ALL"},
            }
            for index, partition in _LEGACY_INDEXES.items()
        ],
    }


def legacy_comment(
    product_id: str, language: str, rating: int, author: str, created_at: str, *, versioned: bool
) -> Item:
    """A comment as the previous versions wrote it: no status, no verified flag, the four
    listing keys always present; without ``version`` and ``holdsSlot`` when older still."""
    cid = uuid.uuid4().hex
    pk = {"S": keys.comment_pk(cid)}
    item: Item = {
        "PK": pk,
        "SK": pk,
        "GSIPK": {"S": keys.lang_rating_pk(product_id, language, rating)},
        "GSI2PK": {"S": keys.lang_pk(product_id, language)},
        "GSI3PK": {"S": keys.rating_pk(product_id, rating)},
        "GSI4PK": {"S": keys.all_pk(product_id)},
        "GSISK": {"S": keys.sort_key(created_at, cid)},
        "commentId": {"S": cid},
        "productId": {"S": product_id},
        "language": {"S": language},
        "rating": {"N": str(rating)},
        "title": {"S": "Old review"},
        "body": {"S": f"Written by {author} before statuses existed."},
        "author": {"S": author},
        "authorName": {"S": author.capitalize()},
        "createdAt": {"S": created_at},
    }
    if versioned:
        item["version"] = {"N": "1"}
        item["holdsSlot"] = {"BOOL": True}
    return item


def legacy_stats(product_id: str, language: str | None, counts: list[int]) -> Item:
    """A stats item of the previous version: counts only (no verified_* counters), the
    leaderboard entry on the all-languages item."""
    item: Item = {
        "PK": {"S": keys.product_pk(product_id)},
        "SK": {"S": keys.stats_sk(language)},
        "productId": {"S": product_id},
        "count_total": {"N": str(sum(counts))},
        **{f"count_{r}": {"N": str(n)} for r, n in zip(rules.RATINGS, counts, strict=True)},
    }
    if language is not None:
        item["language"] = {"S": language}
    elif counts[4]:
        item["GSIPK"] = {"S": keys.LEADERS}
        item["GSISK"] = {"S": keys.leader_sort_key(counts[4])}
    return item


def author_slot(author: str, product_id: str) -> Item:
    return {
        "PK": {"S": keys.author_pk(author)},
        "SK": {"S": keys.author_product_sk(product_id)},
        "n": {"N": "1"},
    }


async def legacy_table(client: DynamoClient, product_id: str) -> tuple[TableRef, list[Item]]:
    """A new table made as the previous create-table made it, holding three old comments
    (one from before versions) with their counters and author slots."""
    name = f"legacy_{uuid.uuid4().hex[:8]}"
    await client.create_table(**legacy_definition(name))
    for _ in range(int(BUILD_WAIT / POLL)):  # DynamoDB Local makes tables ACTIVE at once
        described = await client.describe_table(TableName=name)
        if described["Table"]["TableStatus"] == "ACTIVE":
            break
        await asyncio.sleep(POLL)
    else:
        pytest.fail(f"the legacy table {name} did not become ACTIVE in {BUILD_WAIT:g} s")
    comments = [
        legacy_comment(product_id, "en", 5, "ann", "2024-01-01T10:00:00.000Z", versioned=False),
        legacy_comment(product_id, "en", 2, "bob", "2024-02-01T10:00:00.000Z", versioned=True),
        legacy_comment(product_id, "de", 5, "cem", "2024-03-01T10:00:00.000Z", versioned=True),
    ]
    items = [
        *comments,
        legacy_stats(product_id, None, [0, 1, 0, 0, 2]),
        legacy_stats(product_id, "en", [0, 1, 0, 0, 1]),
        legacy_stats(product_id, "de", [0, 0, 0, 0, 1]),
        author_slot("bob", product_id),
        author_slot("cem", product_id),
    ]
    for item in items:
        await client.put_item(TableName=name, Item=item)
    return TableRef(client, name), comments


def ids(items: list[Item]) -> list[str]:
    return [i["commentId"]["S"] for i in items]


async def index_statuses(table: TableRef) -> dict[str, str]:
    described = (await table.client.describe_table(TableName=table.name))["Table"]
    return {g["IndexName"]: g["IndexStatus"] for g in described["GlobalSecondaryIndexes"]}


async def listed(table: TableRef, listing: ListingFilter) -> list[str]:
    page = await list_comments(table, listing, PageRequest(size=100))
    return [c.comment_id for c in page.comments]


# What a table of the first version lacks: every index of today but its four.
NEW_INDEXES = [index.value for index in Index if index.value not in _LEGACY_INDEXES]
N = len(NEW_INDEXES)


async def test_create_table_refuses_a_legacy_table_and_names_the_command(
    client: DynamoClient,
) -> None:
    table, _ = await legacy_table(client, own_product_id())
    with pytest.raises(StorageUnavailable, match="migrate-table"):
        await create_table(client, table.name)


async def test_migrate_adds_the_indexes_and_old_comments_live_on(client: DynamoClient) -> None:
    pid = own_product_id()
    table, old = await legacy_table(client, pid)
    lines: list[str] = []

    done = await migrate(
        table,
        progress=lines.append,
        wait_seconds=BUILD_WAIT,
        poll_seconds=POLL,
        legacy_processes_gone=True,
    )

    assert list(done.added) == NEW_INDEXES
    assert list(done.present) == list(_LEGACY_INDEXES)
    assert done.stream_enabled
    described = (await client.describe_table(TableName=table.name))["Table"]
    assert described["StreamSpecification"] == {
        "StreamEnabled": True,
        "StreamViewType": "NEW_AND_OLD_IMAGES",
    }
    assert done.backfill is not None
    assert done.backfill.written == len(old)  # the old comments' helpful keys
    assert await index_statuses(table) == {index.value: "ACTIVE" for index in Index}
    for n, index in enumerate(NEW_INDEXES, 1):
        assert f"[{n}/{N}] adding index {index}" in lines
        assert f"[{n}/{N}] index {index} is ACTIVE" in lines
    assert await create_table(client, table.name) is False  # the layout is now today's

    # The old comments: listed newest first, published, unverified; in their author's index.
    newest_first = list(reversed(ids(old)))
    assert await listed(table, ListingFilter(pid)) == newest_first
    page = await list_comments(table, ListingFilter(pid), PageRequest(size=100))
    assert {c.status for c in page.comments} == {Status.PUBLISHED}
    assert not any(c.verified for c in page.comments)
    assert await listed(table, ListingFilter(pid, "en", frozenset({2}))) == [ids(old)[1]]
    assert await listed(table, ListingFilter(pid, verified_only=True)) == []
    for item in old:
        mine = await author_comments(table, item["author"]["S"], PageRequest(size=10))
        assert [c.comment_id for c in mine.comments] == [item["commentId"]["S"]]
        assert mine.comments[0].status is Status.PUBLISHED
    assert (await get_counts(table, pid, None)).verified == (0, 0, 0, 0, 0)

    # Writes of today on the migrated table.
    pending = await create_comment(
        table,
        NewComment(pid, "en", 4, "held for a moderator", "dan"),
        moderation=ModerationMode.PRE,
        backoff=FAST,
    )
    queue = await moderation_queue(table, PageRequest(size=100))
    assert [c.comment_id for c in queue.comments] == [pending.comment.comment_id]
    verified = await create_comment(
        table, NewComment(pid, "de", 5, "bought it", "eve", verified=True), backoff=FAST
    )
    vid = verified.comment.comment_id
    assert await listed(table, ListingFilter(pid, verified_only=True)) == [vid]
    assert await listed(table, ListingFilter(pid, "de", frozenset({5}), verified_only=True)) == [
        vid
    ]
    counts = await get_counts(table, pid, None)
    assert counts.by_rating == (0, 1, 0, 0, 3)
    assert counts.verified == (0, 0, 0, 0, 1)

    # Transitions of old comments: the one without a version is edited (its first
    # versioned write), a versioned one deleted (its author's slot given back).
    oldest = ids(old)[0]
    edited = await edit_comment(table, oldest, Edit(rating=3), author_id="ann", backoff=FAST)
    assert (edited.rating, edited.status) == (3, Status.PUBLISHED)
    await delete_comment(table, ids(old)[1], author_id="bob", backoff=FAST)
    assert (await get_counts(table, pid, None)).by_rating == (0, 0, 1, 0, 2)
    assert await listed(table, ListingFilter(pid)) == [vid, ids(old)[2], oldest]
    report = await verify(table)
    assert report.exact, report.describe()

    # A second run finds nothing to do and says nothing.
    lines.clear()
    again = await migrate(
        table,
        progress=lines.append,
        wait_seconds=BUILD_WAIT,
        poll_seconds=POLL,
        legacy_processes_gone=True,
    )
    assert again.added == ()
    assert not again.stream_enabled
    assert list(again.present) == [index.value for index in Index]
    assert lines == []


class Interrupted(Exception):
    pass


async def test_an_interrupted_migration_is_finished_by_the_next(client: DynamoClient) -> None:
    table, _ = await legacy_table(client, own_product_id())

    def stop_once_one_is_built(line: str) -> None:
        if line.endswith("is ACTIVE"):
            raise Interrupted

    with pytest.raises(Interrupted):
        await migrate(
            table, progress=stop_once_one_is_built, wait_seconds=BUILD_WAIT, poll_seconds=POLL
        )
    assert len(await index_statuses(table)) == 5

    done = await migrate(
        table, wait_seconds=BUILD_WAIT, poll_seconds=POLL, legacy_processes_gone=True
    )
    assert list(done.added) == NEW_INDEXES[1:]
    assert await index_statuses(table) == {index.value: "ACTIVE" for index in Index}


async def test_the_cli_migrates_a_table_once(
    client: DynamoClient, engine: LocalEngine, capsys: pytest.CaptureFixture[str]
) -> None:
    pid = own_product_id()
    table, old = await legacy_table(client, pid)
    args = [
        "migrate-table",
        *("--endpoint-url", engine.endpoint_url, "--table", table.name),
        *("--wait", f"{BUILD_WAIT:g}"),
    ]

    # The command runs its own event loop, as from a shell: in a thread of its own here.
    # The table is from before layout versions: the first run expands it, and stops
    # (exit 3) before the old comments get new keys, as their writers cannot be seen.
    assert await asyncio.to_thread(cli_main, args) == 3
    first = capsys.readouterr()
    assert f"added indexes: {', '.join(NEW_INDEXES)}" in first.out
    assert "NOT DONE" in first.out
    assert "--legacy-processes-gone" in first.out
    for n, index in enumerate(NEW_INDEXES, 1):
        assert f"[{n}/{N}] adding index {index}" in first.err
        assert f"[{n}/{N}] index {index} is ACTIVE" in first.err
    assert await index_statuses(table) == {index.value: "ACTIVE" for index in Index}
    ttl = await client.describe_time_to_live(TableName=table.name)
    assert ttl["TimeToLiveDescription"]["TimeToLiveStatus"] in ("ENABLED", "ENABLING")

    assert await asyncio.to_thread(cli_main, [*args, "--legacy-processes-gone"]) == 0
    second = capsys.readouterr()
    assert "raised the fence" in second.out
    assert "the table is at layout" in second.out
    assert "adding index" not in second.err

    assert await asyncio.to_thread(cli_main, args) == 0
    third = capsys.readouterr()
    assert "nothing to do" in third.out

    create = ["create-table", "--endpoint-url", engine.endpoint_url, "--table", table.name]
    assert await asyncio.to_thread(cli_main, create) == 0
    assert "already exists; indexes active" in capsys.readouterr().out
    mine = await author_comments(table, "cem", PageRequest(size=10))
    assert [c.comment_id for c in mine.comments] == [ids(old)[2]]


class RecordsUpdates(ClientWrapper):
    """Records the UpdateTable requests made through it."""

    def __init__(self, inner: DynamoClient) -> None:
        super().__init__(inner)
        self.updates: list[dict[str, Any]] = []

    async def update_table(self, **kwargs: Any) -> Response:
        self.updates.append(kwargs)
        return await super().update_table(**kwargs)


class NeverBuilt(RecordsUpdates):
    """Describes every index added through it as CREATING for ever, as an engine would whose
    index builds never run."""

    async def describe_table(self, **kwargs: Any) -> Response:
        response = await super().describe_table(**kwargs)
        added = {
            update["Create"]["IndexName"]
            for request in self.updates
            for update in request["GlobalSecondaryIndexUpdates"]
        }
        for index in response["Table"].get("GlobalSecondaryIndexes", []):
            if index["IndexName"] in added:
                index["IndexStatus"] = "CREATING"
        return response


async def test_a_wait_for_an_index_is_bounded_and_the_next_run_resumes(
    client: DynamoClient,
) -> None:
    table, _ = await legacy_table(client, own_product_id())
    stalled = NeverBuilt(client)

    with pytest.raises(StorageUnavailable) as refused:
        await migrate(TableRef(stalled, table.name), wait_seconds=0.2, poll_seconds=POLL)
    message = str(refused.value)
    assert "verifiedByRating still not ACTIVE after 0.2 s" in message
    assert "migrate-table run again" in message
    assert len(stalled.updates) == 1  # it gave up instead of adding the next index

    done = await migrate(
        table, wait_seconds=BUILD_WAIT, poll_seconds=POLL, legacy_processes_gone=True
    )
    assert list(done.added) == NEW_INDEXES[1:]
    assert await index_statuses(table) == {index.value: "ACTIVE" for index in Index}


async def test_each_update_defines_only_the_new_index_keys(client: DynamoClient) -> None:
    table, _ = await legacy_table(client, own_product_id())
    recorded = RecordsUpdates(client)

    await migrate(TableRef(recorded, table.name), wait_seconds=BUILD_WAIT, poll_seconds=POLL)

    index_updates = [u for u in recorded.updates if "GlobalSecondaryIndexUpdates" in u]
    sent = [(u["GlobalSecondaryIndexUpdates"], u["AttributeDefinitions"]) for u in index_updates]
    # The last update turns the stream on, alone.
    assert recorded.updates[-1] == {
        "TableName": table.name,
        "StreamSpecification": {"StreamEnabled": True, "StreamViewType": "NEW_AND_OLD_IMAGES"},
    }
    assert len(index_updates) == len(recorded.updates) - 1
    assert [creates[0]["Create"]["IndexName"] for creates, _ in sent] == NEW_INDEXES
    # The keys each new index is built on, as UpdateTable requires, and nothing else.
    assert [[a["AttributeName"] for a in attrs] for _, attrs in sent] == [
        ["GSI5PK", "GSISK"],
        ["GSI6PK", "GSISK"],
        ["author", "GSISK"],
        ["QPK", "QSK"],
        # The helpful twins: the listing indexes' partitions, sorted by HSK.
        ["GSIPK", "HSK"],
        ["GSI2PK", "HSK"],
        ["GSI3PK", "HSK"],
        ["GSI4PK", "HSK"],
        ["GSI5PK", "HSK"],
        ["GSI6PK", "HSK"],
        # The facet indexes: every facet kind's entries, by rating, all languages or one.
        ["FPK", "GSISK"],
        ["FLPK", "GSISK"],
    ]


def previous_definition(name: str) -> dict[str, Any]:
    """The create-table of the version before the sort orders: today's without the helpful
    twins (and so without HSK among the attributes)."""
    definition = table_definition(name)
    twins = {index.helpful_twin.value for index in LISTING_INDEXES}
    definition["GlobalSecondaryIndexes"] = [
        g for g in definition["GlobalSecondaryIndexes"] if g["IndexName"] not in twins
    ]
    definition["AttributeDefinitions"] = [
        a for a in definition["AttributeDefinitions"] if a["AttributeName"] != "HSK"
    ]
    return definition


async def test_a_table_from_before_the_sort_orders_lists_its_comments_most_helpful_first(
    client: DynamoClient,
) -> None:
    pid = own_product_id()
    name = f"previous_{uuid.uuid4().hex[:8]}"
    await client.create_table(**previous_definition(name))
    table = TableRef(client, name)
    made = []
    for n in range(7):
        new = NewComment(pid, ["en", "de"][n % 2], 1 + n % 5, f"b{n}", f"u{n}")
        mode = ModerationMode.PRE if n == 6 else ModerationMode.POST
        made.append((await create_comment(table, new, moderation=mode, backoff=FAST)).comment)
    # As the previous version wrote them: no helpful key (and no votes: they did not exist).
    for c in made:
        await client.update_item(
            TableName=name,
            Key={
                "PK": {"S": keys.comment_pk(c.comment_id)},
                "SK": {"S": keys.comment_pk(c.comment_id)},
            },
            UpdateExpression="REMOVE HSK",
        )
    await migrate(table, wait_seconds=BUILD_WAIT, poll_seconds=POLL, expand_only=True)

    # A backfill stopped after its first page resumes there, and gives every published
    # comment its key exactly once.
    def stop(line: str) -> None:
        raise Interrupted

    with pytest.raises(Interrupted):
        await backfill_helpful_keys(table, progress=stop, page_items=3)
    rest = await backfill_helpful_keys(table, page_items=3)
    assert rest.resumed
    everything = (await client.scan(TableName=name))["Count"]
    assert rest.scanned <= everything - 3 + 1  # not the first page again (+ the checkpoint)
    assert rest.written > 0
    again = await backfill_helpful_keys(table, page_items=3)
    assert again.already_done
    published = [c for c in made if c.status is Status.PUBLISHED]
    for fan, c in enumerate(published[:3]):
        for voter in range(fan + 1):
            await vote_helpful(table, c.comment_id, voter=f"fan{voter}", vote=Vote.HELPFUL)
    voted = [c for c in (await every(table, pid)) if c is not None]
    for listing in (
        ListingFilter(pid),
        ListingFilter(pid, "en"),
        ListingFilter(pid, None, frozenset({1, 2})),
    ):
        page = await list_comments(table, listing, PageRequest(size=100), order=Order.MOST_HELPFUL)
        assert [c.comment_id for c in page.comments] == [
            c.comment_id for c in oracle(voted, listing, Order.MOST_HELPFUL)
        ]
    report = await verify(table)
    assert report.exact, report.describe()


async def every(table: TableRef, pid: str) -> list[Comment | None]:
    page = await list_comments(table, ListingFilter(pid), PageRequest(size=100))
    return [await get_comment(table, c.comment_id) for c in page.comments]
