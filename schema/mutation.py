"""The Mutation root: writes need a bearer token. Each family's fields live with its domain
(``schema.comments.mutations``); the root only assembles them."""

from __future__ import annotations

import strawberry

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
