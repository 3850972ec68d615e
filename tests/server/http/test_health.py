"""The health checks: storage's ping, /readyz (and /healthz) answering through it, and /livez
answering without it."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest

from storage.base.errors import StorageUnavailable
from storage.engine.health import ping
from storage.engine.table import TableRef
from tests.api_helpers import running_api
from tests.helpers import FaultyClient, client_error


async def test_ping_returns_when_the_table_answers(table: TableRef) -> None:
    counting = FaultyClient(table.client, lambda name, kwargs: None)
    await ping(TableRef(counting, table.name))
    assert counting.calls == ["get_item"]


async def test_ping_of_a_missing_table_is_storage_unavailable(table: TableRef) -> None:
    with pytest.raises(StorageUnavailable) as caught:
        await ping(TableRef(table.client, "no_such_table"))
    assert "ResourceNotFoundException" in str(caught.value.__cause__)


@pytest.mark.parametrize(
    "error",
    [
        client_error("InternalServerError", "GetItem"),
        ConnectionResetError("connection reset by peer"),
        TimeoutError("read timed out"),
    ],
    ids=["server-error", "connection-reset", "read-timeout"],
)
async def test_engine_failures_are_storage_unavailable_with_the_cause_kept(
    table: TableRef, error: Exception
) -> None:
    failing = FaultyClient(table.client, lambda name, kwargs: error)
    with pytest.raises(StorageUnavailable) as caught:
        await ping(TableRef(failing, table.name))
    assert caught.value.__cause__ is error


async def test_errors_that_are_not_the_engine_are_not_disguised(table: TableRef) -> None:
    bug = RuntimeError("a bug, not an outage")
    failing = FaultyClient(table.client, lambda name, kwargs: bug)
    with pytest.raises(RuntimeError) as caught:
        await ping(TableRef(failing, table.name))
    assert caught.value is bug


async def test_healthz_answers_through_ping(table: TableRef) -> None:
    counting = FaultyClient(table.client, lambda name, kwargs: None)
    async with running_api(counting, table.name) as api:
        response = await api.http.get("/healthz")
    assert (response.status_code, response.json()) == (200, {"status": "ok", "storage": "up"})
    assert counting.calls == ["get_item"]


async def test_healthz_is_503_when_storage_is_down(
    table: TableRef, caplog: pytest.LogCaptureFixture
) -> None:
    def down(name: str, kwargs: dict[str, Any]) -> Exception:
        return client_error("InternalServerError", "DescribeTable")

    async with running_api(FaultyClient(table.client, down), table.name) as api:
        response = await api.http.get("/healthz")
    assert response.status_code == 503
    assert response.json() == {"status": "unavailable", "storage": "down"}
    assert "health check: storage unavailable (ClientError)" in caplog.text


class _SlowTable(FaultyClient):
    """GetItem (the ping's call) answers after longer than the request's storage deadline."""

    async def get_item(self, **kwargs: Any) -> dict[str, Any]:
        await asyncio.sleep(5)
        return await super().get_item(**kwargs)


async def test_healthz_is_503_when_storage_answers_too_late(
    table: TableRef, caplog: pytest.LogCaptureFixture
) -> None:
    slow = _SlowTable(table.client, lambda name, kwargs: None)
    async with running_api(slow, table.name, storage_timeout=0.2) as api:
        started = time.monotonic()
        response = await api.http.get("/healthz")
    assert time.monotonic() - started < 2
    assert (response.status_code, response.json()) == (
        503,
        {"status": "unavailable", "storage": "down"},
    )
    assert "health check: storage unavailable (TimeoutError)" in caplog.text


async def test_liveness_reads_nothing_and_readiness_follows_storage(table: TableRef) -> None:
    # A storage outage makes the process unready (no traffic) but never unalive (no
    # restart): /livez makes no storage call at all.
    def down(name: str, kwargs: dict[str, Any]) -> Exception:
        return client_error("InternalServerError", "GetItem")

    counting = FaultyClient(table.client, down)
    async with running_api(counting, table.name) as api:
        live = await api.http.get("/livez")
        before = len(counting.calls)
        ready = await api.http.get("/readyz")
        again = await api.http.get("/livez")
    assert (live.status_code, live.json()) == (200, {"status": "ok"})
    assert again.status_code == 200
    assert ready.status_code == 503
    assert counting.calls[before:] == ["get_item"]  # readiness pinged; liveness did not
