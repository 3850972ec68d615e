"""The comment mutation family: create and delete, their inputs and payloads."""

from __future__ import annotations

import strawberry
from strawberry import relay

from resolvers.comments import writes
from resolvers.errors import BadUserInput
from resolvers.user_errors import Problems
from schema.comments.connection import edge_of
from schema.comments.types import Comment
from schema.context import Info
from schema.facets.types import AttributeInput
from schema.products.types import Product
from schema.relay import decode_global_id
from schema.user_errors import UserError
from storage.model.facets import MAX_ATTRIBUTE_ANSWERS
from storage.model.rules import BODY_MAX, TITLE_MAX


@strawberry.input(description="A new comment; the author is taken from the bearer token.")
class CreateCommentInput:
    product_id: strawberry.ID = strawberry.field(description="The product commented on.")
    rating: int = strawberry.field(description="1 to 5 stars.")
    language: str = strawberry.field(description="BCP 47 language tag, e.g. en or pt-BR.")
    title: str | None = strawberry.field(
        default=None, description=f"At most {TITLE_MAX} characters."
    )
    body: str = strawberry.field(description=f"The text: 1 to {BODY_MAX:,} characters.")
    idempotency_key: str | None = strawberry.field(
        default=None,
        description="Retrying with the same key returns the first comment instead of "
        "creating another.",
    )
    attributes: list[AttributeInput] | None = strawberry.field(
        default=None,
        description=f"Answers to the shop's attributes (Product.attributeDefinitions): at "
        f"most {MAX_ATTRIBUTE_ANSWERS}, one per attribute, each a value its definition "
        "allows; every problem is a userError naming its path.",
    )
    incentivized: bool | None = strawberry.field(
        default=None,
        description="true: the author received something for this review (a free product, a "
        "discount); shown on the comment and filterable. A sampling campaign's token sets it "
        "whatever is sent here. It cannot be changed later.",
    )


@strawberry.type(description="The comment created (or found again by its idempotency key).")
class CreateCommentPayload:
    comment: Comment | None = strawberry.field(
        description="The stored comment; null when userErrors is not empty."
    )
    comment_edge: relay.Edge[Comment] | None = strawberry.field(
        description="The comment as an edge of its product's connection, to prepend to a "
        "cached list; null when userErrors is not empty, and while the comment waits for a "
        "moderator (PENDING: it is in no listing yet)."
    )
    created: bool = strawberry.field(
        description="False when an earlier request with the same idempotency key created it: "
        "a replay of a write that succeeded, not a failure (comment is the one it created)."
    )
    user_errors: list[UserError] = strawberry.field(
        description="Every problem with the input; empty when the comment was stored."
    )


@strawberry.input(description="Which comment to delete.")
class DeleteCommentInput:
    id: strawberry.ID = strawberry.field(
        description="The comment's global id (Comment.id) or its commentId."
    )


@strawberry.type(description="The result of a delete.")
class DeleteCommentPayload:
    deleted_id: strawberry.ID | None = strawberry.field(
        description="Global id of the deleted comment; null when userErrors is not empty."
    )
    product: Product | None = strawberry.field(
        description="The product, with its updated counts; null when userErrors is not empty."
    )
    user_errors: list[UserError] = strawberry.field(
        description="Why nothing was deleted (an unknown comment, another author's); empty "
        "when it was."
    )


def comment_id_of(value: str) -> str:
    """A commentId, or the node id inside a Comment global id."""
    try:
        type_name, node_id = decode_global_id(value)
    except BadUserInput:
        return value  # not a global id: taken as a commentId (validated by storage)
    return node_id if type_name == "Comment" else value


async def create_comment(info: Info, input: CreateCommentInput) -> CreateCommentPayload:
    try:
        made = await writes.create_comment(
            info.context,
            product_id=input.product_id,
            rating=input.rating,
            language=input.language,
            title=input.title,
            body=input.body,
            idempotency_key=input.idempotency_key,
            attributes=None
            if input.attributes is None
            else [(a.key, a.value) for a in input.attributes],
            incentivized=input.incentivized,
        )
    except Problems as refused:
        return CreateCommentPayload(
            comment=None,
            comment_edge=None,
            created=False,
            user_errors=[UserError.of(p) for p in refused.problems],
        )
    edge = edge_of(made.comment)
    return CreateCommentPayload(
        comment=edge.node,
        comment_edge=edge if made.comment.published else None,
        created=made.created,
        user_errors=[],
    )


async def delete_comment(info: Info, input: DeleteCommentInput) -> DeleteCommentPayload:
    try:
        deleted = await writes.delete_comment(info.context, comment_id_of(input.id))
    except Problems as refused:
        return DeleteCommentPayload(
            deleted_id=None, product=None, user_errors=[UserError.of(p) for p in refused.problems]
        )
    return DeleteCommentPayload(
        deleted_id=strawberry.ID(str(relay.GlobalID("Comment", deleted.comment_id))),
        product=Product.of(deleted.product_id),
        user_errors=[],
    )
