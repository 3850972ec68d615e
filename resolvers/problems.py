"""Problems with a mutation's input, or with a rule of the product, reported all at once.

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

from storage import errors as storage_errors

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


def code_of(exc: storage_errors.StorageError) -> ProblemCode | None:
    """The problem code of a storage error that is the caller's to fix; None for others."""
    if isinstance(exc, storage_errors.TextTooLong):
        return ProblemCode.TOO_LONG
    if isinstance(exc, storage_errors.TextMissing):
        return ProblemCode.REQUIRED
    if isinstance(exc, storage_errors.InvalidInput):
        return ProblemCode.INVALID
    if isinstance(exc, storage_errors.CommentNotFound):
        return ProblemCode.NOT_FOUND
    if isinstance(exc, storage_errors.NotAuthor):
        return ProblemCode.FORBIDDEN
    if isinstance(exc, storage_errors.IdempotencyKeyReused):
        return ProblemCode.IDEMPOTENCY_KEY_REUSED
    if isinstance(exc, storage_errors.CommentsPerProductLimit):
        return ProblemCode.LIMIT_REACHED
    return None


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
