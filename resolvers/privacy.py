"""Privacy requests, for moderators: the export of everything an author made, and the
erasure of it (``storage.ops.erasure``).

Both work on the application's own table, bounded by time rather than by the request's
budget of storage calls: finding an author's votes and reports is a scan of the table
(``storage.reads.author_data`` says why). An export that does not finish within
``EXPORT_SECONDS`` fails with STORAGE_UNAVAILABLE (the command line's `comments
export-author` has no such bound); an erasure runs for at most ``ERASE_SECONDS`` and
answers RUNNING when it is not done: calling again for the same subject (or `comments
erase-author --resume`) goes on from where it stopped.
"""

from __future__ import annotations

import asyncio
import json
import logging

from resolvers.auth import Viewer
from resolvers.comments.rates import take_turn
from resolvers.context import Context
from resolvers.errors import Forbidden, Unauthenticated, Unavailable
from resolvers.user_errors import Checks
from storage.base.clock import utc_now
from storage.base.errors import InvalidInput, StorageError
from storage.engine.table import TableRef
from storage.model import keys
from storage.model.erasure import Job, Mode
from storage.ops.erasure import read_job, run_erasure, start_erasure
from storage.reads.author_data import export_document, find_author_data
from storage.writes.rates import Family

log = logging.getLogger(__name__)

EXPORT_SECONDS = 20.0
ERASE_SECONDS = 10.0
# The longest subject taken (a token's ``sub`` is an id or an e-mail address).
SUBJECT_MAX = 512


def _moderator(ctx: Context, what: str) -> Viewer:
    # Through the context: the answer depends on who asks, so no cache may keep it.
    who = ctx.viewer()
    if who is None:
        raise Unauthenticated(f"a moderator's Authorization: Bearer <token> is needed to {what}")
    if not who.is_moderator:
        raise Forbidden(f"only moderators may {what}")
    return who


def _app_table(ctx: Context) -> TableRef:
    return ctx.app_table if ctx.app_table is not None else ctx.table


def check_subject(subject: str) -> str:
    """A subject as tokens carry it: not empty, at most ``SUBJECT_MAX`` characters."""
    if not subject or len(subject) > SUBJECT_MAX or not subject.isprintable():
        raise InvalidInput(f"a subject is 1 to {SUBJECT_MAX} printable characters")
    return subject


async def export_author(ctx: Context, subject: str) -> str:
    """Everything ``subject`` made, as a JSON document (moderators only)."""
    who = _moderator(ctx, "export an author's data")
    check_subject(subject)
    ctx.start_table_scan("exportAuthor")
    # A scan of the whole table: counted against the moderator's turns, as an erasure is.
    await take_turn(ctx, who, Family.MODERATE)
    try:
        found = await asyncio.wait_for(find_author_data(_app_table(ctx), subject), EXPORT_SECONDS)
    except TimeoutError as exc:
        raise Unavailable(
            "the export did not finish in time; use `comments export-author`"
        ) from exc
    document = export_document(subject, found, keys.format_timestamp(utc_now()))
    return json.dumps(document, ensure_ascii=False, indent=2)


async def erase_author(ctx: Context, subject: str, mode: Mode | None) -> Job:
    """Start (or go on with) the erasure of ``subject`` and run it for at most
    ``ERASE_SECONDS``; the job as it then is. An erasure of the subject already running is
    continued, in its own mode."""
    who = _moderator(ctx, "erase an author's data")
    checks = Checks()
    checks.check(("input", "subject"), lambda: check_subject(subject))
    checks.raise_any()
    await take_turn(ctx, who, Family.MODERATE)
    table = _app_table(ctx)
    job = await ctx.storage(start_erasure(table, subject, mode or ctx.erasure_mode))
    try:
        return await asyncio.wait_for(run_erasure(table, job.request_id), ERASE_SECONDS)
    except (TimeoutError, StorageError) as exc:
        # Each step commits whole or not at all: the job goes on with the next run.
        if not isinstance(exc, TimeoutError):
            log.warning(
                "erasure %s stopped (%s); request %s",
                job.request_id,
                type(exc).__name__,
                ctx.request_id,
            )
        return await ctx.storage(read_job(table, job.request_id)) or job


async def erasure(ctx: Context, request_id: str) -> Job | None:
    """The erasure job of ``request_id`` (moderators only); None when there is none."""
    _moderator(ctx, "read erasures")
    try:
        keys.erasure_pk(request_id)
    except ValueError:
        return None
    return await ctx.storage(read_job(ctx.table, request_id))
