"""The write path under races and abuse: versions, idempotency records, write limits,
counters that cannot go below zero."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from storage.base.errors import (
    CommentNotFound,
    CommentsPerProductLimit,
    CounterInvariantBroken,
    IdempotencyKeyReused,
    WriteRateLimited,
)
from storage.base.expressions import Update
from storage.base.types import DynamoClient, Response
from storage.engine.leaderboard_layout import read_layout
from storage.engine.table import TableRef
from storage.engine.wrapping import ClientWrapper
from storage.model import keys
from storage.model.comments import ListingFilter, NewComment, PageRequest
from storage.model.items import comment_key
from storage.model.stats import stats_key
from storage.ops.verify import verify
from storage.reads.reader import get_counts, list_comments
from storage.writes import WriteLimits, create_comment, delete_comment, get_comment
from storage.writes.counters import FiveStars, Move, parts
from storage.writes.state import read_stored
from storage.writes.transaction import CallBudget, Part, transact
from tests.helpers import FAST, assert_counters_exact, own_table

T0 = datetime(2026, 11, 23, 10, 15, tzinfo=UTC)


def at(moment: datetime) -> Any:
    return lambda: moment


async def test_delete_racing_a_same_key_re_create_keeps_counters_exact(
    table: TableRef, product_id: str
) -> None:
    # The reproduction of the critical defect, by one ordinary author: create with key K,
    # then deletes of that id racing creates with K carrying other ratings and languages.
    # Before, the id was derived from (author, K), so a stale delete removed the re-created
    # comment but uncounted the old one: counters went negative and phantom ones appeared.
    key = "K"
    for round_no in range(25):
        first = await create_comment(
            table, NewComment(product_id, "en", 1, "one", "ann", idempotency_key=key), backoff=FAST
        )
        ops: list[Any] = [
            delete_comment(table, first.comment.comment_id, backoff=FAST) for _ in range(4)
        ]
        ops += [
            create_comment(
                table,
                NewComment(
                    product_id, lang, rating, f"again {round_no}", "ann", idempotency_key="K"
                ),
                backoff=FAST,
            )
            for rating, lang in ((2, "de"), (4, "fr"), (2, "de"), (4, "fr"))
        ]
        results = await asyncio.gather(*ops, return_exceptions=True)
        for r in results:
            # Another request under the same key is refused; deletes after the first find
            # nothing. Nothing else may happen.
            assert isinstance(r, CommentNotFound | IdempotencyKeyReused) or not isinstance(
                r, BaseException
            ), r
        remaining = await get_comment(table, first.comment.comment_id)
        if remaining is not None:
            await delete_comment(table, remaining.comment_id, backoff=FAST)
        await assert_counters_exact(table, product_id)
    counts = await get_counts(table, product_id, None)
    assert counts.total == 0
    assert (await get_counts(table, product_id, "de")).total == 0
    page = await list_comments(
        table, ListingFilter(product_id, None, frozenset({2, 4})), PageRequest(5)
    )
    assert page.comments == ()
    assert not page.has_more


class _Interleave(ClientWrapper):
    """Runs ``before`` once, just before the first transaction that deletes a comment: the
    state changes between the writer's read and its commit."""

    def __init__(self, inner: DynamoClient, before: Any) -> None:
        super().__init__(inner)
        self.before = before
        self.done = False

    async def _call(self, operation: str, kwargs: dict[str, Any]) -> Response:
        if (
            operation == "transact_write_items"
            and not self.done
            and any("Delete" in item for item in kwargs["TransactItems"])
        ):
            self.done = True
            await self.before()
        return await super()._call(operation, kwargs)


async def test_a_delete_never_commits_a_move_computed_from_a_stale_read(
    table: TableRef, product_id: str
) -> None:
    made = await create_comment(table, NewComment(product_id, "en", 1, "x", "ann"))
    cid = made.comment.comment_id

    async def edit_rating_to_five() -> None:
        # What an edit (a later transition) does: move the comment 1 -> 5 and its counters,
        # conditioned on the version, bumping it.
        stored = await read_stored(table, cid)
        assert stored is not None
        five = FiveStars(
            count=(await get_counts(table, product_id, None)).count(5),
            layout=await read_layout(table),
        )
        moved = stored.comment.__class__(**{**_fields(stored.comment), "rating": 5})
        budget = CallBudget()
        u = Update()
        u.set("rating", 5)
        u.set("version", stored.version + 1)
        u.set("GSI3PK", keys.rating_pk(product_id, 5))
        u.set("GSIPK", keys.lang_rating_pk(product_id, "en", 5))
        u.condition(stored.unchanged())
        update = u.request(table.name, comment_key(cid))
        moves = [Move(stored.comment, -1), Move(moved, 1)]
        assert (
            await transact(
                table, [Part("comment", {"Update": update}), *parts(table, moves, five)], budget
            )
            is None
        )

    racing = TableRef(_Interleave(table.client, edit_rating_to_five), table.name)
    deleted = await delete_comment(racing, cid, backoff=FAST)
    # The delete saw the edit's condition fail on its stale read, read again and uncounted
    # the comment as it was when it committed: a 5-star comment.
    assert deleted.rating == 5
    assert await get_comment(table, cid) is None
    await assert_counters_exact(table, product_id)
    assert (await get_counts(table, product_id, None)).total == 0


def _fields(comment: Any) -> dict[str, Any]:
    return {name: getattr(comment, name) for name in comment.__slots__}


async def test_a_counter_below_zero_is_refused_not_clamped(
    table: TableRef, product_id: str
) -> None:
    made = await create_comment(table, NewComment(product_id, "de", 2, "x", "ann"))
    # Counters that drifted (written by something else): the language's count_2 is 0.
    await table.client.update_item(
        TableName=table.name,
        Key=stats_key(product_id, "de"),
        UpdateExpression="SET count_2 = :z",
        ExpressionAttributeValues={":z": {"N": "0"}},
    )
    with pytest.raises(CounterInvariantBroken):
        await delete_comment(table, made.comment.comment_id, backoff=FAST)
    # Nothing was written: the comment and every counter are as they were.
    assert await get_comment(table, made.comment.comment_id) is not None
    assert (await get_counts(table, product_id, None)).count(2) == 1
    assert (await get_counts(table, product_id, "de")).count(2) == 0


async def test_reading_a_negative_counter_fails_loudly(table: TableRef, product_id: str) -> None:
    await table.client.put_item(
        TableName=table.name,
        Item={**stats_key(product_id, None), "count_1": {"N": "-3"}, "count_total": {"N": "-3"}},
    )
    with pytest.raises(ValueError, match="non-negative"):
        await get_counts(table, product_id, None)


# Idempotency keys


def _new(pid: str, **changes: Any) -> NewComment:
    fields: dict[str, Any] = {
        "product_id": pid,
        "language": "en",
        "rating": 4,
        "body": "Works well.",
        # Keys are per author, and authors are per test (the table is shared).
        "author_id": f"a-{pid}",
        "title": "Good",
        "idempotency_key": "order-1",
    }
    return NewComment(**{**fields, **changes})


async def test_same_key_same_request_returns_the_first_result(
    table: TableRef, product_id: str
) -> None:
    first = await create_comment(table, _new(product_id))
    again = await create_comment(table, _new(product_id, language="EN"))  # same after normalising
    assert first.created
    assert not again.created
    assert again.comment == first.comment
    assert (await get_counts(table, product_id, None)).total == 1


@pytest.mark.parametrize("verified", [True, False])
async def test_a_replay_answers_what_the_first_request_stored(
    table: TableRef, product_id: str, verified: bool
) -> None:
    # Whether the purchase is verified comes from the token, not from the request's fields:
    # a retry with another token (purchases listed, or not) still gets the first result.
    first = await create_comment(table, _new(product_id, verified=verified))
    again = await create_comment(table, _new(product_id, verified=not verified))
    assert not again.created
    assert again.comment == first.comment
    assert again.comment.verified is verified


@pytest.mark.parametrize(
    "change",
    [
        {"rating": 5},
        {"language": "de"},
        {"title": "Bad"},
        {"title": None},
        {"body": "Broke."},
    ],
)
async def test_same_key_other_request_is_refused_and_writes_nothing(
    table: TableRef, product_id: str, change: dict[str, Any]
) -> None:
    first = await create_comment(table, _new(product_id))
    with pytest.raises(IdempotencyKeyReused):
        await create_comment(table, _new(product_id, **change))
    assert (await get_counts(table, product_id, None)).total == 1
    assert await get_comment(table, first.comment.comment_id) == first.comment


async def test_same_key_on_another_product_is_another_request(
    table: TableRef, product_id: str
) -> None:
    await create_comment(table, _new(product_id))
    with pytest.raises(IdempotencyKeyReused):
        await create_comment(table, _new(f"{product_id}-b", author_id=f"a-{product_id}"))
    # Keys are per author: another author may use the same key.
    other = await create_comment(table, _new(product_id, author_id=f"b-{product_id}"))
    assert other.created


async def test_a_retry_after_a_delete_returns_the_result_and_never_resurrects(
    table: TableRef, product_id: str
) -> None:
    first = await create_comment(table, _new(product_id), clock=at(T0))
    await delete_comment(table, first.comment.comment_id)
    late = await create_comment(table, _new(product_id), clock=at(T0 + timedelta(hours=23)))
    assert not late.created
    assert late.comment == first.comment
    assert await get_comment(table, first.comment.comment_id) is None
    assert (await get_counts(table, product_id, None)).total == 0


async def test_a_key_is_forgotten_after_a_day(table: TableRef, product_id: str) -> None:
    first = await create_comment(table, _new(product_id), clock=at(T0))
    await delete_comment(table, first.comment.comment_id)
    later = await create_comment(
        table, _new(product_id, rating=2), clock=at(T0 + timedelta(hours=24, seconds=1))
    )
    assert later.created
    assert later.comment.comment_id != first.comment.comment_id


async def test_a_burst_of_one_request_creates_one_comment(table: TableRef, product_id: str) -> None:
    other = TableRef(table.client, table.name)  # another process: its own locks
    results = await asyncio.gather(
        *(create_comment(t, _new(product_id, rating=5), backoff=FAST) for t in [table, other] * 8)
    )
    assert sum(r.created for r in results) == 1
    assert len({r.comment.comment_id for r in results}) == 1
    await assert_counters_exact(table, product_id)


# Write limits


async def test_one_comment_per_author_and_product_by_default(
    table: TableRef, product_id: str
) -> None:
    limits = WriteLimits()
    made = await create_comment(table, _new(product_id, idempotency_key=None), write_limits=limits)
    with pytest.raises(CommentsPerProductLimit, match="at most 1 comment"):
        await create_comment(
            table, _new(product_id, idempotency_key=None, rating=1), write_limits=limits
        )
    assert (await get_counts(table, product_id, None)).total == 1
    # Another product, another author: allowed. A retry of the first request: its result.
    other = _new(f"{product_id}-b", author_id=f"a-{product_id}", idempotency_key=None)
    await create_comment(table, other, write_limits=limits)
    await create_comment(table, _new(product_id, author_id=f"b-{product_id}"), write_limits=limits)
    # Deleting gives the slot back.
    await delete_comment(table, made.comment.comment_id)
    await create_comment(table, _new(product_id, idempotency_key=None), write_limits=limits)


async def test_a_retry_is_not_refused_by_the_limit_its_first_request_used(
    table: TableRef, product_id: str
) -> None:
    limits = WriteLimits()
    first = await create_comment(table, _new(product_id), write_limits=limits)
    again = await create_comment(table, _new(product_id), write_limits=limits)
    assert again.comment == first.comment
    assert not again.created


async def test_the_per_product_limit_holds_across_processes(
    table: TableRef, product_id: str
) -> None:
    limits = WriteLimits(per_product=2, per_hour=None)
    tables = [table, TableRef(table.client, table.name)]
    results = await asyncio.gather(
        *(
            create_comment(
                tables[n % 2],
                _new(product_id, idempotency_key=None, body=f"take {n}", rating=1 + n % 5),
                write_limits=limits,
                backoff=FAST,
            )
            for n in range(12)
        ),
        return_exceptions=True,
    )
    made = [r for r in results if not isinstance(r, BaseException)]
    refused = [r for r in results if isinstance(r, CommentsPerProductLimit)]
    assert (len(made), len(refused)) == (2, 10), results
    await assert_counters_exact(table, product_id)


async def test_hourly_rate_per_author(table: TableRef, product_id: str) -> None:
    limits = WriteLimits(per_product=None, per_hour=3)
    author = f"rate-{product_id}"
    for n in range(3):
        await create_comment(
            table,
            _new(f"{product_id}-{n}", author_id=author, idempotency_key=None),
            write_limits=limits,
            clock=at(T0 + timedelta(minutes=n)),
        )
    with pytest.raises(WriteRateLimited) as refused:
        await create_comment(
            table,
            _new(f"{product_id}-x", author_id=author, idempotency_key=None),
            write_limits=limits,
            clock=at(T0 + timedelta(minutes=10)),
        )
    # 10:25 -> 11:00 is 35 minutes.
    assert 35 * 60 <= refused.value.retry_after <= 35 * 60 + 1
    assert (await get_counts(table, f"{product_id}-x", None)).total == 0
    await create_comment(
        table,
        _new(f"{product_id}-x", author_id=author, idempotency_key=None),
        write_limits=limits,
        clock=at(T0 + timedelta(hours=1)),
    )


async def test_verify_recounts_the_authors_slots(table: TableRef) -> None:
    own = await own_table(table, "slots")
    made = await create_comment(own, _new("p1", idempotency_key=None))
    await create_comment(own, _new("p2", idempotency_key=None))
    assert (await verify(own)).exact
    await own.client.update_item(
        TableName=own.name,
        Key={"PK": {"S": keys.author_pk("a-p1")}, "SK": {"S": keys.author_product_sk("p1")}},
        UpdateExpression="SET n = :n",
        ExpressionAttributeValues={":n": {"N": "3"}},
    )
    report = await verify(own)
    assert [(d.stored, d.expected) for d in report.slot_drifts] == [(3, 1)]
    await delete_comment(own, made.comment.comment_id)
    assert [(d.stored, d.expected) for d in (await verify(own)).slot_drifts] == [(2, 0)]
