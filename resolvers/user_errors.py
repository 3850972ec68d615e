"""Problems with a mutation's input, or with a rule of the product, reported all at once:
what the schema sends as ``userErrors`` (``schema/user_errors.py`` is their GraphQL type).

Mutations do not stop at the first bad field: each field is checked on its own and every
problem is collected, with the path of the input field it concerns, so a form can mark all
of them in one round trip. Authentication, rate limits, contention and storage failures
are not problems of the input: they stay top-level errors (``resolvers.errors``).
"""

from __future__ import annotations

import enum
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

from storage.base import errors as storage_errors
from storage.engine.metering import Meter
from storage.model.problems import InvalidFields

T = TypeVar("T")


class ProblemCode(enum.Enum):
    """The contract's UserErrorCode."""

    INVALID = "INVALID"
    TOO_LONG = "TOO_LONG"
    REQUIRED = "REQUIRED"
    NOT_FOUND = "NOT_FOUND"
    FORBIDDEN = "FORBIDDEN"
    IDEMPOTENCY_KEY_REUSED = "IDEMPOTENCY_KEY_REUSED"
    LIMIT_REACHED = "LIMIT_REACHED"
    # The object changed since the revision the request names (a moderator's review).
    CHANGED = "CHANGED"


@dataclass(frozen=True, slots=True)
class Problem:
    """One problem: the input field's path (None when no single field is at fault)."""

    field: tuple[str, ...] | None
    message: str
    code: ProblemCode


class Problems(Exception):
    """The mutation did not run (or was refused); every problem found is listed."""

    def __init__(self, problems: list[Problem]) -> None:
        super().__init__("; ".join(p.message for p in problems))
        self.problems = problems


# Storage errors that are the caller's to fix, most specific first.
_CODES: tuple[tuple[type[storage_errors.StorageError], ProblemCode], ...] = (
    (storage_errors.TextTooLong, ProblemCode.TOO_LONG),
    (storage_errors.TextMissing, ProblemCode.REQUIRED),
    (storage_errors.InvalidInput, ProblemCode.INVALID),
    (storage_errors.CommentNotFound, ProblemCode.NOT_FOUND),
    (storage_errors.NoReply, ProblemCode.NOT_FOUND),
    (storage_errors.NotAuthor, ProblemCode.FORBIDDEN),
    (storage_errors.OwnComment, ProblemCode.FORBIDDEN),
    (storage_errors.NotPublished, ProblemCode.FORBIDDEN),
    (storage_errors.AuthorErasing, ProblemCode.FORBIDDEN),
    (storage_errors.IdempotencyKeyReused, ProblemCode.IDEMPOTENCY_KEY_REUSED),
    (storage_errors.CommentsPerProductLimit, ProblemCode.LIMIT_REACHED),
    (storage_errors.RevisedSinceReview, ProblemCode.CHANGED),
)


# Words for clients where storage's own message is written for logs (it names the id).
_MESSAGES: tuple[tuple[type[storage_errors.StorageError], str], ...] = (
    (storage_errors.CommentNotFound, "the comment does not exist"),
    (storage_errors.NoReply, "the comment has no reply"),
    (
        storage_errors.AuthorErasing,
        "AUTHOR_ERASURE_RUNNING: this author's data is being erased; write again once it is done",
    ),
)


def code_of(exc: storage_errors.StorageError) -> ProblemCode | None:
    """The problem code of a storage error that is the caller's to fix; None for others."""
    return next((code for kind, code in _CODES if isinstance(exc, kind)), None)


def refused(exc: storage_errors.StorageError, field: tuple[str, ...] | None) -> Problems:
    """The Problems a storage refusal that is the caller's to fix stands for."""
    code = code_of(exc)
    if code is None:
        raise ValueError(f"{type(exc).__name__} is not a problem of the input") from exc
    message = next((m for kind, m in _MESSAGES if isinstance(exc, kind)), str(exc))
    return Problems([Problem(field, message, code)])


def field_problems(exc: InvalidFields, field: tuple[str, ...]) -> Problems:
    """Every problem storage found with a structured input (answers, definitions), each at
    its path under ``field`` (``["input", "definitions", "0", "values", "2", "label",
    "de"]``), with its stable reason in the message."""
    found = []
    for p in exc.problems:
        code = code_of(p.as_error()) or ProblemCode.INVALID
        found.append(Problem((*field, *p.field), f"{p.message} ({p.code})", code))
    return Problems(found)


def answer_problems(exc: InvalidFields, field: tuple[str, ...]) -> Problems:
    """The problems of a list of answers, at their paths under ``field`` (the answers'
    own input field: ``["input", "attributes", "1", "value"]``)."""
    return field_problems(exc, field[:-1])


def not_found(meter: Meter, field: tuple[str, ...] | None) -> Problems:
    """NOT_FOUND for a comment that does not exist or that the caller may not see: the two
    answer alike, storage figures included (a write read the hidden one to refuse it, so
    the figures that depend on what storage holds are not shown)."""
    meter.conceal()
    return refused(storage_errors.CommentNotFound("the comment does not exist"), field)


class Checks:
    """Runs checks of one input, each on its own, collecting the problems they raise."""

    def __init__(self) -> None:
        self.problems: list[Problem] = []

    def check(self, field: tuple[str, ...] | None, check: Callable[[], T]) -> T | None:
        """``check()``'s value, or None after recording its problem under ``field``."""
        try:
            return check()
        except storage_errors.StorageError as exc:
            code = code_of(exc)
            if code is None:
                raise
            self.problems.append(Problem(field, str(exc), code))
            return None

    def raise_any(self) -> None:
        if self.problems:
            raise Problems(self.problems)
