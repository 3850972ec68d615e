"""Privacy requests: an erasure job as stored, its fence, and what an export holds.

An erasure is a job, one item ``ERASURE#<requestId> / ERASURE`` with ``requestId`` (S),
``mode`` (S: ``DELETE`` or ``ANONYMIZE``), ``state`` (S: ``RUNNING``, then ``DONE``) and
``counts`` (M of N: ``comments``, ``votes``, ``reports``, ``replies``). That shape is an
interface: the stream announces ``author.erased`` when ``state`` becomes ``DONE``. While it
runs, the item also holds the subject (the token's ``sub``) it erases, which it needs to
find what to erase; the write that sets ``DONE`` removes it, so a finished job keeps no
trace of whom it erased, not even a digest.

While the job runs, a fence ``AUTHOR#<digest> / ERASING`` (the author's own partition,
holding the request id) refuses the subject's new comments: a create conditions on its
absence in its own transaction (``storage.writes.create``), so a comment is either made
before the fence, and erased, or refused. The job removes the fence when it is done: a
later write by the same subject is new data.
"""

from __future__ import annotations

import enum
import uuid
from dataclasses import dataclass

from storage.base.types import Item
from storage.model import keys

# What an anonymized comment shows as its author.
ANONYMOUS = "Anonymous"
# The author id an anonymized comment gets: this prefix and 128 random bits, a fresh one
# per comment, so that anonymized comments link neither to the subject nor to each other.
ANONYMOUS_PREFIX = "anonymous:"
# The kinds a job counts, in the order of the agreed ``counts`` map.
COUNT_NAMES = ("comments", "votes", "reports", "replies")
REQUEST_ID_ATTR = "requestId"
MODE_ATTR = "mode"
STATE_ATTR = "state"
COUNTS_ATTR = "counts"
SUBJECT_ATTR = "subject"
STARTED_ATTR = "startedAt"
FINISHED_ATTR = "finishedAt"
PASSES_ATTR = "passes"


class Mode(enum.StrEnum):
    """DELETE removes the subject's comments (through the delete path, so every count moves
    with them); ANONYMIZE keeps their text under ``ANONYMOUS`` with the identity removed."""

    DELETE = "DELETE"
    ANONYMIZE = "ANONYMIZE"


class State(enum.StrEnum):
    RUNNING = "RUNNING"
    DONE = "DONE"


def new_request_id() -> str:
    """A fresh request id: 128 random bits as 32 lower-case hex digits."""
    return uuid.uuid4().hex


def anonymous_author_id() -> str:
    """A fresh author id for one anonymized comment, never the same twice."""
    return ANONYMOUS_PREFIX + uuid.uuid4().hex


def job_key(request_id: str) -> Item:
    pk = keys.erasure_pk(request_id)
    return {"PK": {"S": pk}, "SK": {"S": keys.ERASURE_SK}}


def fence_key(subject: str) -> Item:
    """The fence of an erasure of ``subject``, in the subject's own partition."""
    return {"PK": {"S": keys.author_pk(subject)}, "SK": {"S": keys.ERASING_SK}}


@dataclass(frozen=True, slots=True)
class Job:
    """An erasure job as stored (``subject`` is None once it is DONE)."""

    request_id: str
    mode: Mode
    state: State
    counts: dict[str, int]
    subject: str | None
    started_at: str
    finished_at: str | None = None
    passes: int = 0

    @property
    def done(self) -> bool:
        return self.state is State.DONE


def job_item(job: Job) -> Item:
    """The job's item (a RUNNING job, as it starts)."""
    item: Item = {
        **job_key(job.request_id),
        REQUEST_ID_ATTR: {"S": job.request_id},
        MODE_ATTR: {"S": job.mode.value},
        STATE_ATTR: {"S": job.state.value},
        COUNTS_ATTR: {"M": {name: {"N": str(job.counts.get(name, 0))} for name in COUNT_NAMES}},
        STARTED_ATTR: {"S": job.started_at},
        PASSES_ATTR: {"N": str(job.passes)},
    }
    if job.subject is not None:
        item[SUBJECT_ATTR] = {"S": job.subject}
    if job.finished_at is not None:
        item[FINISHED_ATTR] = {"S": job.finished_at}
    return item


def item_to_job(item: Item) -> Job:
    counts = item.get(COUNTS_ATTR, {}).get("M", {})
    return Job(
        request_id=item[REQUEST_ID_ATTR]["S"],
        mode=Mode(item[MODE_ATTR]["S"]),
        state=State(item[STATE_ATTR]["S"]),
        counts={name: int(counts.get(name, {}).get("N", "0")) for name in COUNT_NAMES},
        subject=item[SUBJECT_ATTR]["S"] if SUBJECT_ATTR in item else None,
        started_at=item[STARTED_ATTR]["S"],
        finished_at=item[FINISHED_ATTR]["S"] if FINISHED_ATTR in item else None,
        passes=int(item.get(PASSES_ATTR, {}).get("N", "0")),
    )


def is_job_item(item: Item) -> bool:
    pk: str = item.get("PK", {}).get("S", "")
    return pk.startswith(keys.ERASURE_PREFIX) and item.get("SK", {}).get("S") == keys.ERASURE_SK
