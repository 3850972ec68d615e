"""Reports: one per viewer and comment in each round (a round ends with a moderator's
decision). The report's own item, keyed under the comment, conditions on no report of this
viewer in this round, and commits with the comment's report count; the report that reaches
the threshold returns the published comment to PENDING (uncounted, queued) in the same
transaction."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import datetime, timedelta

from storage.base.clock import utc_now
from storage.base.errors import (
    AlreadyReported,
    CommentNotFound,
    InvalidInput,
    NotPublished,
    OwnComment,
)
from storage.base.expressions import Attr, put_request
from storage.base.types import Item
from storage.engine.retry import DEFAULT_BACKOFF, Backoff
from storage.engine.table import TableRef
from storage.model import keys
from storage.model.comments import REPORT_REASONS, Comment, Status
from storage.model.items import EXPIRES_ATTR
from storage.model.rules import clean_note
from storage.writes.state import Stored, read_stored
from storage.writes.transaction import Part
from storage.writes.transition import Change, apply

PART = "report"
DEFAULT_THRESHOLD = 3
_ROUND = "round"
# Reports are removed with their comment, and expire on their own after this long (also
# when that removal did not run to its end): a viewer may then report the comment again.
RETENTION = timedelta(days=400)


@dataclass(frozen=True, slots=True)
class ReportResult:
    comment: Comment  # as it now is
    counted: bool  # False: this viewer had reported it in this round already


def reported(c: Comment, reason: str, threshold: int, now: str) -> Comment:
    """The comment with one more distinct report; PENDING once they reach the threshold."""
    m = c.moderation
    reasons = tuple(r for r in REPORT_REASONS if r in {*m.reasons, reason})
    after = replace(c, moderation=replace(m, report_count=m.report_count + 1, reasons=reasons))
    if after.moderation.report_count >= threshold:
        after = replace(after, status=Status.PENDING, submitted_at=now)
    return after


async def report_comment(
    table: TableRef,
    comment_id: str,
    *,
    reporter: str,
    reason: str,
    note: str | None = None,
    threshold: int = DEFAULT_THRESHOLD,
    backoff: Backoff = DEFAULT_BACKOFF,
    clock: Callable[[], datetime] = utc_now,
) -> ReportResult:
    """Report a published comment of someone else's. ``NotPublished``, ``OwnComment`` and
    ``CommentNotFound`` refuse; a repeat in the same round changes nothing."""
    if reason not in REPORT_REASONS:
        raise InvalidInput(f"reason must be one of {', '.join(REPORT_REASONS)}")
    if isinstance(threshold, bool) or threshold < 1:
        raise ValueError("the report threshold must be a positive integer")
    note = clean_note(note)
    moment = clock()
    now = keys.format_timestamp(moment)

    def decide(stored: Stored) -> Change:
        c = stored.comment
        if c.author_id == reporter:
            raise OwnComment("authors cannot report their own comment")
        if not c.published:
            raise NotPublished("only published comments can be reported")
        record: Item = {
            "PK": {"S": keys.comment_pk(c.comment_id)},
            "SK": {"S": keys.report_sk(reporter)},
            _ROUND: {"N": str(c.moderation.round)},
            "reason": {"S": reason},
            "createdAt": {"S": now},
            EXPIRES_ATTR: {"N": str(int((moment + RETENTION).timestamp()))},
        }
        if note is not None:
            record["note"] = {"S": note}
        # A report of an earlier round (before a decision) is replaced; one of this round
        # makes the whole transaction fail: a repeat.
        fresh = (
            Attr("PK").not_exists()
            | Attr(_ROUND).lt(c.moderation.round)
            | Attr(EXPIRES_ATTR).lt(int(moment.timestamp()))
        )
        return Change(
            reported(c, reason, threshold, now),
            parts=(Part(PART, {"Put": put_request(table.name, record, fresh)}),),
            refusals=((PART, lambda: AlreadyReported("reported before")),),
        )

    try:
        applied = await apply(table, comment_id, decide, backoff=backoff)
    except AlreadyReported:
        stored = await read_stored(table, comment_id)
        if stored is None:
            raise CommentNotFound(f"comment {comment_id} does not exist") from None
        return ReportResult(stored.comment, False)
    assert applied.after is not None
    return ReportResult(applied.after, True)
