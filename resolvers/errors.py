"""Errors that reach GraphQL clients: one tree across the layers, and the code each becomes.

Read a row left to right: what is raised, where, and what the client sees. A top-level
error carries ``extensions.code``; a mutation reports its input's problems in its
payload's ``userErrors`` instead (``resolvers.user_errors``), every one at once, and runs
nothing. ``tests/resolvers/test_errors.py`` checks every row against the mappings below.

    engine failures (botocore ClientError, connection errors)
    └── become a StorageError in one place, ``storage.engine.seam``
    StorageError (``storage.base.errors``)        query: extensions.code  mutation: userErrors
    ├── InvalidInput                              BAD_USER_INPUT          INVALID
    │   ├── TextTooLong                           BAD_USER_INPUT          TOO_LONG
    │   └── TextMissing                           BAD_USER_INPUT          REQUIRED
    ├── CommentNotFound                           - (a query: null)       NOT_FOUND
    ├── NoReply                                   -                       NOT_FOUND
    ├── NotAuthor                                 -                       FORBIDDEN
    ├── OwnComment                                -                       FORBIDDEN
    ├── NotPublished                              -                       FORBIDDEN
    ├── AuthorErasing                             -                       FORBIDDEN
    ├── IdempotencyKeyReused                      -                       IDEMPOTENCY_KEY_REUSED
    ├── RevisedSinceReview                        -                       CHANGED
    ├── CommentsPerProductLimit                   -                       LIMIT_REACHED
    ├── WriteRateLimited                          RATE_LIMITED (retryAfter)
    ├── WriteConflict                             CONFLICT (retryAfter)
    ├── StorageUnavailable (and TimeoutError)     STORAGE_UNAVAILABLE (retryable)
    └── the rest: bugs if they reach a caller     INTERNAL_SERVER_ERROR (masked, logged)
    ApiError (this module), raised by resolvers   extensions.code
    ├── BadUserInput                              BAD_USER_INPUT
    ├── Unauthenticated                           UNAUTHENTICATED
    ├── Forbidden                                 FORBIDDEN
    ├── Conflict                                  CONFLICT (retryable; retryAfter seconds)
    ├── RateLimited                               RATE_LIMITED (retryable; retryAfter seconds)
    ├── QueryTooComplex                           QUERY_TOO_COMPLEX
    ├── Unavailable                               STORAGE_UNAVAILABLE (retryable)
    ├── LiveUpdatesUnavailable                    LIVE_UPDATES_UNAVAILABLE (retryable)
    ├── TooManySubscriptions                      TOO_MANY_SUBSCRIPTIONS (retryable)
    └── SubscriptionEnded                         EVENTS_LOST, TOO_SLOW or STORAGE_UNAVAILABLE
    GraphQL parse and validation errors           BAD_USER_INPUT, QUERY_TOO_COMPLEX
                                                  (``schema.masking``)
    refused before GraphQL (``server.http``)      BAD_USER_INPUT, PERSISTED_QUERY_NOT_FOUND,
                                                  RATE_LIMITED, ... (same ``errors`` shape)
    anything else                                 INTERNAL_SERVER_ERROR, with the request id;
                                                  the exception is logged, never sent

Storage errors are mapped by ``from_storage`` (queries) and ``resolvers.user_errors.code_of``
(mutations); their messages were written for clients (no engine details), so they pass
through. Everything unexpected is masked by the schema layer (``schema.masking``).
"""

from __future__ import annotations

from storage.base import errors as storage_errors


class ApiError(Exception):
    """An error a client may see, with its contract code."""

    code = "INTERNAL_SERVER_ERROR"
    retryable = False

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message

    def extensions(self) -> dict[str, object]:
        """What clients get in ``extensions`` beside the code."""
        return {"retryable": True} if self.retryable else {}


class BadUserInput(ApiError):
    """The request's arguments are not acceptable; nothing was read or written."""

    code = "BAD_USER_INPUT"


class Unauthenticated(ApiError):
    """No token, or one that is invalid or expired, where one is required."""

    code = "UNAUTHENTICATED"


class Forbidden(ApiError):
    """The caller is known but may not do this."""

    code = "FORBIDDEN"


class Conflict(ApiError):
    """Concurrent writes or an idempotency key used for another request; retry (after
    ``retry_after`` seconds: the contention is over by then, as a rule) or use a new key."""

    code = "CONFLICT"
    retryable = True

    def __init__(self, message: str, retry_after: int = 1) -> None:
        super().__init__(message)
        self.retry_after = retry_after

    def extensions(self) -> dict[str, object]:
        return {**super().extensions(), "retryAfter": self.retry_after}


class RateLimited(ApiError):
    """The author made as many writes of a kind as allowed per hour; retry after
    ``retry_after`` seconds."""

    code = "RATE_LIMITED"
    retryable = True

    def __init__(self, message: str, retry_after: int) -> None:
        super().__init__(message)
        self.retry_after = retry_after

    def extensions(self) -> dict[str, object]:
        return {**super().extensions(), "retryAfter": self.retry_after}


class QueryTooComplex(ApiError):
    """The request would cost more than it may, estimated or at run time."""

    code = "QUERY_TOO_COMPLEX"


class Unavailable(ApiError):
    """Storage could not answer (``storage.base.errors.StorageUnavailable``, or the request's
    deadline passed): the client may retry."""

    code = "STORAGE_UNAVAILABLE"
    retryable = True


class LiveUpdatesUnavailable(ApiError):
    """This server does not follow the table's stream right now (it has none, or the
    follower is starting again): subscriptions are refused, and may be retried."""

    code = "LIVE_UPDATES_UNAVAILABLE"
    retryable = True


class TooManySubscriptions(ApiError):
    """The connection or the server holds as many subscriptions as it may."""

    code = "TOO_MANY_SUBSCRIPTIONS"
    retryable = True


# Why the server ends a subscription (storage.live.feed.Ended): the client subscribes again and
# reloads what it shows, since events may be missing.
ENDED_CODES = frozenset({"EVENTS_LOST", "TOO_SLOW", "STORAGE_UNAVAILABLE"})


class SubscriptionEnded(ApiError):
    """The server ended a subscription; ``code`` says why (one of ``ENDED_CODES``)."""

    retryable = True

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code if code in ENDED_CODES else "EVENTS_LOST"


CODES = (
    frozenset(
        cls.code
        for cls in (
            BadUserInput,
            Unauthenticated,
            Forbidden,
            Conflict,
            RateLimited,
            QueryTooComplex,
            Unavailable,
            LiveUpdatesUnavailable,
            TooManySubscriptions,
        )
    )
    | ENDED_CODES
    | {"INTERNAL_SERVER_ERROR"}
)


def from_storage(exc: BaseException) -> ApiError | None:
    """The client-facing error for a storage error (or a storage timeout); None otherwise."""
    if isinstance(exc, storage_errors.InvalidInput):
        return BadUserInput(str(exc))
    if isinstance(exc, storage_errors.WriteRateLimited):
        return RateLimited(str(exc), exc.retry_after)
    if isinstance(exc, storage_errors.WriteConflict):
        return Conflict("the write met too much contention; retry")
    if isinstance(exc, storage_errors.StorageUnavailable | TimeoutError):
        return Unavailable("storage is unavailable right now; retry")
    return None
