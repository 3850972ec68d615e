"""The items kept under a comment (viewers' reports and helpful votes), and their removal
once the comment is deleted: they are never read without it."""

from __future__ import annotations

from typing import Any

from storage.base.expressions import Attr, query_request
from storage.engine.batch import BATCH_WRITE_MAX, batch_write
from storage.engine.retry import DEFAULT_BACKOFF, Backoff
from storage.engine.table import TableRef
from storage.model import keys
from storage.model.comments import Comment


def has_children(c: Comment) -> bool:
    """Whether report or vote items of the comment may exist.

    A report raises its round's count in the transaction that writes it, and only a
    decision opens a new round; a vote item exists exactly while it is counted. So a
    comment in round 0 with no report and no vote counted has none (a delete commits on
    the comment as read, so none came in after the read)."""
    m = c.moderation
    return m.round > 0 or m.report_count > 0 or c.helpful > 0 or c.not_helpful > 0


async def remove_children(
    table: TableRef, comment_id: str, *, backoff: Backoff = DEFAULT_BACKOFF
) -> None:
    """Delete every item kept under a deleted comment."""
    pk = keys.comment_pk(comment_id)
    params: dict[str, Any] = query_request(
        table.name,
        index=None,
        key=Attr("PK").eq(pk),
        forward=True,
        limit=100,
        projection=["PK", "SK"],
    )
    # Strongly consistent: an item committed just before the delete is found too.
    params["ConsistentRead"] = True
    while True:
        response = await table.client.query(**params)
        found = [
            {"PK": i["PK"], "SK": i["SK"]} for i in response.get("Items", []) if i["SK"]["S"] != pk
        ]
        for start in range(0, len(found), BATCH_WRITE_MAX):
            deletes = [
                {"DeleteRequest": {"Key": k}} for k in found[start : start + BATCH_WRITE_MAX]
            ]
            await batch_write(table, deletes, backoff)
        if "LastEvaluatedKey" not in response:
            return
        params["ExclusiveStartKey"] = response["LastEvaluatedKey"]
