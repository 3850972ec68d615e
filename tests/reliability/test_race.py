"""The race phase of the reliability run, short: two server processes on one engine."""

from __future__ import annotations

import pytest

from reliability.race import run_race
from server.dev.local_engine import LocalEngine
from storage.engine.table import TableRef
from testing.live_server import live_server
from tests.api_helpers import SECRET
from tests.helpers import own_table


@pytest.mark.slow
async def test_races_through_two_processes_leave_no_drift(
    engine: LocalEngine, table: TableRef
) -> None:
    own = await own_table(table, "race")
    with (
        live_server(engine.endpoint_url, own.name, SECRET) as first,
        live_server(engine.endpoint_url, own.name, SECRET) as second,
    ):
        summary = await run_race(
            [first, second], engine.endpoint_url, own.name, SECRET, operations=300, seed=3
        )
    assert summary["problems"] == []
    assert summary["counterDrifts"] == 0
    outcomes = summary["outcomes"]
    # The phase raced what it means to race: keys reused for other requests, replays,
    # deletes that lost to another delete.
    assert outcomes.get("create IDEMPOTENCY_KEY_REUSED", 0) > 0
    assert outcomes.get("create replayed", 0) > 0
    assert outcomes.get("delete NOT_FOUND", 0) > 0
