"""The storage layer's exceptions.

Every error this package raises on purpose derives from ``StorageError``::

    StorageError
    ├── InvalidInput                 the caller's fault; nothing was read or written
    │   ├── InvalidProductId
    │   ├── InvalidLanguage
    │   ├── InvalidRating
    │   ├── InvalidCommentId
    │   ├── InvalidCommentText
    │   ├── InvalidCursor
    │   └── InvalidPageRequest
    ├── CommentNotFound              the comment does not exist (or no longer does)
    ├── NotAuthor                    a conditional delete named another author
    ├── IdempotencyKeyReused         the key was used before for a different request
    ├── WriteLimitReached            a per-author write limit refused the write
    │   ├── CommentsPerProductLimit  the author has as many comments on the product as allowed
    │   └── WriteRateLimited         the author wrote as many comments this hour as allowed
    ├── CounterInvariantBroken       a write would drive a counter below zero (counters drifted)
    └── RetryableError               the request may succeed if sent again later
        ├── WriteConflict            contention persisted through our retries
        └── StorageUnavailable       throttling, timeouts, engine errors, a failed query

Wrapped AWS errors are chained (``raise ... from exc``) so logs keep the AWS error code,
while the message of the storage error itself never carries engine details.
"""

from __future__ import annotations


class StorageError(Exception):
    """Base of every error raised on purpose by the storage layer."""


class InvalidInput(StorageError, ValueError):
    """A value supplied by the caller is not acceptable; nothing was read or written."""


class InvalidProductId(InvalidInput):
    pass


class InvalidLanguage(InvalidInput):
    pass


class InvalidRating(InvalidInput):
    pass


class InvalidCommentId(InvalidInput):
    pass


class InvalidCommentText(InvalidInput):
    pass


class InvalidCursor(InvalidInput):
    pass


class InvalidPageRequest(InvalidInput):
    pass


class CommentNotFound(StorageError, LookupError):
    """The comment does not exist; a delete of it changed nothing."""


class NotAuthor(StorageError):
    """A delete required a given author and the comment belongs to someone else."""


class IdempotencyKeyReused(StorageError):
    """An idempotency key came back with a request other than the one it was first used for;
    nothing was written."""


class WriteLimitReached(StorageError):
    """A per-author write limit refused the write; nothing was written."""


class CommentsPerProductLimit(WriteLimitReached):
    """The author already has as many comments on this product as the limit allows."""

    def __init__(self, limit: int) -> None:
        super().__init__(
            f"an author may have at most {limit} comment{'s' if limit != 1 else ''} on one product"
        )
        self.limit = limit


class WriteRateLimited(WriteLimitReached):
    """The author created as many comments in the current hour as the limit allows."""

    def __init__(self, limit: int, retry_after: int) -> None:
        super().__init__(
            f"an author may create at most {limit} comments per hour; "
            f"retry in {retry_after} seconds"
        )
        self.limit = limit
        self.retry_after = retry_after


class CounterInvariantBroken(StorageError):
    """A write would have moved a counter below zero: the counters no longer match the
    comments (written outside this layer, or by an older version). Nothing was written;
    ``comments verify-stats --repair`` recounts them."""


class RetryableError(StorageError):
    """The operation failed for a transient reason and may be retried by the client."""


class WriteConflict(RetryableError):
    """Concurrent writes kept cancelling this one after every retry we allow."""


class StorageUnavailable(RetryableError):
    """The engine throttled, timed out or failed; no partial result was returned."""
