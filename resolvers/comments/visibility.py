"""Who may see a comment: a PUBLISHED one, everyone; a PENDING or REJECTED one, its author
and moderators only. To everyone else such a comment does not exist: reads return null and
writes answer as they would for an unknown id, so nothing hints that it is there."""

from __future__ import annotations

from resolvers.auth import Viewer
from resolvers.context import Context
from resolvers.errors import Unauthenticated
from storage.model.comments import Comment


def may_see(viewer: Viewer | None, comment: Comment) -> bool:
    if comment.published:
        return True
    return viewer is not None and (viewer.is_moderator or viewer.author_id == comment.author_id)


def reader(ctx: Context) -> Viewer | None:
    """The viewer for deciding what a read shows: a missing or invalid token reads as
    anonymous (an error here would tell a caller with a bad token that an unpublished
    comment exists behind an id, where an unknown id gives null)."""
    try:
        return ctx.viewer()
    except Unauthenticated:
        return None


def visible(ctx: Context, comment: Comment | None) -> Comment | None:
    """The comment, read by id, if the request's viewer may see it, else None; then its
    read leaves the figures the viewer is shown (EXPLAIN), as an unknown id's would."""
    if comment is None:
        return None
    # A published comment is everyone's: the answer does not depend on who asks (and so
    # may be kept by their browser, see server.http.app), and the viewer is not read for it.
    if comment.published:
        return comment
    if not may_see(reader(ctx), comment):
        ctx.hide_read(comment.comment_id)
        return None
    return comment
