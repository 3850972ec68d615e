"""The freshness benchmark (benchmarks/http/freshness.py with its writes, checker, loads and
report, behind docs/benchmarks/freshness.md) in its fast form: one server behind the
shipped Varnish with the broker (each server takes seconds of the two cores to start; the
long form runs four), the floor beside it, two products, six writes, loads of half a
second. Its accounting is checked, never its timings: every write answered, seen
through the proxy and heard by every process; the checker compared every product from
every source after every write; the proxy's hits and misses, the servers' requests from
their maps and executed, add up. The checker's own test shows it finds a stale source."""

from __future__ import annotations

import json
from dataclasses import asdict
from typing import Any

import httpx
import pytest

from benchmarks import data
from benchmarks.http import freshness, freshness_report
from benchmarks.http.freshness_checker import StaleChecker, describe
from benchmarks.http.freshness_writes import Chain, Write, settle_after, shows
from server.dev.local_engine import LocalEngine
from testing.live_server import LiveServer

# Two products and six writes: each product's edit, rejection and a new comment (its first
# comment is written while warming up).
TINY = freshness.Config(
    products=2,
    servers=1,
    writes=6,
    write_rate=4.0,
    readers=2,
    reader_rate=20.0,
    settle_seconds=0.5,
    mix_seconds=0.5,
    rounds=1,
    round_seconds=0.5,
    warmup_seconds=0.2,
    views=200,
)


@pytest.fixture(scope="module")
def result(engine: LocalEngine) -> dict[str, Any]:
    measured = freshness.measure(TINY, engine, log=lambda _: None)
    return {
        "when": "now",
        "machine": "test",
        "file": "freshness-test.json",
        "settings": asdict(TINY),
        **measured,
    }


def test_every_write_is_answered_seen_through_the_proxy_and_heard_by_every_process(
    result: dict[str, Any],
) -> None:
    writes = result["freshness"]["writes"]
    assert [w["n"] for w in writes] == list(range(TINY.writes))
    kinds = sorted(w["kind"] for w in writes)
    assert kinds == ["create", "create", "edit", "edit", "reject", "reject"]
    assert all(w["seen_s"] is not None and w["polls"] >= 1 for w in writes)
    every = [str(n) for n in range(TINY.servers)]
    assert all(sorted(w["events_s"]) == every for w in writes)
    assert all(w["reached_all_s"] == max(w["events_s"].values()) for w in writes)
    # Straight to each server in turn.
    assert {w["server"] for w in writes} == set(range(TINY.servers))
    assert result["freshness"]["subscriptions_ended"] == []
    readers = result["freshness"]["readers"]
    assert sum(readers["cache"].values()) == readers["requests"] > 0


def test_the_checker_compared_every_product_from_every_source_after_every_write(
    result: dict[str, Any],
) -> None:
    check = result["checker"]
    assert check["passes"] == TINY.writes
    assert check["products_checked"] == TINY.writes * TINY.products
    assert check["compared"] == {
        "proxy": TINY.writes * TINY.products,
        "direct": TINY.writes * TINY.products * TINY.servers,
    }
    assert check["unchecked"] == []
    assert len(check["mismatch_details"]) == min(check["mismatches"], 50)


def test_the_floor_holds_the_servers_pages(result: dict[str, Any]) -> None:
    assert result["floor_same_pages"] == {"same": TINY.products, "products": TINY.products}
    assert result["data"]["comments"] == len(data.pages(TINY.seed, TINY.products))


def test_hits_misses_and_executions_add_up_through_the_proxy(result: dict[str, Any]) -> None:
    mix = result["proxy_mix"]
    assert set(mix["cache"]) <= {"HIT", "MISS"}
    assert sum(mix["cache"].values()) == mix["requests"] > 0
    counts = mix["counts"]
    # Only misses reach the servers; each is answered from a map or executed.
    assert counts["received"] == mix["cache"].get("MISS", 0)
    assert counts["map_hits"] + counts["executed"] == counts["received"]
    assert mix["writes"] >= 1


def test_hits_and_executions_add_up_straight_to_the_servers(result: dict[str, Any]) -> None:
    (found,) = result["direct_rounds"]
    assert sorted(found["order"]) == ["floor", "ours"]
    ours, floor = found["ours"], found["floor"]
    assert ours["counts"]["received"] == ours["requests"] > 0
    assert ours["counts"]["map_hits"] + ours["counts"]["executed"] == ours["requests"]
    assert ours["counts"]["map_hits"] > 0
    # The floor follows no stream, so it keeps nothing: every request executed.
    assert floor["counts"]["received"] == floor["counts"]["executed"] == floor["requests"] > 0
    assert floor["counts"]["map_hits"] == 0
    assert ours["server_cpu_ms_per_request"] > 0
    assert floor["server_cpu_ms_per_request"] > 0


def test_the_report_renders_the_run(result: dict[str, Any]) -> None:
    json.dumps(result)  # what the long form writes
    rows = freshness_report.target_rows(result)
    assert len(rows) == 5
    assert all(isinstance(met, bool) and target and measured for target, measured, met in rows)
    assert rows[0][2] is False  # six writes are not the two hundred the target asks for
    lines = freshness_report.section(result)
    assert lines[0] == "## Freshness through Varnish and the answer maps"
    start = next(n for n, line in enumerate(lines) if line.startswith("| seconds from"))
    end = lines.index("", start)
    table = lines[start:end]
    assert len(table) == 2 + 9  # the header, its rule, a row for each figure
    assert all(line.count("|") == table[0].count("|") for line in table)
    text = freshness_report.page(result, [result])
    assert text.startswith("# Freshness at the edge\n")
    assert "| `freshness-test.json` |" in text  # the table of every full run
    assert text.count("| yes |") + text.count("| **no** |") == len(rows)


def _page(comments: dict[str, str], total: int | None = None) -> dict[str, Any]:
    edges = [{"node": {"commentId": c, "body": b}} for c, b in comments.items()]
    return {
        "data": {
            "product": {
                "stats": {"total": len(comments) if total is None else total},
                "comments": {"edges": edges},
            }
        }
    }


def _write(kind: str, body: str | None = None) -> Write:
    write = Write(0, kind, "p", 0, 0.0, comment_id="c1", body=body)  # type: ignore[arg-type]
    write.acked = 1.0
    return write


def test_a_page_shows_each_kind_of_write() -> None:
    page = _page({"c1": "new words", "c2": "old"})
    assert shows(_write("create"), page) is True
    assert shows(_write("create"), _page({"c2": "old"})) is False
    assert shows(_write("edit", "new words"), page) is True
    assert shows(_write("edit", "other words"), page) is False
    assert shows(_write("reject"), page) is False
    assert shows(_write("reject"), _page({"c2": "old"})) is True
    assert shows(_write("reject"), {"data": None, "errors": [{"message": "x"}]}) is None


def test_a_write_settles_at_every_process_and_no_sooner_than_its_age() -> None:
    write = _write("create")
    write.reached_all = 1.3
    assert settle_after(write, 2.0, 10.0) == 3.0
    write.reached_all = 4.5
    assert settle_after(write, 2.0, 10.0) == 4.5
    write.reached_all = None  # a process never heard of it: the timeout
    assert settle_after(write, 2.0, 10.0) == 11.0


def test_describe_names_what_differs() -> None:
    fresh = _page({"c1": "a", "c2": "b"})["data"]
    stale = _page({"c2": "B"}, total=3)["data"]
    said = describe(fresh, stale)
    assert "missing comments ['c1']" in said
    assert "comments differing ['c2']" in said
    assert "stats" in said
    assert describe(fresh, fresh) == "no difference in the page's fields"


async def test_the_checker_finds_a_stale_source() -> None:
    """A proxy that keeps an old page is a mismatch for every product it serves, and only
    it: the servers' answers equal the uncached read."""
    fresh, stale = _page({"c1": "a", "c2": "b"}), _page({"c2": "b"})
    proxy_port = 9

    def answer(request: httpx.Request) -> httpx.Response:
        if request.method == "GET" and request.url.port == proxy_port:
            return httpx.Response(200, json=stale, headers={"x-cache": "HIT"})
        return httpx.Response(200, json=fresh)

    servers = [LiveServer(7, 1), LiveServer(8, 2)]
    chains = [Chain("p1"), Chain("p2")]
    async with httpx.AsyncClient(transport=httpx.MockTransport(answer)) as http:
        checker = StaleChecker(
            http, servers, f"http://127.0.0.1:{proxy_port}", chains, heal_seconds=0
        )
        await checker.check(3)
    assert checker.compared == {"proxy": 2, "direct": 4}
    assert checker.mismatch_count == 2
    assert {(m["product"], m["where"], m["x_cache"]) for m in checker.mismatches} == {
        ("p1", "proxy", "HIT"),
        ("p2", "proxy", "HIT"),
    }
    assert all(
        m["healed"] is False and "missing comments" in m["difference"] for m in checker.mismatches
    )
