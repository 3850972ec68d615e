"""Moderators decide; any signed-in viewer reports."""

from __future__ import annotations

from resolvers.comments.rates import take_turn
from resolvers.comments.visibility import may_see
from resolvers.comments.writes import viewer
from resolvers.context import Context
from resolvers.errors import Forbidden
from resolvers.user_errors import Checks, Problem, ProblemCode, Problems, not_found, refused
from storage.base.errors import CommentNotFound, NotPublished, OwnComment, RevisedSinceReview
from storage.model import rules
from storage.model.comments import REPORT_REASONS, Comment
from storage.model.rules import clean_note
from storage.writes.moderate import Decision, moderate_comment
from storage.writes.rates import Family
from storage.writes.reports import report_comment


async def moderate(
    ctx: Context, comment_id: str, decision: str, note: str | None, reviewed: str | None = None
) -> Comment:
    """Approve or reject a comment (moderators only: FORBIDDEN otherwise); with
    ``reviewed``, only if it is still the revision the moderator saw (CHANGED)."""
    who = viewer(ctx)
    if not who.is_moderator:
        raise Forbidden("only moderators may moderate comments")
    field = ("input",)
    checks = Checks()
    checks.check((*field, "id"), lambda: rules.validate_comment_id(comment_id))
    checks.check((*field, "note"), lambda: clean_note(note))
    checks.raise_any()
    await take_turn(ctx, who, Family.MODERATE)
    try:
        decided = await ctx.storage(
            moderate_comment(
                ctx.table,
                comment_id,
                Decision(decision),
                moderator=who.name or who.author_id,
                note=note,
                reviewed=reviewed,
            )
        )
    except CommentNotFound as exc:
        raise not_found(ctx.meter, (*field, "id")) from exc
    except RevisedSinceReview as exc:
        raise Problems(
            [
                Problem(
                    (*field, "revisedAt"),
                    "the author edited the comment after the revision you reviewed; review "
                    "it again",
                    ProblemCode.CHANGED,
                )
            ]
        ) from exc
    ctx.loaders.forget_writes(comment_id)
    return decided


async def report(ctx: Context, comment_id: str, reason: str, note: str | None) -> Comment | None:
    """Report a published comment of someone else's; the comment as the reporter may now
    see it (None once the reports have hidden it)."""
    who = viewer(ctx)
    field = ("input",)
    checks = Checks()
    checks.check((*field, "id"), lambda: rules.validate_comment_id(comment_id))
    checks.check((*field, "note"), lambda: clean_note(note))
    checks.raise_any()
    if reason not in REPORT_REASONS:  # the schema's enum admits no other value
        raise ValueError(f"unknown report reason {reason!r}")
    await take_turn(ctx, who, Family.REPORT)
    try:
        result = await ctx.storage(
            report_comment(
                ctx.table,
                comment_id,
                reporter=who.author_id,
                reason=reason,
                note=note,
                threshold=ctx.report_threshold,
            )
        )
    except CommentNotFound as exc:
        raise not_found(ctx.meter, (*field, "id")) from exc
    except NotPublished as exc:
        # Only moderators (and the author, refused first as OwnComment) may know an
        # unpublished comment exists.
        if not who.is_moderator:
            raise not_found(ctx.meter, (*field, "id")) from exc
        raise refused(exc, (*field, "id")) from exc
    except OwnComment as exc:
        raise refused(exc, (*field, "id")) from exc
    ctx.loaders.forget_writes(comment_id)
    return result.comment if may_see(who, result.comment) else None
