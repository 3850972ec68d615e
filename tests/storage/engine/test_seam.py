"""The seam (storage.engine.seam): every engine failure leaves storage as one of its own errors,
and a watcher is told of retries and throttling as calls pass."""

from __future__ import annotations

from contextlib import suppress
from typing import Any

import pytest
from botocore.exceptions import ClientError, EndpointConnectionError, ReadTimeoutError

from storage.base import errors
from storage.base.types import Response
from storage.engine.seam import EngineSeam, RetryReason, at_seam
from storage.engine.table import TableRef
from storage.ops.create import create_table
from storage.ops.verify import scan_pages
from storage.reads.leaders import leaderboard
from storage.reads.reader import batch_get_counts


class _Failing:
    """A client whose every call raises the given exception."""

    def __init__(self, error: BaseException) -> None:
        self.error = error
        self.calls: list[str] = []

    def __getattr__(self, operation: str) -> Any:
        async def call(**kwargs: Any) -> Response:
            self.calls.append(operation)
            raise self.error

        return call


def _client_error(code: str, **extra: Any) -> ClientError:
    return ClientError({"Error": {"Code": code, "Message": "engine detail"}, **extra}, "Query")


CASES: list[tuple[BaseException, type[errors.StorageError]]] = [
    (_client_error("ConditionalCheckFailedException"), errors.ConditionFailed),
    (
        _client_error("TransactionCanceledException", CancellationReasons=[{"Code": "None"}]),
        errors.TransactionCancelled,
    ),
    (_client_error("ProvisionedThroughputExceededException"), errors.Throttled),
    (_client_error("ThrottlingException"), errors.Throttled),
    (_client_error("RequestLimitExceeded"), errors.Throttled),
    (_client_error("TransactionInProgressException"), errors.Throttled),
    (_client_error("TransactionConflictException"), errors.Throttled),
    (_client_error("InternalServerError"), errors.EngineFault),
    (_client_error("ServiceUnavailable"), errors.EngineFault),
    (_client_error("ResourceNotFoundException"), errors.TableMissing),
    (_client_error("ResourceInUseException"), errors.TableInUse),
    (_client_error("ValidationException"), errors.StorageUnavailable),
    (_client_error("AccessDeniedException"), errors.StorageUnavailable),
    (EndpointConnectionError(endpoint_url="http://127.0.0.1:1"), errors.StorageUnavailable),
    (ReadTimeoutError(endpoint_url="http://127.0.0.1:1"), errors.StorageUnavailable),
    (ConnectionResetError(), errors.StorageUnavailable),
    (TimeoutError(), errors.StorageUnavailable),
]


@pytest.mark.parametrize(("raised", "expected"), CASES, ids=lambda c: type(c).__name__)
async def test_every_engine_failure_becomes_a_storage_error(
    raised: BaseException, expected: type[errors.StorageError]
) -> None:
    seam = EngineSeam(_Failing(raised))
    with pytest.raises(errors.StorageError) as info:
        await seam.query(TableName="t")
    assert type(info.value) is expected
    assert info.value.__cause__ is raised  # the engine's code stays in the logs
    assert "engine detail" not in str(info.value)
    assert "query" in str(info.value)  # names the operation


async def test_cancellation_reasons_and_throttling_codes_are_kept() -> None:
    reasons = [{"Code": "None"}, {"Code": "ConditionalCheckFailed", "Item": {"n": {"N": "1"}}}]
    seam = EngineSeam(
        _Failing(_client_error("TransactionCanceledException", CancellationReasons=reasons))
    )
    with pytest.raises(errors.TransactionCancelled) as cancelled:
        await seam.transact_write_items(TransactItems=[])
    assert cancelled.value.reasons == reasons
    seam = EngineSeam(_Failing(_client_error("ThrottlingException")))
    with pytest.raises(errors.Throttled) as throttled:
        await seam.get_item()
    assert throttled.value.code == "ThrottlingException"


async def test_our_own_errors_and_cancellation_pass_through_unchanged() -> None:
    own = errors.CallBudgetExceeded("spent")
    with pytest.raises(errors.CallBudgetExceeded) as info:
        await EngineSeam(_Failing(own)).query()
    assert info.value is own


def test_a_table_ref_puts_any_client_behind_the_seam_once() -> None:
    raw = _Failing(TimeoutError())
    table = TableRef(raw, "comments")
    assert isinstance(table.client, EngineSeam)
    again = TableRef(table.client, "comments")
    assert again.client is table.client
    assert at_seam(table.client) is table.client


UNAVAILABLE = _client_error("InternalFailure")


async def test_creating_the_table_never_lets_an_engine_error_escape() -> None:
    # Before the seam, a failing DescribeTable left create_table as a raw ClientError.
    class _DescribeFails(_Failing):
        def __getattr__(self, operation: str) -> Any:
            if operation == "create_table":

                async def made(**kwargs: Any) -> Response:
                    raise _client_error("ResourceInUseException")

                return made
            return super().__getattr__(operation)

    with pytest.raises(errors.StorageUnavailable):
        await create_table(_DescribeFails(UNAVAILABLE), "comments", wait_seconds=0)


@pytest.mark.parametrize(
    "read",
    [
        lambda t: batch_get_counts(t, [("p1", None)]),
        lambda t: leaderboard(t, 5),
        lambda t: scan_pages(t).__anext__(),
    ],
    ids=["counters", "leaderboard", "scan"],
)
async def test_reads_fail_as_storage_unavailable(read: Any) -> None:
    table = TableRef(_Failing(UNAVAILABLE), "comments")
    with pytest.raises(errors.StorageUnavailable):
        await read(table)


class _Watcher:
    """What a seam told it, in order."""

    def __init__(self) -> None:
        self.told: list[tuple[str, str, int]] = []

    def retried(self, reason: RetryReason, count: int) -> None:
        self.told.append(("retried", reason, count))

    def throttled(self, operation: str) -> None:
        self.told.append(("throttled", operation, 1))


class _Answering:
    """A client whose every call answers with the given response."""

    def __init__(self, response: Response) -> None:
        self.response = response

    def __getattr__(self, operation: str) -> Any:
        async def call(**kwargs: Any) -> Response:
            return self.response

        return call


def _cancelled(*codes: str) -> ClientError:
    reasons = [{"Code": code} for code in codes]
    return _client_error("TransactionCanceledException", CancellationReasons=reasons)


RETRIED = {"ResponseMetadata": {"RetryAttempts": 2}}
WATCHED: list[tuple[Any, str, list[tuple[str, str, int]]]] = [
    (_Answering({"Items": []}), "query", []),
    (_Answering({"Items": [], **RETRIED}), "query", [("retried", "sdk", 2)]),
    (
        _Answering({"UnprocessedKeys": {"t": {"Keys": [{}]}}}),
        "batch_get_item",
        [("retried", "unprocessed", 1)],
    ),
    (_Answering({"UnprocessedItems": {}}), "batch_write_item", []),
    (
        _Failing(_client_error("ProvisionedThroughputExceededException", **RETRIED)),
        "get_item",
        [("retried", "sdk", 2), ("throttled", "get_item", 1)],
    ),
    (_Failing(_client_error("InternalServerError", **RETRIED)), "query", [("retried", "sdk", 2)]),
    (
        _Failing(_cancelled("None", "TransactionConflict")),
        "transact_write_items",
        [("retried", "transaction", 1)],
    ),
    (
        _Failing(_cancelled("ThrottlingError", "None")),
        "transact_write_items",
        [("throttled", "transact_write_items", 1), ("retried", "transaction", 1)],
    ),
    # A failed condition is not what the write computed from: not a retry of the same.
    (
        _Failing(_cancelled("ConditionalCheckFailed", "TransactionConflict")),
        "transact_write_items",
        [],
    ),
    (_Failing(_client_error("ConditionalCheckFailedException")), "update_item", []),
    (_Failing(TimeoutError()), "query", []),
]


@pytest.mark.parametrize(
    ("client", "operation", "told"), WATCHED, ids=[f"{c[1]}-{n}" for n, c in enumerate(WATCHED)]
)
async def test_a_watcher_is_told_of_retries_and_throttling(
    client: Any, operation: str, told: list[tuple[str, str, int]]
) -> None:
    watcher = _Watcher()
    seam = EngineSeam(client, watcher)
    with suppress(errors.StorageError):
        await getattr(seam, operation)()
    assert watcher.told == told


async def test_a_watched_seam_over_another_counts_each_call_once() -> None:
    # The application's table: its client (already behind a seam) behind a watched seam,
    # and a request's metered table behind a seam of its own, unwatched.
    watcher = _Watcher()
    inner = at_seam(_Failing(_client_error("ThrottlingException", **RETRIED)))
    app_table = TableRef(EngineSeam(inner, watcher), "comments")
    request_table = TableRef(EngineSeam(app_table.client), "comments")
    with pytest.raises(errors.Throttled):
        await request_table.client.query()
    assert watcher.told == [("retried", "sdk", 2), ("throttled", "query", 1)]
