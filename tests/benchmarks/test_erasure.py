"""The erasure benchmark (benchmarks/writes/erasure.py, behind docs/benchmarks/erasure.md) in
its fast form: 20 comments per author, erased in both modes, one while the author writes;
every end state exact. Figures are checked for shape, never for speed."""

from __future__ import annotations

import json
import uuid

from benchmarks.writes import erasure
from storage.base.types import DynamoClient


async def test_the_fast_form_erases_exactly_and_reports(client: DynamoClient) -> None:
    table = f"erasure_{uuid.uuid4().hex[:8]}"
    result = await erasure.run(client, 20, table_name=table)
    json.dumps(result)  # what the long form writes
    assert result["exact"]
    assert result["baseline"]["deleted"] == 20
    deleting, anonymizing = result["erasures"]
    assert deleting["mode"] == "DELETE"
    assert deleting["counts"]["comments"] >= 20
    assert deleting["counts"]["votes"] >= 10
    assert deleting["passes"] >= 2
    assert deleting["calls"]["scan"] >= 2 * 4
    assert anonymizing["counts"] == {"comments": 20, "votes": 10, "reports": 2, "replies": 0}
    assert anonymizing["passes"] == 2
    for one in result["erasures"]:
        assert one["state"] == "DONE"
        assert one["verify_exact"]
        assert one["total_calls"] == sum(one["calls"].values())
