"""The seam between this layer and the engine: the one place engine errors become ours.

Every call storage makes goes through ``TableRef.client``, which is an ``EngineSeam``: a
client wrapper that runs each call inside ``engine_errors(operation)``. That context
manager maps botocore's and the network's exceptions onto the tree in ``storage.base.errors``
(the way httpx maps its transports' exceptions in one place), naming the operation, and
chains the original (``raise ... from exc``) so logs keep the engine's error code. Code
above the seam catches our errors only, never ``ClientError``.

A seam may have a watcher (``SeamWatcher``), told as calls pass of what the engine made
storage bear: calls made again (by botocore within one call, a transaction cancelled for a
transient reason, a batch call's unprocessed items) and throttling. The server counts what
it is told in its metrics; storage never imports whoever listens.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, Literal, Protocol

from botocore.exceptions import BotoCoreError, ClientError

from storage.base.errors import (
    ConditionFailed,
    EngineFault,
    StorageError,
    StorageUnavailable,
    TableInUse,
    TableMissing,
    Throttled,
    TransactionCancelled,
)
from storage.base.types import DynamoClient, Response
from storage.engine.wrapping import ClientWrapper

# What an engine call can fail with below the seam, besides the service's own answers
# (ClientError): botocore's failures (endpoint, credentials, retries exhausted), the
# network, timeouts.
_UNREACHABLE = (BotoCoreError, OSError, TimeoutError)

# The service asking us to slow down. botocore's standard mode already retried these on
# the single call; reaching us means they persisted. TransactionInProgressException means
# the same for a transaction: another one on the same items has not finished, and
# TransactionConflictException for a single write (PutItem, UpdateItem, DeleteItem) on an
# item a transaction is writing (botocore does not retry that one).
THROTTLING_CODES = frozenset(
    {
        "ThrottlingException",
        "ProvisionedThroughputExceededException",
        "RequestLimitExceeded",
        "TransactionInProgressException",
        "TransactionConflictException",
    }
)

# The service's own transient faults (HTTP 5xx), also retried by botocore first.
SERVER_FAULT_CODES = frozenset({"InternalServerError", "ServiceUnavailable"})

# A cancelled transaction's reasons (one code per action) that are transient: the action
# was fine ("None"), met another transaction, or was throttled. A transaction cancelled for
# these alone is written again (storage.writes.transaction); one with a failed condition
# is not what was computed from, anything else is refused.
THROTTLED_CANCELLATIONS = frozenset({"ProvisionedThroughputExceeded", "ThrottlingError"})
TRANSIENT_CANCELLATIONS = frozenset({"None", "TransactionConflict"}) | THROTTLED_CANCELLATIONS

# Why a call was made again: by botocore within one call (throttling, a 5xx), a
# transaction cancelled for a transient reason, a batch call's items left unprocessed.
RetryReason = Literal["sdk", "transaction", "unprocessed"]


class SeamWatcher(Protocol):
    """Told, as calls pass the seam, of what the engine made storage bear."""

    def retried(self, reason: RetryReason, count: int) -> None:
        """``count`` calls were (or, for a transaction or a batch, are to be) made again."""

    def throttled(self, operation: str) -> None:
        """A call of ``operation`` was throttled once botocore's retries were spent (or a
        transaction was cancelled for throttling)."""


def error_code(exc: BaseException) -> str:
    """The engine's error code of a ClientError; empty for anything else."""
    if isinstance(exc, ClientError):
        return str(exc.response.get("Error", {}).get("Code", ""))
    return ""


@contextmanager
def engine_errors(operation: str) -> Iterator[None]:
    """Run one engine call; its failures leave as storage errors that name ``operation``."""
    try:
        yield
    except StorageError:
        raise  # already ours (a wrapper above the engine raised it)
    except ClientError as exc:
        raise _translate(operation, exc) from exc
    except _UNREACHABLE as exc:
        raise StorageUnavailable(f"{operation} failed: the engine could not be reached") from exc


def _translate(operation: str, exc: ClientError) -> StorageError:
    code = error_code(exc)
    if code == "ConditionalCheckFailedException":
        return ConditionFailed(f"{operation}: a condition did not hold", exc.response.get("Item"))
    if code == "TransactionCanceledException":
        return TransactionCancelled(
            f"{operation} was cancelled", list(exc.response.get("CancellationReasons") or [])
        )
    if code in THROTTLING_CODES:
        return Throttled(f"{operation} was throttled", code)
    if code in SERVER_FAULT_CODES:
        return EngineFault(f"{operation} failed inside the engine", code)
    if code == "ResourceNotFoundException":
        return TableMissing(f"{operation}: the table or index does not exist")
    if code == "ResourceInUseException":
        return TableInUse(f"{operation}: the table exists already")
    return StorageUnavailable(f"{operation} failed")


class EngineSeam(ClientWrapper):
    """A DynamoClient whose every call raises storage errors only, and tells ``watcher``
    (when it has one) of retries and throttling."""

    def __init__(self, inner: DynamoClient, watcher: SeamWatcher | None = None) -> None:
        super().__init__(inner)
        self.watcher = watcher

    async def _call(self, operation: str, kwargs: dict[str, Any]) -> Response:
        if self.watcher is None:
            with engine_errors(operation):
                return await super()._call(operation, kwargs)
        try:
            with engine_errors(operation):
                response = await super()._call(operation, kwargs)
        except StorageError as exc:
            _tell_failure(self.watcher, operation, exc)
            raise
        _tell_answer(self.watcher, response)
        return response


def at_seam(client: DynamoClient) -> DynamoClient:
    """``client`` behind the seam (unchanged when it is there already)."""
    return client if isinstance(client, EngineSeam) else EngineSeam(client)


def _sdk_retries(response: Response) -> int:
    return int(response.get("ResponseMetadata", {}).get("RetryAttempts") or 0)


def _tell_answer(watcher: SeamWatcher, response: Response) -> None:
    retries = _sdk_retries(response)
    if retries:
        watcher.retried("sdk", retries)
    if response.get("UnprocessedKeys") or response.get("UnprocessedItems"):
        watcher.retried("unprocessed", 1)


def _tell_failure(watcher: SeamWatcher, operation: str, exc: StorageError) -> None:
    # The engine's own error, whether this seam translated it or one below did.
    cause = exc.__cause__
    if isinstance(cause, ClientError):
        retries = _sdk_retries(cause.response)
        if retries:
            watcher.retried("sdk", retries)
    if isinstance(exc, Throttled):
        watcher.throttled(operation)
    elif isinstance(exc, TransactionCancelled):
        codes = {str(reason.get("Code") or "None") for reason in exc.reasons}
        if codes & THROTTLED_CANCELLATIONS:
            watcher.throttled(operation)
        if codes <= TRANSIENT_CANCELLATIONS:
            watcher.retried("transaction", 1)
