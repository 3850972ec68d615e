"""Idempotency keys with real semantics.

A create with a key writes, in its own transaction, a record ``IDEMPOTENCY#<digest of
author and key>`` holding the comment id it made, when, and a fingerprint of the request
(product, rating, language, title, body, after normalisation; its answers and whether it
is incentivized), and what the request does
not say but its token and the server's settings decided (display name, status, whether
the purchase was verified). The record outlives the
comment: it is kept for ``RETENTION`` (DynamoDB TTL) whatever happens to the comment, so

- the same key with the same request returns the first result, even after the comment was
  deleted (a late retry never resurrects it);
- the same key with another request is refused and writes nothing.

TTL deletes lazily, so an expired record is treated as absent, by readers and by the
create's own condition.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, replace
from datetime import datetime, timedelta

from storage.base.errors import IdempotencyKeyReused
from storage.base.expressions import Attr, put_request
from storage.base.types import Item
from storage.engine.table import TableRef
from storage.model import keys
from storage.model.comments import Comment, NewComment, Status
from storage.model.facets import FacetKind
from storage.model.items import EXPIRES_ATTR, number
from storage.writes.transaction import Part

RETENTION = timedelta(hours=24)
PART = "idempotency"


def fingerprint(new: NewComment) -> str:
    """What makes two requests with one key the same request: its content, and its answers
    and incentivized mark when it has them (not its topics, which the taxonomy of the
    moment tags; a request without either has the fingerprint it had before they were)."""
    fields: list[object] = [new.product_id, new.rating, new.language, new.title, new.body]
    answers = sorted(f.token for f in new.facets if f.kind is FacetKind.ATTRIBUTE)
    if answers or new.incentivized:
        fields += [answers, new.incentivized]
    return hashlib.sha256(json.dumps(fields, ensure_ascii=False).encode()).hexdigest()


def record_part(table: TableRef, new: NewComment, comment: Comment, now: datetime) -> Part:
    """Put the key's record unless an unexpired one exists (ALL_OLD returns it then)."""
    if new.idempotency_key is None:
        raise ValueError("a record needs an idempotency key")
    pk = {"S": keys.idempotency_pk(new.author_id, new.idempotency_key)}
    item: Item = {
        "PK": pk,
        "SK": pk,
        "commentId": {"S": comment.comment_id},
        "createdAt": {"S": comment.created_at},
        "fingerprint": {"S": fingerprint(new)},
        "status": {"S": comment.status.value},
        "verified": {"BOOL": comment.verified},
        EXPIRES_ATTR: {"N": str(int((now + RETENTION).timestamp()))},
    }
    if comment.author_name is not None:
        item["authorName"] = {"S": comment.author_name}
    # An expired record that TTL has not deleted yet counts as absent.
    condition = Attr("PK").not_exists() | Attr(EXPIRES_ATTR).lt(int(now.timestamp()))
    put = put_request(table.name, item, condition, return_old=True)
    return Part(PART, {"Put": put})


@dataclass(frozen=True, slots=True)
class Replayed:
    comment: Comment


def replay(new: NewComment, record: Item, now: datetime) -> Replayed | None:
    """The first result of the key, rebuilt from its record and this request (identical in
    what the fingerprint covers); None when the record has expired meanwhile. Refuses a
    different request. What the fingerprint does not cover (the display name, the status
    the moderation mode gave, whether the purchase was verified) comes from the record:
    a retry may carry another token."""
    if number(record, EXPIRES_ATTR) < int(now.timestamp()):
        return None
    if record.get("fingerprint", {}).get("S") != fingerprint(new):
        raise IdempotencyKeyReused(
            "this idempotency key was used before for a different comment; "
            "use a new key for a new comment"
        )
    name = record.get("authorName")
    # The status the comment was made in (records from before statuses: published).
    status = Status(record.get("status", {}).get("S", Status.PUBLISHED.value))
    # Records from before verified purchases: no comment was verified then.
    verified = bool(record.get("verified", {}).get("BOOL", False))
    first = new.stored_as(
        record["commentId"]["S"],
        record["createdAt"]["S"],
        None if name is None else name["S"],
        status,
    )
    return Replayed(replace(first, verified=verified))
