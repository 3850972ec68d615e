"""Merchant replies: tokens with the merchant role answer published comments."""

from __future__ import annotations

from resolvers.comments.writes import viewer
from resolvers.context import Context
from resolvers.errors import Forbidden
from resolvers.problems import Checks, refused
from storage import keys
from storage.errors import CommentNotFound, NoReply, NotPublished
from storage.model import Comment, clean_reply
from storage.writes.reply import delete_reply, reply_to_comment


def _merchant(ctx: Context) -> tuple[str | None, bool]:
    who = viewer(ctx)
    if not who.is_merchant:
        raise Forbidden("only merchants may reply to comments")
    return who.name, who.is_moderator


async def reply(ctx: Context, comment_id: str, body: str) -> Comment:
    """Set or replace the merchant's reply."""
    name, moderator = _merchant(ctx)
    field = ("input",)
    checks = Checks()
    checks.check((*field, "id"), lambda: keys.validate_comment_id(comment_id))
    checks.check((*field, "body"), lambda: clean_reply(body))
    checks.raise_any()
    try:
        replied = await ctx.storage(
            reply_to_comment(ctx.table, comment_id, body, merchant_name=name)
        )
    except CommentNotFound as exc:
        raise refused(exc, (*field, "id")) from exc
    except NotPublished as exc:
        if not moderator:  # an unpublished comment does not exist for merchants
            raise refused(CommentNotFound("the comment does not exist"), (*field, "id")) from exc
        raise refused(exc, (*field, "id")) from exc
    ctx.loaders.forget_writes(comment_id)
    return replied


async def remove_reply(ctx: Context, comment_id: str) -> Comment:
    """Delete the merchant's reply (of a published comment, unless a moderator asks)."""
    _, moderator = _merchant(ctx)
    field = ("input", "id")
    checks = Checks()
    checks.check(field, lambda: keys.validate_comment_id(comment_id))
    checks.raise_any()
    try:
        done = await ctx.storage(delete_reply(ctx.table, comment_id, published_only=not moderator))
    except (CommentNotFound, NoReply) as exc:
        raise refused(exc, field) from exc
    except NotPublished as exc:
        raise refused(CommentNotFound("the comment does not exist"), field) from exc
    ctx.loaders.forget_writes(comment_id)
    return done
