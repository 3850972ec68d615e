"""moderateComment and reportComment."""

from __future__ import annotations

import strawberry

from resolvers.comments import moderation
from resolvers.user_errors import Problems
from schema.comments.lifecycle import ModerationDecision, ReportReason
from schema.comments.mutations import comment_id_of
from schema.comments.types import Comment
from schema.context import Info
from schema.scalars import DateTime
from schema.user_errors import UserError
from storage.model.rules import NOTE_MAX


@strawberry.input(description="A moderator's decision on a comment.")
class ModerateCommentInput:
    id: strawberry.ID = strawberry.field(description="Comment.id or commentId.")
    decision: ModerationDecision = strawberry.field(
        description="APPROVE publishes it (and dismisses its reports); REJECT unpublishes it."
    )
    note: str | None = strawberry.field(
        default=None,
        description=f"Shown to the author when a comment is rejected; at most {NOTE_MAX:,} "
        "characters.",
    )
    revised_at: DateTime | None = strawberry.field(
        default=None,
        description="The comment's revisedAt as you reviewed it: if the author has edited it "
        "since, nothing is decided and userErrors says CHANGED. Leave it out to decide on "
        "whatever the comment now says.",
    )


@strawberry.type(description="The comment as decided.")
class ModerateCommentPayload:
    comment: Comment | None = strawberry.field(
        description="The comment with its new status; null when userErrors is not empty."
    )
    user_errors: list[UserError] = strawberry.field(
        description="Why nothing was decided; empty when the decision was stored."
    )


@strawberry.input(description="A viewer's report of a comment.")
class ReportCommentInput:
    id: strawberry.ID = strawberry.field(description="Comment.id or commentId.")
    reason: ReportReason = strawberry.field(description="Why it should not be shown.")
    note: str | None = strawberry.field(
        default=None, description=f"Details for moderators; at most {NOTE_MAX:,} characters."
    )


@strawberry.type(description="The result of a report.")
class ReportCommentPayload:
    comment: Comment | None = strawberry.field(
        description="The comment as the reporter may now see it: null once reports have hidden it."
    )
    user_errors: list[UserError] = strawberry.field(
        description="Why the report was refused (an unknown comment, the viewer's own); "
        "empty when it was taken, or was a repeat (which changes nothing)."
    )


async def moderate_comment(info: Info, input: ModerateCommentInput) -> ModerateCommentPayload:
    try:
        decided = await moderation.moderate(
            info.context,
            comment_id_of(input.id),
            input.decision.name,
            input.note,
            input.revised_at,
        )
    except Problems as refused:
        return ModerateCommentPayload(comment=None, user_errors=UserError.all(refused))
    return ModerateCommentPayload(comment=Comment.of(decided), user_errors=[])


async def report_comment(info: Info, input: ReportCommentInput) -> ReportCommentPayload:
    try:
        seen = await moderation.report(
            info.context, comment_id_of(input.id), input.reason.value, input.note
        )
    except Problems as refused:
        return ReportCommentPayload(comment=None, user_errors=UserError.all(refused))
    return ReportCommentPayload(comment=None if seen is None else Comment.of(seen), user_errors=[])
