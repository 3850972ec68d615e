"""Merchant replies: one per comment, kept on the comment item, replaced or deleted. A reply
moves no counter, but it is still written under the condition that the comment is as read,
so a reply never lands on a comment that was deleted or unpublished meanwhile."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from datetime import datetime

from storage.base.clock import utc_now
from storage.base.errors import NoReply, NotPublished
from storage.engine.retry import DEFAULT_BACKOFF, Backoff
from storage.engine.table import TableRef
from storage.model import keys
from storage.model.comments import Comment, Reply
from storage.model.rules import clean_author_name, clean_reply
from storage.writes.state import Stored
from storage.writes.transition import Change, apply

MERCHANT = "Merchant"


async def reply_to_comment(
    table: TableRef,
    comment_id: str,
    body: str,
    *,
    merchant_name: str | None,
    backoff: Backoff = DEFAULT_BACKOFF,
    clock: Callable[[], datetime] = utc_now,
) -> Comment:
    """Set (or replace) the merchant's reply of a published comment; ``NotPublished``
    otherwise. A replacement keeps the first reply's time and sets ``edited_at``."""
    body = clean_reply(body)
    author = clean_author_name(merchant_name) or MERCHANT
    now = keys.format_timestamp(clock())

    def decide(stored: Stored) -> Change:
        c = stored.comment
        if not c.published:
            raise NotPublished("only published comments can be answered")
        if c.reply is None:
            reply = Reply(body=body, author=author, created_at=now)
        elif c.reply.body == body and c.reply.author == author:
            return Change(c)  # the same reply again: nothing to write
        else:
            reply = replace(c.reply, body=body, author=author, edited_at=now)
        return Change(replace(c, reply=reply))

    applied = await apply(table, comment_id, decide, backoff=backoff)
    assert applied.after is not None
    return applied.after


async def delete_reply(
    table: TableRef,
    comment_id: str,
    *,
    published_only: bool = False,
    backoff: Backoff = DEFAULT_BACKOFF,
) -> Comment:
    """Remove the merchant's reply; ``NoReply`` when there is none, ``NotPublished`` for an
    unpublished comment when ``published_only``."""

    def decide(stored: Stored) -> Change:
        if published_only and not stored.comment.published:
            raise NotPublished("the comment is not published")
        if stored.comment.reply is None:
            raise NoReply("the comment has no reply")
        return Change(replace(stored.comment, reply=None))

    applied = await apply(table, comment_id, decide, backoff=backoff)
    assert applied.after is not None
    return applied.after
