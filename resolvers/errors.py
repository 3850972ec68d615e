"""Errors that reach GraphQL clients, each with a stable code from the public contract.

    ApiError                   extensions.code
    ├── BadUserInput           BAD_USER_INPUT
    ├── Unauthenticated        UNAUTHENTICATED
    ├── Forbidden              FORBIDDEN
    ├── Conflict               CONFLICT (retryable; extensions.retryAfter in seconds)
    ├── RateLimited            RATE_LIMITED (retryable; extensions.retryAfter in seconds)
    ├── QueryTooComplex        QUERY_TOO_COMPLEX
    ├── Unavailable            STORAGE_UNAVAILABLE (retryable)
    ├── LiveUpdatesUnavailable LIVE_UPDATES_UNAVAILABLE (retryable)
    ├── TooManySubscriptions   TOO_MANY_SUBSCRIPTIONS (retryable)
    └── SubscriptionEnded      EVENTS_LOST, TOO_SLOW or STORAGE_UNAVAILABLE (resubscribe)

Storage errors are mapped by ``from_storage``; their messages were written for clients
(no engine details), so they pass through. Anything else is masked by the schema layer.
Problems with a mutation's input (a missing comment, another author's, a reused
idempotency key, a per-product limit) are not errors here: mutations report them in their
payloads (``resolvers.problems``).
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
