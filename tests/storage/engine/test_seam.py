"""The seam (storage.engine.seam): every engine failure leaves storage as one of its own errors."""

from __future__ import annotations

from typing import Any

import pytest
from botocore.exceptions import ClientError, EndpointConnectionError, ReadTimeoutError

from storage.base import errors
from storage.base.types import Response
from storage.engine.seam import EngineSeam, at_seam
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
