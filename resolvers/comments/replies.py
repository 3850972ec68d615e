"""Merchant replies: tokens with the merchant role answer published comments."""

from __future__ import annotations

from resolvers.auth import Viewer
from resolvers.comments.rates import take_turn
from resolvers.comments.writes import viewer
from resolvers.context import Context
from resolvers.errors import Forbidden
from resolvers.user_errors import Checks, not_found, refused
from storage.base.errors import CommentNotFound, NoReply, NotPublished
from storage.model import rules
from storage.model.comments import Comment
from storage.model.rules import clean_reply
from storage.writes.rates import Family
from storage.writes.reply import delete_reply, reply_to_comment


def _merchant(ctx: Context) -> Viewer:
    who = viewer(ctx)
    if not who.is_merchant:
        raise Forbidden("only merchants may reply to comments")
    return who


async def reply(ctx: Context, comment_id: str, body: str) -> Comment:
    """Set or replace the merchant's reply."""
    who = _merchant(ctx)
    name, moderator = who.name, who.is_moderator
    field = ("input",)
    checks = Checks()
    checks.check((*field, "id"), lambda: rules.validate_comment_id(comment_id))
    checks.check((*field, "body"), lambda: clean_reply(body))
    checks.raise_any()
    await take_turn(ctx, who, Family.REPLY)
    try:
        replied = await ctx.storage(
            reply_to_comment(ctx.table, comment_id, body, merchant_name=name)
        )
    except CommentNotFound as exc:
        raise not_found(ctx.meter, (*field, "id")) from exc
    except NotPublished as exc:
        if not moderator:  # an unpublished comment does not exist for merchants
            raise not_found(ctx.meter, (*field, "id")) from exc
        raise refused(exc, (*field, "id")) from exc
    ctx.loaders.forget_writes(comment_id)
    return replied


async def remove_reply(ctx: Context, comment_id: str) -> Comment:
    """Delete the merchant's reply (of a published comment, unless a moderator asks)."""
    who = _merchant(ctx)
    moderator = who.is_moderator
    field = ("input", "id")
    checks = Checks()
    checks.check(field, lambda: rules.validate_comment_id(comment_id))
    checks.raise_any()
    await take_turn(ctx, who, Family.REPLY)
    try:
        done = await ctx.storage(delete_reply(ctx.table, comment_id, published_only=not moderator))
    except CommentNotFound as exc:
        raise not_found(ctx.meter, field) from exc
    except NoReply as exc:
        raise refused(exc, field) from exc
    except NotPublished as exc:
        raise not_found(ctx.meter, field) from exc
    ctx.loaders.forget_writes(comment_id)
    return done
