"""replyToComment and deleteReply: the merchant's answer."""

from __future__ import annotations

import strawberry

from resolvers.comments import replies
from resolvers.user_errors import Problems
from schema.comments.mutations import comment_id_of
from schema.comments.types import Comment
from schema.context import Info
from schema.user_errors import UserError
from storage.model.rules import REPLY_MAX


@strawberry.input(description="The merchant's reply to a published comment.")
class ReplyToCommentInput:
    id: strawberry.ID = strawberry.field(description="Comment.id or commentId.")
    body: str = strawberry.field(description=f"The reply: 1 to {REPLY_MAX:,} characters.")


@strawberry.type(description="The comment with its reply.")
class ReplyToCommentPayload:
    comment: Comment | None = strawberry.field(
        description="The comment with the reply; null when userErrors is not empty."
    )
    user_errors: list[UserError] = strawberry.field(
        description="Why nothing was stored; empty when the reply was."
    )


@strawberry.input(description="Which comment's reply to delete.")
class DeleteReplyInput:
    id: strawberry.ID = strawberry.field(description="Comment.id or commentId.")


@strawberry.type(description="The comment without its reply.")
class DeleteReplyPayload:
    comment: Comment | None = strawberry.field(
        description="The comment as it now is; null when userErrors is not empty."
    )
    user_errors: list[UserError] = strawberry.field(
        description="Why nothing was deleted (an unknown comment, no reply); empty when it was."
    )


async def reply_to_comment(info: Info, input: ReplyToCommentInput) -> ReplyToCommentPayload:
    try:
        replied = await replies.reply(info.context, comment_id_of(input.id), input.body)
    except Problems as refused:
        return ReplyToCommentPayload(comment=None, user_errors=UserError.all(refused))
    return ReplyToCommentPayload(comment=Comment.of(replied), user_errors=[])


async def delete_reply(info: Info, input: DeleteReplyInput) -> DeleteReplyPayload:
    try:
        done = await replies.remove_reply(info.context, comment_id_of(input.id))
    except Problems as refused:
        return DeleteReplyPayload(comment=None, user_errors=UserError.all(refused))
    return DeleteReplyPayload(comment=Comment.of(done), user_errors=[])
