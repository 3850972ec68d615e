"""What a change of the table means to webhooks: at most one event per stream record.

A pure translation, the same in every process (so every process that reads a change
derives the same event and the same id, ``storage.model.webhooks.event_id``):

- a comment change is classified for its product's listing (``storage.live.events``):
  entering it is ``comment.published``, leaving it (rejected, deleted, sent back to the
  queue, moved out by an edit) ``comment.removed``; staying in it with its merchant reply
  changed to a new one is ``comment.replied``, any other edit ``comment.updated``;
- the privacy erasure's job item (``ERASURE#<requestId>``) whose ``state`` becomes ``DONE``
  is ``author.erased``, in the shop-wide scope, with no subject (erased data is not
  repeated): the request id, the mode and the counts;
- everything else (votes, reports, counters) is no event.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from storage.base.types import Item
from storage.live.events import EventKind, Listing, classify, comment_change
from storage.live.stream import Change
from storage.model.comments import Comment
from storage.model.erasure import (
    COUNTS_ATTR,
    MODE_ATTR,
    REQUEST_ID_ATTR,
    STATE_ATTR,
    State,
    is_job_item,
)
from storage.model.keys import ERASURE_PREFIX
from storage.model.webhooks import (
    SHOP_SCOPE,
    Event,
    EventType,
    event_id,
)

_KINDS = {
    EventKind.PUBLISHED: EventType.COMMENT_PUBLISHED,
    EventKind.EDITED: EventType.COMMENT_UPDATED,
    EventKind.REMOVED: EventType.COMMENT_REMOVED,
}


def webhook_event(change: Change) -> Event | None:
    """The event a change makes (its sequence not yet numbered), or None."""
    erased = _erasure(change)
    if erased is not None:
        return erased
    comment = comment_change(change)
    if comment is None:
        return None
    kind = classify(comment, Listing(comment.product_id))
    if kind is None:
        return None
    what = _KINDS[kind]
    before, after = comment.before, comment.after
    if (
        kind is EventKind.EDITED
        and after is not None
        and after.reply is not None
        and (before is None or before.reply != after.reply)
    ):
        what = EventType.COMMENT_REPLIED
    subject = after if after is not None and kind is not EventKind.REMOVED else before
    assert subject is not None
    image = change.new if change.new is not None else change.old
    return Event(
        event_id=event_id(change.keys, change.sequence, what),
        type=what,
        scope=subject.product_id,
        timestamp=_when(change),
        data=_comment_data(subject, image, what),
    )


def _comment_data(c: Comment, image: Item | None, what: EventType) -> dict[str, Any]:
    version = image.get("version", {}).get("N") if image is not None else None
    data: dict[str, Any] = {
        "productId": c.product_id,
        "groupId": c.group_id,
        "commentId": c.comment_id,
        "rating": c.rating,
        "language": c.language,
        "version": int(version) if version is not None else None,
    }
    if what is EventType.COMMENT_REPLIED and c.reply is not None:
        data["replyAt"] = c.reply.edited_at or c.reply.created_at
    return data


def _erasure(change: Change) -> Event | None:
    image = change.new
    if image is None:
        return None
    if not is_job_item(image):
        return None
    pk = image["PK"]["S"]
    state = image.get(STATE_ATTR, {}).get("S")
    was = (change.old or {}).get(STATE_ATTR, {}).get("S")
    if state != State.DONE or was == State.DONE:
        return None
    counts = {
        name: int(value["N"])
        for name, value in image.get(COUNTS_ATTR, {}).get("M", {}).items()
        if "N" in value
    }
    return Event(
        event_id=event_id(change.keys, change.sequence, EventType.AUTHOR_ERASED),
        type=EventType.AUTHOR_ERASED,
        scope=SHOP_SCOPE,
        timestamp=_when(change),
        data={
            "requestId": image.get(REQUEST_ID_ATTR, {}).get("S", pk[len(ERASURE_PREFIX) :]),
            "mode": image.get(MODE_ATTR, {}).get("S"),
            "counts": counts,
        },
    )


def _when(change: Change) -> str:
    at = change.written_at if change.written_at is not None else 0.0
    return datetime.fromtimestamp(at, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
