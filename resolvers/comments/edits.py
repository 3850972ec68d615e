"""The author edits their comment: text, rating, language, answers."""

from __future__ import annotations

from resolvers.comments.rates import take_turn
from resolvers.comments.writes import answers_of, taxonomies, viewer
from resolvers.context import Context
from resolvers.user_errors import Checks, answer_problems, not_found, refused
from storage.base.errors import CommentNotFound, NotAuthor
from storage.model import rules
from storage.model.comments import Comment
from storage.model.problems import InvalidFields
from storage.model.rules import clean_body, clean_title
from storage.writes.edit import Edit, edit_comment
from storage.writes.rates import Family


async def update_comment(
    ctx: Context,
    comment_id: str,
    *,
    rating: int | None,
    language: str | None,
    title: str | None,
    remove_title: bool,
    body: str | None,
    attributes: list[tuple[str, str]] | None = None,
) -> Comment:
    """Apply the viewer's edit to their comment; every problem of the input at once
    (``Problems``), nothing written unless there is none."""
    who = viewer(ctx)
    field = ("input",)
    checks = Checks()
    checks.check((*field, "id"), lambda: rules.validate_comment_id(comment_id))
    if rating is not None:
        checks.check((*field, "rating"), lambda: rules.validate_rating(rating))
    if language is not None:
        checks.check((*field, "language"), lambda: rules.validate_language(language))
    if title is not None:
        checks.check((*field, "title"), lambda: clean_title(title))
    if body is not None:
        checks.check((*field, "body"), lambda: clean_body(body))
    checks.raise_any()
    edit = Edit(
        rating=rating,
        language=language,
        title=title,
        body=body,
        remove_title=remove_title,
        attributes=answers_of(attributes),
    )
    await take_turn(ctx, who, Family.EDIT)
    try:
        edited = await ctx.storage(
            edit_comment(
                ctx.table,
                comment_id,
                edit,
                author_id=who.author_id,
                moderation=ctx.moderation,
                taxonomy=taxonomies(ctx),
            )
        )
    except InvalidFields as exc:
        raise answer_problems(exc, (*field, "attributes")) from exc
    except CommentNotFound as exc:
        raise not_found(ctx.meter, (*field, "id")) from exc
    except NotAuthor as exc:
        raise refused(exc, None) from exc
    ctx.loaders.forget_writes(comment_id)
    return edited
