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


class RetryableError(StorageError):
    """The operation failed for a transient reason and may be retried by the client."""


class WriteConflict(RetryableError):
    """Concurrent writes kept cancelling this one after every retry we allow."""


class StorageUnavailable(RetryableError):
    """The engine throttled, timed out or failed; no partial result was returned."""
