"""voteHelpful: a viewer's verdict on a comment."""

from __future__ import annotations

import strawberry

from resolvers.comments import votes
from resolvers.user_errors import Problems
from schema.comments.lifecycle import HelpfulVote
from schema.comments.mutations import comment_id_of
from schema.comments.types import Comment
from schema.context import Info
from schema.user_errors import UserError


@strawberry.input(description="A viewer's helpful vote on a comment.")
class VoteHelpfulInput:
    id: strawberry.ID = strawberry.field(description="Comment.id or commentId.")
    vote: HelpfulVote | None = strawberry.field(description="null withdraws the viewer's vote")


@strawberry.type(description="The comment with its counts after the vote.")
class VoteHelpfulPayload:
    comment: Comment | None = strawberry.field(
        description="The comment with its helpful counts and the viewer's vote; null when "
        "userErrors is not empty."
    )
    user_errors: list[UserError] = strawberry.field(
        description="Why the vote was refused (an unknown or unpublished comment, the "
        "viewer's own); empty when it was stored or already was the viewer's vote."
    )


async def vote_helpful(info: Info, input: VoteHelpfulInput) -> VoteHelpfulPayload:
    verdict = None if input.vote is None else input.vote.stored()
    try:
        voted = await votes.vote(info.context, comment_id_of(input.id), verdict)
    except Problems as refused:
        return VoteHelpfulPayload(comment=None, user_errors=UserError.all(refused))
    return VoteHelpfulPayload(comment=Comment.of(voted), user_errors=[])
