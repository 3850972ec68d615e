"""Load with nothing lost: a short soak of the mixed workload against a live server, and
DynamoDB Local killed under load and started again while the server keeps running."""

from __future__ import annotations

import asyncio
import os
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from reliability.soak import ENGINE_WINDOW, Driver, Losses, SoakReport, losses, snapshot
from resolvers.auth import mint
from server.dev.local_engine import LocalEngine
from storage.engine.client import ClientSettings, open_client
from storage.engine.table import TableRef
from storage.model.comments import NewComment
from storage.ops.create import create_table
from storage.ops.verify import verify
from testing.live_server import LiveServer, live_server
from tests.api_helpers import SECRET
from tests.helpers import create_many, stamp

PRODUCTS = [f"soak-{n}" for n in range(6)]
HOT = "soak-hot"


def _token(sub: str) -> str:
    return mint(SECRET, sub)


async def _seed(table: TableRef) -> None:
    await create_table(table.client, table.name, stream=False)
    await create_many(
        table,
        [
            NewComment(
                PRODUCTS[n % len(PRODUCTS)],
                ["en", "de", "fr"][n % 3],
                [5, 5, 4, 1, 3][n % 5],
                f"seed {n}",
                f"seeder{n % 7}",
                created_at=stamp(n),
            )
            for n in range(150)
        ],
    )


@pytest.fixture(scope="module")
async def soak_table(table: TableRef) -> TableRef:
    own = TableRef(table.client, f"soak_{uuid.uuid4().hex[:8]}")
    await _seed(own)
    return own


@pytest.fixture(scope="module")
def server(engine: LocalEngine, soak_table: TableRef) -> Iterator[LiveServer]:
    with live_server(engine.endpoint_url, soak_table.name, SECRET) as running:
        yield running


@pytest.mark.slow
async def test_short_soak_loses_nothing(server: LiveServer, soak_table: TableRef) -> None:
    before = await snapshot(server.graphql_url, [*PRODUCTS, HOT])
    driver = Driver(server.graphql_url, _token, PRODUCTS, HOT, seed=3)
    report = await driver.run(seconds=15, concurrency=8)
    after = await snapshot(server.graphql_url, [*PRODUCTS, HOT])
    assert report.requests > 100
    assert report.by_kind["create"] > 0
    assert report.by_kind["delete"] > 0
    assert set(report.codes) <= {"CONFLICT"}, report.codes  # retried; nothing else expected
    assert report.gave_up == 0
    # No crash here, so nothing may be put down to the engine either.
    assert losses(before, after, report) == Losses(0, 0, 0, 0, ())
    check = await verify(soak_table)
    assert check.describe() == []


@pytest.mark.slow
@pytest.mark.engine
async def test_engine_killed_under_load_and_restarted(tmp_path: Path) -> None:
    """Reads, creates and deletes while the engine is SIGKILLed and started again.

    DynamoDB Local can drop a transaction it acknowledged in the milliseconds before the
    kill (``python -m reliability.engine_durability``); such a loss is told apart by its
    acknowledgement time (``losses``) and allowed, anything else fails the test."""
    engine = LocalEngine(data_dir=tmp_path / "engine")
    await asyncio.to_thread(engine.start)
    try:
        async with open_client(ClientSettings(endpoint_url=engine.endpoint_url)) as client:
            own = TableRef(client, "restart")
            await _seed(own)
        with live_server(engine.endpoint_url, own.name, SECRET, STORAGE_TIMEOUT="2") as running:
            before = await snapshot(running.graphql_url, [*PRODUCTS, HOT])
            driver = Driver(running.graphql_url, _token, PRODUCTS, HOT, seed=5)
            load = asyncio.create_task(driver.run(seconds=12, concurrency=8))
            await asyncio.sleep(3)
            driver.report.kills.append(time.monotonic())
            await asyncio.to_thread(engine.kill)
            await asyncio.sleep(3)
            await asyncio.to_thread(engine.start)
            report = await load
            # The same server process, healthy again without a restart.
            os.kill(running.pid, 0)
            async with httpx.AsyncClient(timeout=5) as http:
                health = await http.get(f"{running.base_url}/healthz")
            assert (health.json()["status"], health.json()["storage"]) == ("ok", "up")
            after = await snapshot(running.graphql_url, [*PRODUCTS, HOT])
        outage = report.codes["STORAGE_UNAVAILABLE"] + report.codes["TRANSPORT"]
        assert outage > 0, report.codes  # the kill did hit requests in flight
        assert "INTERNAL_SERVER_ERROR" not in report.codes
        assert report.gave_up == 0
        assert report.by_kind["delete"] > 0
        lost = losses(before, after, report)
        assert lost.none, lost
        async with open_client(ClientSettings(endpoint_url=engine.endpoint_url)) as client:
            check = await verify(TableRef(client, "restart"))
        assert check.describe() == []
    finally:
        await asyncio.to_thread(engine.stop)


def _report(created: dict[str, list[str]], deleted: list[str], **acked: float) -> SoakReport:
    report = SoakReport(created={p: set(ids) for p, ids in created.items()}, deleted=set(deleted))
    report.acked_at.update(acked)
    return report


def test_losses_counts_what_the_clients_were_not_told() -> None:
    before = {"p": ["old", "gone"]}
    report = _report({"p": ["new", "lost"]}, ["gone", "undead"], new=1.0, lost=2.0, undead=3.0)
    after = {"p": ["old", "new", "new", "undead", "stray"]}
    assert losses(before, after, report) == Losses(
        missing=1, duplicated=1, resurrected=1, unexpected=1
    )


def test_losses_near_a_crash_are_the_engines_and_only_those() -> None:
    report = _report({"p": ["a", "b", "c"]}, ["d", "e"], a=10.0, b=10.1, c=9.0, d=9.9, e=12.0)
    report.kills.append(10.05)
    after = {"p": ["d", "e"]}  # a, b, c missing; d, e resurrected
    lost = losses({"p": ["d", "e"]}, after, report)
    # a (acknowledged 50 ms before), b (50 ms after: answered before the kill reached us)
    # and d (150 ms before) are within the window; c and e are not.
    assert ENGINE_WINDOW < 1.0
    assert lost.ours() == {"missing": 1, "duplicated": 0, "resurrected": 1, "unexpected": 0}
    found = [(comment_id, write, round(gap)) for comment_id, write, gap in lost.at_engine_crash]
    assert found == [("a", "create", 50), ("b", "create", -50), ("d", "delete", 150)]
