"""The Mutation root: writes need a bearer token. Each family's fields live with its domain
(``schema.comments.mutations``); the root only assembles them."""

from __future__ import annotations

import strawberry

from schema.comments import edits, moderation, replies, votes
from schema.comments import mutations as comments


@strawberry.type(description="Writes; each needs an Authorization: Bearer <JWT> header.")
class Mutation:
    create_comment: comments.CreateCommentPayload = strawberry.mutation(
        resolver=comments.create_comment,
        description="Requires a bearer token; the author is taken from it.",
    )
    delete_comment: comments.DeleteCommentPayload = strawberry.mutation(
        resolver=comments.delete_comment,
        description="Requires a bearer token of the comment's author or of a moderator.",
    )
    update_comment: edits.UpdateCommentPayload = strawberry.mutation(
        resolver=edits.update_comment,
        description="The author changes text, rating or language; counters and the "
        "leaderboard move in the same transaction.",
    )
    moderate_comment: moderation.ModerateCommentPayload = strawberry.mutation(
        resolver=moderation.moderate_comment, description="Moderators only."
    )
    report_comment: moderation.ReportCommentPayload = strawberry.mutation(
        resolver=moderation.report_comment,
        description="Any signed-in viewer, once per comment; a repeat changes nothing.",
    )
    reply_to_comment: replies.ReplyToCommentPayload = strawberry.mutation(
        resolver=replies.reply_to_comment,
        description="Tokens with the merchant role; one reply per comment, replacing the "
        "previous one.",
    )
    delete_reply: replies.DeleteReplyPayload = strawberry.mutation(
        resolver=replies.delete_reply,
        description="Tokens with the merchant role: removes the comment's reply.",
    )
    vote_helpful: votes.VoteHelpfulPayload = strawberry.mutation(
        resolver=votes.vote_helpful,
        description="Any signed-in viewer except the comment's author; one vote per viewer "
        "and comment, changeable.",
    )
