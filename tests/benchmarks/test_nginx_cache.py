"""The proxy benchmark's report lines, from its committed result: what the main report takes."""

from __future__ import annotations

import json
from pathlib import Path

from benchmarks.http import nginx_cache as proxy


def test_the_latest_result_gives_a_section_and_targets() -> None:
    result = proxy.latest()
    assert result is not None
    lines = proxy.section(result)
    assert lines[0] == "## Product pages through nginx"
    assert any(line.startswith("| API alone |") for line in lines)
    assert any(line.startswith("| through nginx |") for line in lines)
    rows = proxy.target_rows(result)
    assert len(rows) == 4
    assert all(isinstance(met, bool) and target and measured for target, measured, met in rows)


def test_a_late_comment_misses_the_visibility_target() -> None:
    result = proxy.latest()
    assert result is not None
    late = {**result["visibility"], "max_s": result["visibility"]["bound_s"] + 0.1}
    rows = proxy.target_rows({**result, "visibility": late})
    assert rows[-1][2] is False


def test_page_views_follow_popularity() -> None:
    products = [f"p-{n}" for n in range(10)]
    views = proxy.popular(products, 10_000, seed=1)
    assert views.count("p-0") > 4 * views.count("p-9") > 0
    assert views == proxy.popular(products, 10_000, seed=1)


def test_latest_takes_the_newest_of_the_kind_asked_for(tmp_path: Path) -> None:
    for name in ("proxy-20260101T000000Z.json", "proxy-20260102T000000Z-quick.json"):
        (tmp_path / name).write_text(json.dumps({"name": name}))
    assert proxy.latest(tmp_path) == {"name": "proxy-20260102T000000Z-quick.json"}
    assert proxy.latest(tmp_path, quick=False) == {"name": "proxy-20260101T000000Z.json"}
    assert proxy.latest(tmp_path / "none") is None
