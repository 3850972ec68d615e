"""Creating and deleting comments on behalf of an authenticated viewer."""

from __future__ import annotations

from resolvers.auth import Viewer, authenticate
from resolvers.context import Context
from storage import keys
from storage.model import Comment, NewComment
from storage.writes import CreateResult
from storage.writes import create_comment as store_comment
from storage.writes import delete_comment as remove_comment


def viewer(ctx: Context) -> Viewer:
    return authenticate(ctx.authorization, ctx.tokens)


async def create_comment(
    ctx: Context,
    *,
    product_id: str,
    rating: int,
    language: str,
    title: str | None,
    body: str,
    idempotency_key: str | None,
) -> CreateResult:
    """Store a comment by the viewer; the input is validated before anything is written."""
    who = viewer(ctx)
    new = NewComment(
        product_id=product_id,
        language=language,
        rating=rating,
        body=body,
        author_id=who.author_id,
        author_name=who.name,
        title=title,
        idempotency_key=idempotency_key,
    )
    result = await ctx.storage(store_comment(ctx.table, new, write_limits=ctx.write_limits))
    ctx.loaders.forget_writes(result.comment.comment_id)
    return result


async def delete_comment(ctx: Context, comment_id: str) -> Comment:
    """Delete a comment of the viewer's (any comment for a moderator)."""
    who = viewer(ctx)
    keys.validate_comment_id(comment_id)
    author = None if who.is_moderator else who.author_id
    deleted = await ctx.storage(remove_comment(ctx.table, comment_id, author_id=author))
    ctx.loaders.forget_writes(comment_id)
    return deleted
