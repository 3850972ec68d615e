"""Creating and deleting comments, with counters changed in the same transaction.

Counters: ``count_<rating>`` and ``count_total`` on ``S`` and ``S#<lang>`` change by ADD in
the comment's own TransactWriteItems, so they cannot drift from the comments.

Leaderboard: the ``S`` item carries ``GSISK = pad(count_5)`` while ``count_5 > 0``. An update
expression cannot format a number, so a write that changes ``count_5`` reads it first and
conditions the transaction on ``count_5`` still having that value; when another write got
there first the condition cancels the transaction and we re-read and retry. Every committed
change to ``count_5`` therefore sets the entry from the value it replaced: it is exact at
every commit. Writes of other ratings do not touch ``count_5`` and never contend with it.

``lastCommentedAt`` only grows: a create sets it under the condition that the stored value
is not newer; if it is, the create learns that (cancellation, one read) and retries without
setting it.

Cancelled transactions (conflicts, throttling, our own conditions) are retried with jittered
backoff a bounded number of times, then reported as ``WriteConflict``.
"""

from __future__ import annotations

import hashlib
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from botocore.exceptions import ClientError

from storage import keys
from storage.errors import CommentNotFound, NotAuthor, StorageUnavailable, WriteConflict
from storage.items import (
    COUNT_ATTRS,
    LAST_ATTR,
    LEADER_ATTR,
    TOTAL_ATTR,
    comment_key,
    comment_to_item,
    item_to_comment,
    stats_key,
)
from storage.model import Comment, NewComment
from storage.retry import DEFAULT_BACKOFF, ENGINE_ERRORS, THROTTLING_CODES, Backoff, error_code
from storage.table import SORT_KEY, TableRef
from storage.types import Item

FIVE = COUNT_ATTRS[4]
# Losing an optimistic race means someone else committed; allow more of those than conflicts.
STALE_RETRY_FACTOR = 4


@dataclass(frozen=True, slots=True)
class CreateResult:
    comment: Comment
    # False when an earlier request with the same idempotency key already created it.
    created: bool


def comment_id_for(author: str, idempotency_key: str | None) -> str:
    """A fresh id, or one derived from (author, key) so that a retry lands on the same item."""
    if idempotency_key is None:
        return uuid.uuid4().hex
    digest = hashlib.sha256(f"{author}\x00{idempotency_key}".encode()).hexdigest()
    return digest[:32]


def utc_now() -> datetime:
    return datetime.now(UTC)


@dataclass(slots=True)
class _Knowledge:
    """What this writer believes about the stats items; refreshed after a cancellation."""

    five: int | None = None  # count_5 on S, when this write changes it
    s_newer: bool = False  # S.lastCommentedAt is already later than ours
    lang_newer: bool = False  # S#lang.lastCommentedAt likewise


async def create_comment(
    table: TableRef,
    new: NewComment,
    *,
    backoff: Backoff = DEFAULT_BACKOFF,
    clock: Callable[[], datetime] = utc_now,
) -> CreateResult:
    """Store a comment and count it exactly once, even when the request is retried.

    With an idempotency key, a repeat returns the comment the first request stored (even if
    the repeat's text differs) with ``created=False``.
    """
    comment = Comment(
        comment_id=comment_id_for(new.author, new.idempotency_key),
        product_id=new.product_id,
        language=new.language,
        rating=new.rating,
        title=new.title,
        body=new.body,
        author=new.author,
        created_at=new.created_at or keys.format_timestamp(clock()),
        author_name=new.author_name,
    )
    for _ in range(backoff.attempts):
        if await _commit(table, comment, _create_items, backoff):
            return CreateResult(comment, True)
        existing = await get_comment(table, comment.comment_id)
        if existing is not None:
            return CreateResult(existing, False)
        # Deleted between our attempt and the read: the id is free again, try once more.
    raise WriteConflict("the comment was created and deleted concurrently; retry later")


async def delete_comment(
    table: TableRef,
    comment_id: str,
    *,
    author: str | None = None,
    backoff: Backoff = DEFAULT_BACKOFF,
) -> Comment:
    """Delete a comment and uncount it; deleting an absent comment changes nothing.

    With ``author`` the delete only happens if the comment is that author's (``NotAuthor``).
    """
    keys.validate_comment_id(comment_id)
    comment = await get_comment(table, comment_id)
    if comment is None:
        raise CommentNotFound(f"comment {comment_id} does not exist")
    if author is not None and comment.author != author:
        raise NotAuthor("the comment belongs to another author")
    if not await _commit(table, comment, _delete_items, backoff):
        raise CommentNotFound(f"comment {comment_id} does not exist")
    return comment


async def _commit(
    table: TableRef,
    comment: Comment,
    build: Callable[[TableRef, Comment, _Knowledge], list[dict[str, Any]]],
    backoff: Backoff,
) -> bool:
    """Run the write's transaction until it commits (True) or its first item's condition,
    on the comment itself, fails (False).

    A cancellation by our own stats conditions means another write committed first; the
    cancellation carries the stats item as it now is (ALL_OLD), so we retry at once with
    fresh values, under a larger budget since the system as a whole progressed.
    Conflicts and throttling back off exponentially under ``backoff.attempts``.
    """
    if comment.rating != 5:
        return await _commit_loop(table, comment, build, backoff, _Knowledge())
    async with table.five_star_locks.hold(comment.product_id):
        know = _Knowledge()
        await _learn(table, comment, know)
        return await _commit_loop(table, comment, build, backoff, know)


async def _commit_loop(
    table: TableRef,
    comment: Comment,
    build: Callable[[TableRef, Comment, _Knowledge], list[dict[str, Any]]],
    backoff: Backoff,
    know: _Knowledge,
) -> bool:
    stale = conflicts = 0
    while True:
        reasons = await _transact(table, build(table, comment, know))
        if reasons is None:
            return True
        if reasons[0][0] == "ConditionalCheckFailed":
            return False
        lost_race = False
        for (code, item), language in zip(reasons[1:], (None, comment.language), strict=True):
            if code == "ConditionalCheckFailed":
                lost_race = True
                _absorb_stats(know, comment, language, item or {})
        if lost_race:
            stale += 1
            if stale >= STALE_RETRY_FACTOR * backoff.attempts:
                raise WriteConflict("the write kept losing to concurrent writes; retry later")
            if stale > 2:
                await backoff.sleep(min(stale - 2, 3))
        else:
            conflicts += 1
            if conflicts >= backoff.attempts:
                raise WriteConflict("storage kept rejecting the write; retry later")
            await backoff.sleep(conflicts)


async def get_comment(table: TableRef, comment_id: str) -> Comment | None:
    """The comment with this id, or None (strongly consistent)."""
    try:
        response = await table.client.get_item(
            TableName=table.name,
            Key=comment_key(comment_id),
            ConsistentRead=True,
        )
    except ENGINE_ERRORS as exc:
        raise StorageUnavailable("reading a comment failed") from exc
    item = response.get("Item")
    return None if not item else item_to_comment(item)


async def _learn(table: TableRef, comment: Comment, know: _Knowledge) -> None:
    """Read count_5 (and lastCommentedAt) of the S item before a 5-star write."""
    try:
        response = await table.client.get_item(
            TableName=table.name,
            Key=stats_key(comment.product_id, None),
            ConsistentRead=True,
            ProjectionExpression="#five, #last",
            ExpressionAttributeNames={"#five": FIVE, "#last": LAST_ATTR},
        )
    except ENGINE_ERRORS as exc:
        raise StorageUnavailable("reading counters failed") from exc
    _absorb_stats(know, comment, None, response.get("Item") or {})


def _absorb_stats(know: _Knowledge, comment: Comment, language: str | None, item: Item) -> None:
    """Update what we know from a stats item as read or as returned by a cancellation."""
    last = item.get(LAST_ATTR, {}).get("S")
    newer = last is not None and last > comment.created_at
    if language is None:
        know.five = int(item[FIVE]["N"]) if FIVE in item else 0
        know.s_newer = newer
    else:
        know.lang_newer = newer


def _counter_update(
    table: TableRef,
    comment: Comment,
    language: str | None,
    delta: int,
    know: _Knowledge,
) -> dict[str, Any]:
    """The Update of one stats item inside a create (delta 1) or delete (delta -1)."""
    names = {"#c": COUNT_ATTRS[comment.rating - 1], "#t": TOTAL_ATTR, "#pid": "productId"}
    values: dict[str, Any] = {":d": {"N": str(delta)}, ":pid": {"S": comment.product_id}}
    sets = ["#pid = :pid"]
    removes: list[str] = []
    conditions: list[str] = []
    if language is not None:
        names["#lang"] = "language"
        values[":lang"] = {"S": language}
        sets.append("#lang = :lang")
    newer = know.s_newer if language is None else know.lang_newer
    if delta > 0 and not newer:
        names["#last"] = LAST_ATTR
        values[":t"] = {"S": comment.created_at}
        sets.append("#last = :t")
        conditions.append("(attribute_not_exists(#last) OR #last <= :t)")
    if language is None and comment.rating == 5:
        if know.five is None:
            raise AssertionError("a 5-star write must know count_5 before it commits")
        after = know.five + delta
        names["#lk"], names["#lsk"] = LEADER_ATTR, SORT_KEY
        if know.five == 0:
            conditions.append("(attribute_not_exists(#c) OR #c = :old)")
        else:
            conditions.append("#c = :old")
        values[":old"] = {"N": str(know.five)}
        if after > 0:
            values[":leaders"] = {"S": keys.LEADERS}
            values[":pad"] = {"S": keys.leader_sort_key(after)}
            sets += ["#lk = :leaders", "#lsk = :pad"]
        else:
            removes += ["#lk", "#lsk"]
    expression = f"SET {', '.join(sets)} ADD #c :d, #t :d"
    if removes:
        expression += f" REMOVE {', '.join(removes)}"
    update: dict[str, Any] = {
        "TableName": table.name,
        "Key": stats_key(comment.product_id, language),
        "UpdateExpression": expression,
        "ExpressionAttributeNames": names,
        "ExpressionAttributeValues": values,
        # A lost race returns the item as it is now, so the retry needs no extra read.
        "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
    }
    if conditions:
        update["ConditionExpression"] = " AND ".join(conditions)
    return {"Update": update}


def _create_items(table: TableRef, comment: Comment, know: _Knowledge) -> list[dict[str, Any]]:
    put = {
        "Put": {
            "TableName": table.name,
            "Item": comment_to_item(comment),
            "ConditionExpression": "attribute_not_exists(PK)",
        }
    }
    return [
        put,
        _counter_update(table, comment, None, 1, know),
        _counter_update(table, comment, comment.language, 1, know),
    ]


def _delete_items(table: TableRef, comment: Comment, know: _Knowledge) -> list[dict[str, Any]]:
    delete = {
        "Delete": {
            "TableName": table.name,
            "Key": comment_key(comment.comment_id),
            "ConditionExpression": "attribute_exists(PK)",
        }
    }
    return [
        delete,
        _counter_update(table, comment, None, -1, know),
        _counter_update(table, comment, comment.language, -1, know),
    ]


Reason = tuple[str, Item | None]  # cancellation code and the item returned with it


async def _transact(table: TableRef, items: list[dict[str, Any]]) -> list[Reason] | None:
    """Run a transaction; None when it committed, else each item's cancellation reason."""
    try:
        await table.client.transact_write_items(TransactItems=items)
    except ClientError as exc:
        code = error_code(exc)
        if code == "TransactionCanceledException":
            raw = exc.response.get("CancellationReasons") or []
            reasons: list[Reason] = [(str(r.get("Code") or "None"), r.get("Item")) for r in raw]
            reasons += [("None", None)] * (len(items) - len(reasons))
            codes = {c for c, _ in reasons}
            if codes - {"None", "ConditionalCheckFailed", "TransactionConflict"} - THROTTLING_CODES:
                raise StorageUnavailable("the write was rejected by storage") from exc
            return reasons
        if code in THROTTLING_CODES or code == "TransactionInProgressException":
            return [("None", None)] * len(items)
        raise StorageUnavailable("the write failed") from exc
    except ENGINE_ERRORS as exc:
        raise StorageUnavailable("the write failed") from exc
    return None
