"""Creating and deleting comments on behalf of an authenticated viewer. A new comment is a
verified purchase when the viewer's token lists the product in its ``purchases`` claim; it
is published at once or waits for a moderator, as MODERATION says."""

from __future__ import annotations

from resolvers.auth import Viewer, authenticate
from resolvers.comments.rates import take_turn
from resolvers.context import Context
from resolvers.user_errors import Checks, answer_problems, not_found, refused
from storage.base.errors import (
    AuthorErasing,
    CommentNotFound,
    CommentsPerProductLimit,
    IdempotencyKeyReused,
    NotAuthor,
)
from storage.model import rules
from storage.model.comments import Comment, NewComment
from storage.model.problems import InvalidFields
from storage.model.rules import check_idempotency_key, clean_body, clean_title
from storage.writes import CreateResult
from storage.writes import create_comment as store_comment
from storage.writes import delete_comment as remove_comment
from storage.writes.children import has_children, remove_children
from storage.writes.rates import Family
from storage.writes.tagging import TaxonomyCache


def viewer(ctx: Context) -> Viewer:
    return authenticate(ctx.authorization, ctx.tokens)


def answers_of(attributes: list[tuple[str, str]] | None) -> list[object] | None:
    """Answers as storage checks them (None: none given)."""
    if attributes is None:
        return None
    return [{"key": key, "value": value} for key, value in attributes]


def taxonomies(ctx: Context) -> TaxonomyCache:
    """The process's copy of the shop's taxonomy (checked against the stored one's revision
    every few seconds, bounded in bytes)."""
    return ctx.table.memory(TaxonomyCache)


async def create_comment(
    ctx: Context,
    *,
    product_id: str,
    rating: int,
    language: str,
    title: str | None,
    body: str,
    idempotency_key: str | None,
    attributes: list[tuple[str, str]] | None = None,
    incentivized: bool | None = None,
) -> CreateResult:
    """Store a comment by the viewer. Every problem of the input is reported at once
    (``Problems``) and nothing is written unless there is none. Its answers are checked
    against the product's attribute definitions and its topics tagged with the shop's
    taxonomy; it is incentivized when the author says so or the token's incentivized
    claim names the product (the author cannot unset that)."""
    who = viewer(ctx)
    checks = Checks()
    field = ("input",)
    checks.check((*field, "productId"), lambda: rules.validate_product_id(product_id))
    checks.check((*field, "rating"), lambda: rules.validate_rating(rating))
    checks.check((*field, "language"), lambda: rules.validate_language(language))
    checks.check((*field, "title"), lambda: clean_title(title))
    checks.check((*field, "body"), lambda: clean_body(body))
    checks.check((*field, "idempotencyKey"), lambda: check_idempotency_key(idempotency_key))
    checks.raise_any()
    new = checks.check(
        None,
        lambda: NewComment(
            product_id=product_id,
            language=language,
            rating=rating,
            body=body,
            author_id=who.author_id,
            author_name=who.name,
            title=title,
            idempotency_key=idempotency_key,
            verified=who.bought(product_id),
            incentivized=bool(incentivized) or who.incentivized(product_id),
        ),
    )
    checks.raise_any()
    assert new is not None
    try:
        result = await ctx.storage(
            store_comment(
                ctx.table,
                new,
                write_limits=ctx.write_limits,
                moderation=ctx.moderation,
                answers=answers_of(attributes),
                taxonomy=taxonomies(ctx),
            )
        )
    except InvalidFields as exc:
        raise answer_problems(exc, (*field, "attributes")) from exc
    except IdempotencyKeyReused as exc:
        raise refused(exc, (*field, "idempotencyKey")) from exc
    except CommentsPerProductLimit as exc:
        raise refused(exc, None) from exc  # a rule of the product, no one field
    except AuthorErasing as exc:
        raise refused(exc, None) from exc
    ctx.loaders.forget_writes(result.comment.comment_id)
    return result


async def delete_comment(ctx: Context, comment_id: str) -> Comment:
    """Delete a comment of the viewer's (any comment for a moderator); a missing comment, an
    invalid id or another author's comment is a ``Problems``."""
    who = viewer(ctx)
    field = ("input", "id")
    checks = Checks()
    checks.check(field, lambda: rules.validate_comment_id(comment_id))
    checks.raise_any()
    author = None if who.is_moderator else who.author_id
    await take_turn(ctx, who, Family.MODERATE if who.is_moderator else Family.DELETE)
    try:
        deleted = await ctx.storage(
            remove_comment(ctx.table, comment_id, author_id=author, clean_up=False)
        )
    except CommentNotFound as exc:
        raise not_found(ctx.meter, field) from exc
    except NotAuthor as exc:
        raise refused(exc, None) from exc
    ctx.loaders.forget_writes(comment_id)
    if has_children(deleted):
        # Not within the request's deadline: the delete has committed, and the answer
        # must say so whatever the tidy-up takes.
        await ctx.after_commit(remove_children(ctx.table, comment_id), "removing reports and votes")
    return deleted
