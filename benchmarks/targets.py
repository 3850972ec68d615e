"""The targets the results page (docs/benchmarks/results.md) reports, each measured, from one
run's results (and the newest proxy and write-cost results beside them), and the
capacity-per-page table.

Rounds and reads are counted over pages that carry a rating filter ("filtered pages"):
- warm: the process has read the product's counters before and has read that page
  before, since the counters last moved (the query kinds, repeated; the walks, read a
  second time);
- first visit: the walks' pages as a reader paging through them meets each for the first
  time (counters warm after the walk's first page, no head remembered);
- cold: the first request for the product in a process (each kind from a fresh memory).
"""

from __future__ import annotations

import statistics
from typing import Any

Row = tuple[str, str, bool]


def filtered_kinds(results: dict[str, Any]) -> list[dict[str, Any]]:
    return [k for k in results["kinds"] if k["kind"]["ratings"]]


def _share(values: list[int], test: Any) -> float:
    return sum(1 for v in values if test(v)) / len(values) if values else 0.0


def round_figures(results: dict[str, Any]) -> dict[str, Any]:
    kinds = filtered_kinds(results)
    warm_kinds = [k["ours"]["rounds"] for k in kinds]
    cold_kinds = [k["ours"]["cold_rounds"] for k in kinds if k["ours"].get("cold_rounds")]
    walks = results["walks"]
    warm_walks = [r for w in walks for r in w.get("ours_warm_rounds", [])]
    first_visit = [r for w in walks for r in w["ours_rounds"]]
    # Each walk's first page is its cold one: no memory of the product before it.
    cold_walks = [w["ours_rounds"][0] for w in walks if w["ours_rounds"]]
    warm = warm_kinds + warm_walks
    cold = cold_kinds + cold_walks
    return {
        "warm_pages": len(warm),
        "warm_one": _share(warm, lambda r: r == 1),
        "warm_two": _share(warm, lambda r: r <= 2),
        "warm_kinds_one": _share(warm_kinds, lambda r: r == 1),
        "warm_walks_one": _share(warm_walks, lambda r: r == 1),
        "first_visit_pages": len(first_visit),
        "first_visit_one": _share(first_visit, lambda r: r == 1),
        "first_visit_two": _share(first_visit, lambda r: r <= 2),
        "cold_pages": len(cold),
        "cold_two": _share(cold, lambda r: r <= 2),
    }


def read_figures(results: dict[str, Any]) -> dict[str, float]:
    walks = results["walks"]
    first_visit = [a for w in walks for a in w["ours"]]
    warm = [a for w in walks for a in w.get("ours_warm", [])]
    first_pages = [
        k["ours"]["amplification"]
        for k in filtered_kinds(results)
        if k["kind"]["group"] == "first page" and len(k["kind"]["ratings"]) > 1
    ]
    return {
        "walk_first_visit": statistics.median(first_visit),
        "walk_warm": statistics.median(warm) if warm else float("nan"),
        "first_pages": statistics.median(first_pages),
        "first_pages_max": max(first_pages),
    }


def _http(results: dict[str, Any]) -> dict[tuple[str, str], dict[str, Any]]:
    return {(r["config"], r["mix"]): r for r in results.get("http", [])}


def cpu_rows(results: dict[str, Any]) -> list[Row]:
    http = _http(results)
    ours, floor = http.get(("ours", "mixed")), http.get(("floor", "mixed"))
    if ours is None or floor is None:
        return [("3. server CPU per request <= 1.6x the in-memory floor (mixed)", "-", False)]
    cpu = ours["server_cpu_ms_per_request"] / floor["server_cpu_ms_per_request"]
    rate = ours["req_per_s"] / floor["req_per_s"]
    rows = [
        (
            "3. server CPU per request <= 1.6x the in-memory floor (mixed)",
            f"{ours['server_cpu_ms_per_request']} ms against "
            f"{floor['server_cpu_ms_per_request']} ms: {cpu:.2f}x",
            cpu <= 1.6,
        ),
        (
            "3. HTTP throughput >= 60 % of the floor (mixed)",
            f"{ours['req_per_s']} against {floor['req_per_s']} req/s: {rate:.0%}",
            rate >= 0.6,
        ),
    ]
    two = http.get(("ours, 2 workers", "mixed"))
    if two is not None:
        rows.append(
            (
                "4. 2 workers against 1 (mixed; measured, 2 shared cores)",
                f"{two['req_per_s']} against {ours['req_per_s']} req/s: "
                f"{two['req_per_s'] / ours['req_per_s']:.2f}x",
                True,
            )
        )
    return rows


def capacity_rows(results: dict[str, Any]) -> list[dict[str, Any]]:
    """Read capacity per page and per 1,000 page views of every kind, ours and the blog's."""
    rows = []
    for k in results["kinds"]:
        ours, blog = k["ours"]["capacity_units"], k["blog_fan_out"]["capacity_units"]
        rows.append(
            {
                "kind": k["kind"]["name"],
                "ours": ours,
                "blog": blog,
                "ours_per_1000": ours * 1000,
                "blog_per_1000": blog * 1000,
                "ratio": None if not ours else blog / ours,
            }
        )
    return rows


def capacity_section(results: dict[str, Any]) -> list[str]:
    rows = capacity_rows(results)
    lines = [
        "## Read capacity per page",
        "",
        "Read capacity units (eventually consistent reads, as DynamoDB Local reports them "
        "per call) of one page of each kind, and of 1,000 views of it. Ours includes the "
        "counters' read (totals and the plan's counts); the blog's fan-out has no counters "
        "and shows no totals.",
        "",
        "| query kind | ours RCU/page | ours RCU per 1,000 views | blog RCU/page "
        "| blog RCU per 1,000 views | blog / ours |",
        "|---|---|---|---|---|---|",
    ]
    for r in rows:
        ratio = "-" if r["ratio"] is None else f"{r['ratio']:.2f}"
        lines.append(
            f"| {r['kind']} | {r['ours']:.2f} | {r['ours_per_1000']:.0f} | {r['blog']:.2f} "
            f"| {r['blog_per_1000']:.0f} | {ratio} |"
        )
    return lines


def capacity_target(results: dict[str, Any]) -> Row:
    rows = capacity_rows(results)
    ours = sum(r["ours_per_1000"] for r in rows)
    blog = sum(r["blog_per_1000"] for r in rows)
    filtered = [r for r in rows if r["ratio"] is not None and r["kind"] in _multi(results)]
    cheaper = sum(1 for r in filtered if r["ratio"] >= 1)
    return (
        "6. read capacity per page and per 1,000 views, every kind, ours against the blog",
        f"all kinds once each: {ours:.0f} against {blog:.0f} RCU per 1,000 views of each; "
        f"ours no dearer on {cheaper} of {len(filtered)} multi-rating kinds",
        cheaper == len(filtered),
    )


def _multi(results: dict[str, Any]) -> set[str]:
    return {k["kind"]["name"] for k in filtered_kinds(results) if len(k["kind"]["ratings"]) > 1}


def rows(results: dict[str, Any]) -> list[Row]:
    r = round_figures(results)
    a = read_figures(results)
    return [
        (
            "1. warm: >= 90 % of filtered pages in one storage round (counters' read included)",
            f"{r['warm_one']:.0%} of {r['warm_pages']} (query kinds {r['warm_kinds_one']:.0%}, "
            f"walks read again {r['warm_walks_one']:.0%})",
            r["warm_one"] >= 0.9,
        ),
        (
            "1. warm: <= 2 storage rounds for >= 99 % of filtered pages",
            f"{r['warm_two']:.1%}",
            r["warm_two"] >= 0.99,
        ),
        (
            "1. cold (first request for a product in a process): <= 2 rounds for >= 95 %",
            f"{r['cold_two']:.0%} of {r['cold_pages']}",
            r["cold_two"] >= 0.95,
        ),
        (
            "2. median read amplification over multi-rating pages <= 1.25 (walks, first visit)",
            f"{a['walk_first_visit']:.3f} (read again: {a['walk_warm']:.3f})",
            a["walk_first_visit"] <= 1.25,
        ),
        (
            "2. first pages of multi-rating filters <= 1.10 (median, warm)",
            f"{a['first_pages']:.3f} (highest {a['first_pages_max']:.3f})",
            a["first_pages"] <= 1.10,
        ),
        *cpu_rows(results),
        capacity_target(results),
    ]
