"""updateComment: the author changes text, rating, language or answers."""

from __future__ import annotations

import strawberry

from resolvers.comments import edits
from resolvers.user_errors import Problems
from schema.comments.mutations import comment_id_of
from schema.comments.types import Comment
from schema.context import Info
from schema.facets.types import AttributeInput
from schema.user_errors import UserError
from storage.model.facets import MAX_ATTRIBUTE_ANSWERS
from storage.model.rules import BODY_MAX, TITLE_MAX


@strawberry.input(description="What the author changes; omitted fields stay as they are.")
class UpdateCommentInput:
    id: strawberry.ID = strawberry.field(
        description="Comment.id or commentId of a comment of the viewer's."
    )
    rating: int | None = strawberry.field(default=None, description="1 to 5 stars.")
    language: str | None = strawberry.field(default=None, description="BCP 47 language tag.")
    title: str | None = strawberry.field(
        default=strawberry.UNSET,
        description=f"At most {TITLE_MAX} characters; null (or a blank title) removes the "
        "title; left out, the title stays.",
    )
    body: str | None = strawberry.field(
        default=None, description=f"The text: 1 to {BODY_MAX:,} characters."
    )
    attributes: list[AttributeInput] | None = strawberry.field(
        default=None,
        description="Replaces every answer; [] clears them; null or absent leaves them as "
        f"they are. At most {MAX_ATTRIBUTE_ANSWERS}, one per attribute, each a value the "
        "product's attribute definitions allow (a retired value may be kept, not given anew).",
    )


@strawberry.type(description="The comment as edited.")
class UpdateCommentPayload:
    comment: Comment | None = strawberry.field(
        description="The comment as it now is (PENDING again under pre-moderation); null "
        "when userErrors is not empty."
    )
    user_errors: list[UserError] = strawberry.field(
        description="Every problem with the input; empty when the edit was stored."
    )


async def update_comment(info: Info, input: UpdateCommentInput) -> UpdateCommentPayload:
    title = None if input.title is strawberry.UNSET else input.title
    try:
        edited = await edits.update_comment(
            info.context,
            comment_id_of(input.id),
            rating=input.rating,
            language=input.language,
            title=title,
            remove_title=input.title is None,
            body=input.body,
            attributes=None
            if input.attributes is None
            else [(a.key, a.value) for a in input.attributes],
        )
    except Problems as refused:
        return UpdateCommentPayload(comment=None, user_errors=UserError.all(refused))
    return UpdateCommentPayload(comment=Comment.of(edited), user_errors=[])
