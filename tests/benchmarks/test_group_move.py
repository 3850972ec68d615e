"""The group move benchmark (benchmarks/writes/group_move.py, behind
docs/benchmarks/group-move.md) in its fast form: a product of 60 comments in group A moved
to B while writers write, priced, then a move interrupted and resumed; every end
state exact against brute force. Figures are checked for shape, never for speed."""

from __future__ import annotations

import json
import uuid

from benchmarks.writes import group_move, group_move_report
from storage.base.types import DynamoClient


async def test_the_fast_form_moves_exactly_and_reports(client: DynamoClient) -> None:
    table = f"group_move_{uuid.uuid4().hex[:8]}"
    result = await group_move.run(client, 60, 1, seed=3, table_name=table, baseline_comments=3)
    json.dumps(result)  # what the long form writes
    assert result["exact"]
    assert result["start"]["groups"][group_move.GROUPS[0]]["brute_force"] == 60
    for one, target in zip(result["timed"], group_move.GROUPS[1:], strict=True):
        assert one["to"] == target
        assert one["end"]["exact"]
        assert one["end"]["verify_exact"]
        held = one["end"]["groups"][target]
        assert held["brute_force"] == held["held"] == held["counters"] > 0
        assert one["moved"] > 0
        assert one["passes"] >= 1
        assert one["calls"]["transact_write_items"] >= one["moved"]
        assert one["aws"]["transactions"] >= one["moved"]
        assert one["aws"]["wcu_per_comment"] > 0
    assert result["baseline"]["create_wcu"] > 0
    assert result["wcu_per_comment_vs_create"] > 0
    cut = result["interrupted"]
    assert cut["cut_reached"], cut["cut_at"]
    assert cut["exact_at_cancel"]
    assert cut["end"]["exact"]
    assert cut["resumed"]["changed_membership"] is False
    assert cut["resumed"]["moved"] == cut["left_at_cancel"] > 0
    assert cut["redone"] == 0
    page = group_move_report.lines(result | {"when": "now", "machine": "test"}, "x.json")
    header = next(line for line in page if line.startswith("| move"))
    rows = [line for line in page if line.startswith("| 1 |")]
    assert [line.count("|") for line in rows] == [header.count("|")]
