"""Everything one author (a token's ``sub``) made, found by one strongly consistent scan,
and the export of it as a JSON document.

Why a scan: votes and reports are keyed under the comment they are about
(``VOTE#<digest of the voter>``, ``REPORT#<digest of the reporter>``), and idempotency
records under a digest of the author and their key, so no index finds them by author. A
per-author ledger written in every vote's transaction would halve what a vote transaction
carries (``storage.writes.ballots`` fills it with up to 99 votes), and one more index needs
a layout change of every table. Privacy requests are rare (a few a month) and an erasure
is a job, so they pay instead: one scan of the whole table (O(table) reads: about 1 read
unit per 4 KB of table, strongly consistent) in ``SEGMENTS`` parallel segments, filtered
on the server, so only the author's items cross the network (and every idempotency record
of the last 24 hours, matched to the author's comments here).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from storage.base.types import Item
from storage.engine.table import TableRef
from storage.model import keys
from storage.model.comments import Comment
from storage.model.facets import FacetKind
from storage.model.items import is_comment_item, item_to_comment

# Parallel segments of the scan (DynamoDB Local and AWS both serve them concurrently).
SEGMENTS = 4
PAGE_ITEMS = 1000

Progress = Callable[[int], None]


@dataclass(slots=True)
class Found:
    """The author's items, as the scan saw them."""

    comments: list[Item] = field(default_factory=list)
    votes: list[Item] = field(default_factory=list)
    reports: list[Item] = field(default_factory=list)
    # Idempotency records of the author's comments (their key holds the author's digest).
    records: list[Item] = field(default_factory=list)
    # The author's own partition: per-product slots, hourly counts, rates, the fence.
    own: list[Item] = field(default_factory=list)
    scanned: int = 0


async def find_author_data(
    table: TableRef, subject: str, *, progress: Progress | None = None
) -> Found:
    """Every item of ``subject``'s, strongly consistent as of each page's read."""
    if not subject:
        raise ValueError("an author subject is not empty")
    vote, report = keys.vote_sk(subject), keys.report_sk(subject)
    own_pk = keys.author_pk(subject)
    values = {
        ":s": {"S": subject},
        ":v": {"S": vote},
        ":r": {"S": report},
        ":o": {"S": own_pk},
        ":i": {"S": keys.IDEMPOTENCY_PREFIX},
    }
    base: dict[str, Any] = {
        "TableName": table.name,
        "ConsistentRead": True,
        "Limit": PAGE_ITEMS,
        "FilterExpression": "#a = :s OR #sk IN (:v, :r) OR #pk = :o OR begins_with(#pk, :i)",
        "ExpressionAttributeNames": {"#a": "author", "#sk": "SK", "#pk": "PK"},
        "ExpressionAttributeValues": values,
        "TotalSegments": SEGMENTS,
    }
    found = Found()
    records: list[Item] = []

    async def segment(n: int) -> None:
        params = {**base, "Segment": n}
        while True:
            response = await table.client.scan(**params)
            for item in response.get("Items", []):
                pk, sk = item["PK"]["S"], item["SK"]["S"]
                if pk == own_pk:
                    found.own.append(item)
                elif is_comment_item(item):
                    if item.get("author", {}).get("S") == subject:
                        found.comments.append(item)
                elif pk.startswith(keys.COMMENT_PREFIX) and sk == vote:
                    found.votes.append(item)
                elif pk.startswith(keys.COMMENT_PREFIX) and sk == report:
                    found.reports.append(item)
                elif pk.startswith(keys.IDEMPOTENCY_PREFIX):
                    records.append(item)
            found.scanned += response.get("ScannedCount", 0)
            if progress is not None:
                progress(found.scanned)
            if "LastEvaluatedKey" not in response:
                return
            params["ExclusiveStartKey"] = response["LastEvaluatedKey"]

    async with asyncio.TaskGroup() as tasks:
        for n in range(SEGMENTS):
            tasks.create_task(segment(n))
    mine = {item["commentId"]["S"] for item in found.comments}
    found.records = [r for r in records if r.get("commentId", {}).get("S") in mine]
    for kind in (found.comments, found.votes, found.reports, found.records, found.own):
        kind.sort(key=lambda i: (i["PK"]["S"], i["SK"]["S"]))
    return found


def commented_on(item: Item) -> str:
    """The id of the comment a vote or report item is filed under."""
    return str(item["PK"]["S"]).removeprefix(keys.COMMENT_PREFIX)


def _comment(c: Comment) -> dict[str, Any]:
    reply = c.reply
    return {
        "id": c.comment_id,
        "productId": c.product_id,
        "language": c.language,
        "rating": c.rating,
        "title": c.title,
        "body": c.body,
        "authorName": c.author_name,
        "status": c.status.value,
        "createdAt": c.created_at,
        "editedAt": c.edited_at,
        "verifiedPurchase": c.verified,
        "incentivized": c.incentivized,
        "answers": sorted(f.token for f in c.facets if f.kind is FacetKind.ATTRIBUTE),
        "helpfulVotes": c.helpful,
        "notHelpfulVotes": c.not_helpful,
        # The shop's answer to it: part of the comment as shown.
        "merchantReply": None
        if reply is None
        else {
            "body": reply.body,
            "author": reply.author,
            "createdAt": reply.created_at,
            "editedAt": reply.edited_at,
        },
    }


def export_document(subject: str, found: Found, exported_at: str) -> dict[str, Any]:
    """The export of ``found`` as a JSON-ready document (format version 1; see
    docs/privacy.md for every field)."""
    comments = sorted(
        (item_to_comment(i) for i in found.comments), key=lambda c: (c.created_at, c.comment_id)
    )
    return {
        "format": 1,
        "subject": subject,
        "exportedAt": exported_at,
        "comments": [_comment(c) for c in comments],
        "votes": [
            {
                "commentId": commented_on(v),
                "vote": v["vote"]["S"],
                "votedAt": v.get("votedAt", {}).get("S"),
            }
            for v in found.votes
        ],
        "reports": [
            {
                "commentId": commented_on(r),
                "reason": r.get("reason", {}).get("S"),
                "note": r.get("note", {}).get("S"),
                "createdAt": r.get("createdAt", {}).get("S"),
            }
            for r in found.reports
        ],
        # Replies are the shop's (role merchant) and record a display name, not the
        # subject who wrote them: none can be found by subject. Kept as a place in the
        # format for when replies record their writer.
        "replies": [],
        # When photos exist: the subject's photos, with their URLs.
        "photos": [],
    }
