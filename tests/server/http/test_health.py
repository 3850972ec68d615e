"""The health checks: storage's ping, /readyz (and /healthz) answering through it, and /livez
answering without it."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from server.dev.local_engine import LocalEngine
from storage.base.errors import StorageUnavailable
from storage.engine.health import ping
from storage.engine.table import TableRef
from storage.model.layout_version import CODE_LAYOUT, TableLayout
from testing.live_server import LiveServer, live_server
from tests.api_helpers import SECRET, running_api, token
from tests.helpers import FaultyClient, client_error, own_table


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


async def _readiness(server: LiveServer, status: int, says: str = "") -> dict[str, Any]:
    """/readyz's body once it answers ``status`` with ``says`` in it (the process reads the
    layout every 0.2 s; the bound guards against a hang, it is no timing)."""
    async with httpx.AsyncClient(base_url=server.base_url, timeout=5) as http:
        for _ in range(600):
            response = await http.get("/readyz")
            if response.status_code == status and says in response.text:
                break
            await asyncio.sleep(0.05)
    assert response.status_code == status, response.text
    assert says in response.text, response.text
    body: dict[str, Any] = response.json()
    return body


async def test_readiness_says_when_the_table_or_the_code_is_behind(
    engine: LocalEngine, table: TableRef, tmp_path: Path
) -> None:
    # A table made whole by this code, whose processes read its layout every 0.2 s.
    own = await own_table(table, "layout")
    await own.client.put_item(TableName=own.name, Item=TableLayout.new_table(0.8).to_item())

    async def record(layout: TableLayout) -> None:
        await own.client.put_item(TableName=own.name, Item=layout.to_item())

    create = {
        "query": 'mutation { createComment(input: {productId: "p-fenced", rating: 5, '
        'language: "en", body: "Hi"}) { comment { id } } }'
    }
    bearer = {"authorization": f"Bearer {token('ann')}"}
    with (
        (tmp_path / "server.log").open("w+b") as log,
        live_server(engine.endpoint_url, own.name, SECRET, log=log) as server,
    ):
        ready = await _readiness(server, 200)
        assert ready["status"] == "ok"
        # A newer release raised the fence: this process writes nothing and says so.
        await record(TableLayout(CODE_LAYOUT + 1, CODE_LAYOUT + 1, CODE_LAYOUT, 0.8))
        await _readiness(server, 503, "deploy the newer release")
        async with httpx.AsyncClient(timeout=10) as http:
            refused = (await http.post(server.graphql_url, json=create, headers=bearer)).json()
        assert refused["errors"][0]["extensions"]["code"] == "STORAGE_UNAVAILABLE"
        # A table behind this code (its indexes of an older layout): run migrate-table.
        await record(TableLayout(CODE_LAYOUT - 1, CODE_LAYOUT - 1, CODE_LAYOUT - 1, 0.8))
        await _readiness(server, 503, "run `comments migrate-table`")
        # Caught up: ready again, and writes pass.
        await record(TableLayout.new_table(0.8))
        await _readiness(server, 200, f"layout {CODE_LAYOUT}")
        async with httpx.AsyncClient(timeout=10) as http:
            made = (await http.post(server.graphql_url, json=create, headers=bearer)).json()
        assert made["data"]["createComment"]["comment"]["id"]
        log.seek(0)
        logged = log.read().decode()
    assert "table layout: this code writes layout" in logged
    assert "table layout: this code needs layout" in logged
