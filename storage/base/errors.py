"""The storage layer's exceptions.

Every error this package raises on purpose derives from ``StorageError``::

    StorageError
    ├── InvalidInput                 the caller's fault; nothing was read or written
    │   ├── InvalidProductId
    │   ├── InvalidLanguage
    │   ├── InvalidRating
    │   ├── InvalidCommentId
    │   ├── InvalidCommentText
    │   │   ├── TextMissing          a required text is empty or invisible
    │   │   └── TextTooLong          a text over its limit (characters or bytes)
    │   ├── InvalidCursor
    │   └── InvalidPageRequest
    ├── CommentNotFound              the comment does not exist (or no longer does)
    ├── NotAuthor                    a delete or edit by someone who is not the author
    ├── NotPublished                 a report or reply needs a published comment
    ├── OwnComment                   authors may not report their own comment
    ├── AlreadyReported              a repeated report in one round (handled inside)
    ├── NoReply                      there is no merchant reply to delete
    ├── IdempotencyKeyReused         the key was used before for a different request
    ├── WriteLimitReached            a per-author write limit refused the write
    │   ├── CommentsPerProductLimit  the author has as many comments on the product as allowed
    │   └── WriteRateLimited         the author made as many writes of a kind as allowed per hour
    ├── CounterInvariantBroken       a write would drive a counter below zero (counters drifted)
    ├── AuthorErasing                the author's data is being erased: their writes wait
    ├── GroupChanged                 a product's group changed under a group move (handled inside)
    ├── GroupMoveUnfinished          a group move could not yet certify that it is complete
    ├── CallBudgetExceeded           the request's budget of storage calls is spent
    ├── ConditionFailed              a conditional write found other state (handled inside)
    ├── TransactionCancelled         a transaction did not commit, with reasons (handled inside)
    └── RetryableError               the request may succeed if sent again later
        ├── WriteConflict            contention persisted through our retries
        └── StorageUnavailable       the engine failed or could not be reached; nothing partial
            ├── Throttled            the engine kept asking us to slow down
            ├── EngineFault          the engine failed on its side (HTTP 5xx)
            ├── TableMissing         the table or an index does not exist
            └── TableInUse           the table exists already, or is being changed

Engine errors become these in one place, ``storage.engine.seam``, which chains the original
(``raise ... from exc``) so logs keep the AWS error code, while the message of the storage
error itself never carries engine details. ``ConditionFailed`` and ``TransactionCancelled``
are outcomes the write path reads and acts on; reaching a caller, they are a bug.
"""

from __future__ import annotations

from typing import Any


class StorageError(Exception):
    """Base of every error raised on purpose by the storage layer."""


class InvalidInput(StorageError, ValueError):
    """A value supplied by the caller is not acceptable; nothing was read or written."""


class InvalidProductId(InvalidInput):
    """A product id that is empty, too long or holds characters keys cannot carry."""


class InvalidLanguage(InvalidInput):
    """A language that is not a well-formed BCP 47 tag."""


class InvalidRating(InvalidInput):
    """A rating outside 1 to 5, or a rating filter that is empty or repeats itself."""


class InvalidFacet(InvalidInput):
    """A facet value (an attribute's key or value, a topic) keys cannot carry."""


class InvalidCommentId(InvalidInput):
    """A comment id that is not one this layer makes (32 lower-case hex digits)."""


class InvalidCommentText(InvalidInput):
    """A title or body over its limit, or holding characters we refuse."""


class TextMissing(InvalidCommentText):
    """A required text (a body, an author id) that is empty, blank or invisible."""


class TextTooLong(InvalidCommentText):
    """A text over its limit in characters or in UTF-8 bytes; the message says the limit."""


class InvalidCursor(InvalidInput):
    """A cursor this layer did not make, or one that names no position."""


class InvalidPageRequest(InvalidInput):
    """A page size out of range, or page arguments that do not go together."""


class CommentNotFound(StorageError, LookupError):
    """The comment does not exist; a delete of it changed nothing."""


class NotAuthor(StorageError):
    """A delete required a given author and the comment belongs to someone else."""


class NotPublished(StorageError):
    """The action needs a PUBLISHED comment (reports, replies) and this one is not."""


class RevisedSinceReview(StorageError):
    """The author changed the comment after the revision a moderator reviewed; nothing
    was decided."""


class OwnComment(StorageError):
    """Authors may not do this to their own comment (report it)."""


class AlreadyReported(StorageError):
    """This viewer reported the comment since its last decision: the repeat changes nothing."""


class NoReply(StorageError, LookupError):
    """The comment has no merchant reply to delete."""


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
    """The author created as many comments in the current hour as the limit allows, or made
    as many ``writes`` of another kind (edits, votes...) as its rate allows per hour."""

    def __init__(self, limit: int, retry_after: int, writes: str | None = None) -> None:
        what = f"make at most {limit} {writes}" if writes else f"create at most {limit} comments"
        super().__init__(f"an author may {what} per hour; retry in {retry_after} seconds")
        self.limit = limit
        self.retry_after = retry_after


class CounterInvariantBroken(StorageError):
    """A write would have moved a counter below zero: the counters no longer match the
    comments (written outside this layer, or by an older version). Nothing was written;
    ``comments verify-stats --repair`` recounts them."""


class CallBudgetExceeded(StorageError):
    """The request has made every storage call its budget allows; this one was not made."""


class ConditionFailed(StorageError):
    """A conditional single-item write found the item other than the condition required.

    ``item`` is the item as it was, when the call asked for it (ALL_OLD on failure)."""

    def __init__(self, message: str, item: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.item = item


class TransactionCancelled(StorageError):
    """A TransactWriteItems did not commit; ``reasons`` has one entry per action, in order,
    each with the engine's ``Code`` and, for a failed condition with ALL_OLD, the ``Item``."""

    def __init__(self, message: str, reasons: list[dict[str, Any]]) -> None:
        super().__init__(message)
        self.reasons = reasons


class AuthorErasing(StorageError):
    """An erasure of this author's data is running: their new comments are refused until
    it is done (``storage.model.erasure``)."""


class GroupChanged(StorageError):
    """The product's membership changed after a group move read it: the move reads it
    again and follows it. Reaching a caller, it is a bug."""


class GroupMoveUnfinished(StorageError):
    """A group move moved every comment it found, but the group does not yet hold all the
    product's published comments (an index that had not caught up): running the move
    again finishes it. Nothing is inexact meanwhile."""


class RetryableError(StorageError):
    """The operation failed for a transient reason and may be retried by the client."""


class WriteConflict(RetryableError):
    """Concurrent writes kept cancelling this one after every retry we allow."""


class StorageUnavailable(RetryableError):
    """The engine failed, timed out or could not be reached; no partial result was returned."""


class Throttled(StorageUnavailable):
    """The engine kept asking us to slow down (throttling, exceeded capacity or request
    limits, a transaction on the same items still in progress) after botocore's retries."""

    def __init__(self, message: str, code: str) -> None:
        super().__init__(message)
        self.code = code


class EngineFault(StorageUnavailable):
    """The engine failed on its side (an HTTP 5xx) after botocore's retries."""

    def __init__(self, message: str, code: str) -> None:
        super().__init__(message)
        self.code = code


class TableMissing(StorageUnavailable):
    """The table or one of its indexes does not exist (run ``comments create-table``)."""


class TableInUse(StorageUnavailable):
    """The table exists already, or is being created or changed."""
