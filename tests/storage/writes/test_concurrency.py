"""Concurrent writes and injected faults: counters and the leaderboard stay exact."""

from __future__ import annotations

import asyncio
import itertools
from typing import Any

import pytest

from storage.base.errors import CommentNotFound, StorageUnavailable, WriteConflict
from storage.engine.retry import Backoff
from storage.engine.table import TableRef
from storage.model.comments import ListingFilter, NewComment, PageRequest
from storage.reads.reader import batch_get_counts, get_counts, list_comments
from storage.writes import create_comment, delete_comment, get_comment
from tests.helpers import (
    FAST,
    FaultyClient,
    assert_counters_exact,
    cancelled,
    client_error,
    create_many,
    stamp,
)


async def test_two_hundred_concurrent_creates_and_deletes(table: TableRef, product_id: str) -> None:
    existing = await create_many(
        table,
        [NewComment(product_id, "en", [5, 1, 4][n % 3], f"old {n}", "ann") for n in range(90)],
    )
    creates = [
        NewComment(product_id, ["en", "de", "ja"][n % 3], [5, 5, 4, 3, 1][n % 5], f"new {n}", "bob")
        for n in range(150)
    ]
    ops: list[Any] = [create_comment(table, c, backoff=FAST) for c in creates]
    ops += [delete_comment(table, c.comment_id, backoff=FAST) for c in existing[:80]]
    # Deleting the same comment twice at once: exactly one of each pair succeeds.
    ops += [delete_comment(table, c.comment_id, backoff=FAST) for c in existing[:20]]
    results = await asyncio.gather(*ops, return_exceptions=True)
    failures = [r for r in results if isinstance(r, BaseException)]
    assert all(isinstance(f, CommentNotFound) for f in failures), failures
    assert len(failures) == 20
    await assert_counters_exact(table, product_id)
    assert (await get_counts(table, product_id, None)).total == 90 - 80 + 150


async def test_two_processes_racing_on_five_star_counts(table: TableRef, product_id: str) -> None:
    # Separate TableRefs have separate locks, as two server processes would: the conditions
    # in the transactions are then what keeps the leaderboard exact.
    other = TableRef(table.client, table.name)
    writes = [
        create_comment(t, NewComment(product_id, "en", 5, f"n{n}", "ann"), backoff=FAST)
        for n, t in zip(range(60), itertools.cycle([table, other]), strict=False)
    ]
    await asyncio.gather(*writes)
    await assert_counters_exact(table, product_id)
    assert (await get_counts(table, product_id, None)).count(5) == 60


def _first_two_attempts_fail(error: Exception) -> Any:
    """Every write's transaction fails twice before it may go through."""
    seen: dict[str, int] = {}

    def rule(name: str, kwargs: dict[str, Any]) -> Exception | None:
        if name != "transact_write_items":
            return None
        first = kwargs["TransactItems"][0]
        target = str((first.get("Put") or first.get("Delete") or {}).get("Item", first))
        seen[target] = seen.get(target, 0) + 1
        return error if seen[target] <= 2 else None

    return rule


@pytest.mark.parametrize(
    "error",
    [
        cancelled("None", "TransactionConflict", "None"),
        cancelled("None", "None", "ThrottlingError"),
        client_error("ThrottlingException", "TransactWriteItems"),
        client_error("TransactionInProgressException", "TransactWriteItems"),
    ],
    ids=["conflict", "throttled-item", "throttled-call", "in-progress"],
)
async def test_transient_write_failures_are_retried(
    table: TableRef, product_id: str, error: Exception
) -> None:
    faulty = FaultyClient(table.client, _first_two_attempts_fail(error))
    flaky = TableRef(faulty, table.name)
    made = await create_many(
        flaky, [NewComment(product_id, "en", 1 + n % 5, f"c{n}", "ann") for n in range(30)], 8
    )
    for c in made[:10]:
        await delete_comment(flaky, c.comment_id, backoff=FAST)
    await assert_counters_exact(table, product_id)
    assert (await get_counts(table, product_id, None)).total == 20
    # Each of the 40 writes failed twice before committing (lost races add a few more).
    assert faulty.calls.count("transact_write_items") >= 3 * 40


async def test_persistent_conflict_surfaces_and_writes_nothing(
    table: TableRef, product_id: str
) -> None:
    def always(name: str, kwargs: dict[str, Any]) -> Exception | None:
        if name == "transact_write_items":
            return cancelled("None", "TransactionConflict", "None")
        return None

    faulty = FaultyClient(table.client, always)
    backoff = Backoff(attempts=4, base=0.001, cap=0.002)
    with pytest.raises(WriteConflict):
        await create_comment(
            TableRef(faulty, table.name),
            NewComment(product_id, "en", 5, "x", "ann", idempotency_key="k"),
            backoff=backoff,
        )
    assert faulty.calls.count("transact_write_items") == 4
    assert (await get_counts(table, product_id, None)).total == 0
    # The same request succeeds once storage recovers, and counts once.
    made = await create_comment(
        table, NewComment(product_id, "en", 5, "x", "ann", idempotency_key="k")
    )
    assert await get_comment(table, made.comment.comment_id) == made.comment
    await assert_counters_exact(table, product_id)


async def test_engine_errors_on_writes_are_typed(table: TableRef, product_id: str) -> None:
    def broken(name: str, kwargs: dict[str, Any]) -> Exception | None:
        return client_error("InternalFailure", "TransactWriteItems")

    with pytest.raises(StorageUnavailable) as info:
        await create_comment(
            TableRef(FaultyClient(table.client, broken), table.name),
            NewComment(product_id, "en", 3, "x", "ann"),
        )
    assert "InternalFailure" not in str(info.value)
    assert info.value.__cause__ is not None


async def test_one_failing_query_fails_the_whole_fan_out(table: TableRef, product_id: str) -> None:
    await create_many(
        table,
        [
            NewComment(product_id, "en", 1 + n % 5, f"c{n}", "ann", created_at=stamp(n))
            for n in range(30)
        ],
    )
    listing = ListingFilter(product_id, ratings=frozenset({1, 2, 3}))

    def fail_rating_two(name: str, kwargs: dict[str, Any]) -> Exception | None:
        values = kwargs.get("ExpressionAttributeValues", {}).values()
        if name == "query" and any(v.get("S", "").endswith("/2") for v in values):
            return client_error("ProvisionedThroughputExceededException", "Query")
        return None

    faulty = FaultyClient(table.client, fail_rating_two)
    with pytest.raises(StorageUnavailable):
        await list_comments(TableRef(faulty, table.name), listing, PageRequest(10))
    assert faulty.calls.count("batch_get_item") == 1
    assert faulty.calls.count("query") == 3
    # Without the fault the same read succeeds.
    page = await list_comments(table, listing, PageRequest(10))
    assert len(page.comments) == 10


class _Unprocessed(FaultyClient):
    """Leaves the first key of every BatchGetItem of several keys unprocessed."""

    def __init__(self, inner: Any) -> None:
        super().__init__(inner, lambda name, kwargs: None)

    async def batch_get_item(self, **kwargs: Any) -> dict[str, Any]:
        self.calls.append("batch_get_item")
        request = kwargs["RequestItems"]
        ((name, spec),) = request.items()
        if len(spec["Keys"]) == 1:
            return dict(await self.inner.batch_get_item(**kwargs))
        held, rest = spec["Keys"][:1], spec["Keys"][1:]
        response = dict(
            await self.inner.batch_get_item(RequestItems={name: {**spec, "Keys": rest}})
        )
        response["UnprocessedKeys"] = {name: {**spec, "Keys": held}}
        return response


async def test_unprocessed_keys_are_retried(table: TableRef, product_id: str) -> None:
    await create_many(table, [NewComment(product_id, "de", 4, "x", "ann")])
    faulty = _Unprocessed(table.client)
    wanted: list[tuple[str, str | None]] = [(product_id, None), (product_id, "de")]
    wanted += [(f"{product_id}-{n}", None) for n in range(150)]
    got = await batch_get_counts(TableRef(faulty, table.name), wanted, backoff=FAST)
    assert [(c.product_id, c.language) for c in got] == wanted
    assert got[0].total == 1
    assert got[1].count(4) == 1
    # Two chunks (100 + 52 keys), each needing a second call for its held-back key.
    assert faulty.calls.count("batch_get_item") == 4
