"""Helpful votes: any signed-in viewer but the author, on published comments."""

from __future__ import annotations

from resolvers.comments.rates import take_turn
from resolvers.comments.visibility import reader
from resolvers.comments.writes import viewer
from resolvers.context import Context
from resolvers.user_errors import Checks, not_found, refused
from storage.base.errors import CommentNotFound, NotPublished, OwnComment
from storage.model import rules
from storage.model.comments import Comment, Vote
from storage.writes.rates import Family
from storage.writes.votes import vote_helpful


async def vote(ctx: Context, comment_id: str, verdict: Vote | None) -> Comment:
    """Set the viewer's vote (None withdraws it); the comment with its counts."""
    who = viewer(ctx)
    field = ("input", "id")
    checks = Checks()
    checks.check(field, lambda: rules.validate_comment_id(comment_id))
    checks.raise_any()
    await take_turn(ctx, who, Family.VOTE)
    try:
        result = await ctx.storage(
            vote_helpful(
                ctx.table,
                comment_id,
                voter=who.author_id,
                vote=verdict,
                # The lane's transaction is shared with other voters: not this request's.
                shared=ctx.app_table,
            )
        )
    except CommentNotFound as exc:
        raise not_found(ctx.meter, field) from exc
    except OwnComment as exc:
        raise refused(exc, field) from exc
    except NotPublished as exc:
        # Only its author (refused first, as OwnComment) and moderators may know an
        # unpublished comment exists.
        if not who.is_moderator:
            raise not_found(ctx.meter, field) from exc
        raise refused(exc, field) from exc
    ctx.loaders.forget_writes(comment_id)
    ctx.loaders.votes.clear((who.author_id, comment_id))
    ctx.loaders.votes.prime((who.author_id, comment_id), verdict)
    return result.comment


async def viewer_vote(ctx: Context, comment_id: str) -> Vote | None:
    """The signed-in viewer's vote on the comment; None without one or without a viewer."""
    who = reader(ctx)
    if who is None:
        return None
    return await ctx.storage(ctx.loaders.votes.load((who.author_id, comment_id)))
