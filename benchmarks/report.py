"""The results page (docs/benchmarks/results.md) and its chart, from one results JSON."""

from __future__ import annotations

import json
import os
import platform
import statistics
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from benchmarks import targets as issue_targets

HERE = Path(__file__).resolve().parent
# The benchmarks' result pages, part of the manual (mkdocs.yml); raw figures stay in
# benchmarks/results/.
PAGES = HERE.parent / "docs" / "benchmarks"


def run_header(module: str, when: datetime) -> dict[str, str]:
    """What every result says of its run: when, on what machine, by which command."""
    return {
        "when": when.isoformat(timespec="seconds"),
        "machine": f"{platform.machine()}, {platform.python_implementation()} "
        f"{platform.python_version()}, {len(os.sched_getaffinity(0))} cores",
        "command": " ".join([f"python -m {module}", *sys.argv[1:]]),
    }


def save_result(
    prefix: str, result: dict[str, Any], when: datetime | None = None, *, tag: str = ""
) -> Path:
    """Write a benchmark's figures to ``results/<prefix>-<UTC stamp>[-<tag>].json``; the
    file's path."""
    out_dir = HERE / "results"
    out_dir.mkdir(exist_ok=True)
    stamp = (when or datetime.now(UTC)).strftime("%Y%m%dT%H%M%SZ")
    out = out_dir / f"{prefix}-{stamp}{'-' + tag if tag else ''}.json"
    out.write_text(json.dumps(result, indent=1) + "\n")
    return out


NOTES = [
    "- Rounds. A page planned from the counters (a rating or verified filter, a rating "
    "order) is planned from the process's snapshot of them while the counters themselves are "
    "read in the same round as its queries (`storage/reads/snapshots.py`); only the first request "
    "for a product in a process waits for them. A page read before under the same counters "
    "is sized from what the process saw there (its head): each partition is read for what "
    "the page takes from it plus one, so it completes in one round without head-room. A "
    "page met for the first time (a walk's deeper pages) is sized by head-room as before, "
    "and often needs its range round: see the head-room sweep for the trade of items read "
    "against rounds.",
    "- The floor is the same server, schema and queries with storage replaced by an in-memory "
    "fake holding the same data (`testing/fake_dynamo.py`, checked against the oracle in "
    "the test suite); the gap to it is mostly botocore's per-call CPU (request building, "
    "signing, response parsing), about 1 ms a call here.",
    "- `FAST_ATTRIBUTE_PARSING` hands DynamoDB attribute values over as decoded from JSON "
    "instead of letting botocore rebuild each one in Python (identical results for every "
    "type the project stores; tested). Its effect is the 'botocore attribute parsing' row.",
    "- Switching off botocore's client-side parameter validation was measured separately "
    "(150 fan-out pages, 4 runs): about 2-3 % less CPU, within noise, so it stays on.",
    "- First pages of large partitions are slower than deep ones on DynamoDB Local, for every "
    "reader: a descending query with no sort-key bound costs it more than a bounded one (see "
    "the blog's fan-out on 'no filter' against 'page 500'). Deep pages cost no more.",
    "- HTTP figures move between runs on this shared machine: 'ours, mixed' measured 166 to "
    "201 req/s over five full runs on 2026-11-21 (36 %, 42 %, 35 %, 32 % and 39 % of the "
    "floor). A settings row less than about 10 % from 'ours' is within that noise; the caches "
    "(about 1.6-1.7x) and the attribute pass-through (about 1.15-1.2x) stand out of it in "
    "every run.",
    "- Latency is in-process (no HTTP) on a shared 2-core machine with DynamoDB Local on the "
    "same cores; compare figures within one run, not across runs.",
]


def _fmt(value: float | None, digits: int = 2) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def _ratio(a: float | None, b: float | None) -> str:
    if a is None or b is None or b == 0:
        return "-"
    return f"{a / b:.2f}"


def _kinds_table(results: dict[str, Any]) -> list[str]:
    lines = [
        "| query kind | group | returned | ours: read/returned | calls | rounds | cold | RCU "
        "| GraphQL p50 ms | GraphQL p99 ms | storage p50 ms | blog: read/returned | blog p50 "
        "| naive: read/returned | naive calls | naive p50 |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for row in results["kinds"]:
        o, b, n = row["ours"], row["blog_fan_out"], row["naive_filter"]
        s = row["ours_storage"]
        lines.append(
            f"| {row['kind']['name']} | {row['kind']['group']} | {o['returned']} "
            f"| {_fmt(o['amplification'])} | {o['calls']} | {o['rounds']} "
            f"| {o.get('cold_rounds') or '-'} | {o['capacity_units']} "
            f"| {o['p50_ms']} | {o['p99_ms']} | {s['p50_ms']} | {_fmt(b['amplification'])} "
            f"| {b['p50_ms']} "
            f"| {_fmt(n['amplification'])} | {n['calls']} | {n['p50_ms']} |"
        )
    return lines


def _walk_summary(results: dict[str, Any]) -> dict[str, float]:
    ours = [a for w in results["walks"] for a in w["ours"]]
    blog = [a for w in results["walks"] for a in w["blog_fan_out"]]
    naive = [a for w in results["walks"] for a in w["naive_filter"]]
    rounds = [r for w in results["walks"] for r in w["ours_rounds"]]
    warm = [a for w in results["walks"] for a in w.get("ours_warm", [])]
    return {
        "pages": len(ours),
        "ours_median": statistics.median(ours),
        "blog_median": statistics.median(blog),
        "naive_median": statistics.median(naive),
        "ours_mean": statistics.fmean(ours),
        "warm_median": statistics.median(warm) if warm else float("nan"),
        "one_round": sum(r == 1 for r in rounds) / len(rounds),
        "within_two_rounds": sum(r <= 2 for r in rounds) / len(rounds),
        "within_three_rounds": sum(r <= 3 for r in rounds) / len(rounds),
    }


def targets(
    results: dict[str, Any], extras: dict[str, dict[str, Any]] | None = None
) -> list[tuple[str, str, bool]]:
    by_name = {k["kind"]["name"]: k["ours"] for k in results["kinds"]}
    first = by_name["no filter"]
    unfiltered_deep = [
        k
        for k in results["kinds"]
        if k["kind"]["group"] == "deep" and not k["kind"]["ratings"] and not k["kind"]["language"]
    ]
    deepest = max(unfiltered_deep, key=lambda k: k["kind"]["page"])
    deep, depth = deepest["ours"], deepest["kind"]["page"]
    numbered = [*issue_targets.rows(results), *_extra_rows(extras or {})]
    # In the issue's order (each row starts with its target's number).
    numbered.sort(key=lambda row: int(row[0].split(".", 1)[0]))
    return [
        *numbered,
        (
            f"page {depth} within 1.2x of page 1 in latency",
            f"{deep['p50_ms'] / first['p50_ms']:.2f}x",
            deep["p50_ms"] <= 1.2 * first["p50_ms"],
        ),
        (
            f"page {depth} reads the same items as page 1",
            f"{deep['items_read']} vs {first['items_read']} (+1 to learn has-more)",
            deep["items_read"] <= first["items_read"] + 1,
        ),
    ]


# Results of the benchmark's other steps that report into the results page: file prefix, module,
# and the number of the issue's target they measure.
EXTRAS = (
    ("proxy", "benchmarks.http.nginx_cache", "5"),
    ("part1", "benchmarks.writes.part1", "7"),
    ("facet-reads", "benchmarks.reads.facet_report", "8"),
    ("freshness", "benchmarks.http.freshness_report", "9"),
)


def newest_extras() -> dict[str, dict[str, Any]]:
    """The newest results file of each other step, by prefix (none: not run yet)."""
    import json

    found = {}
    for prefix, _, _ in EXTRAS:
        # Quick runs are smoke runs: the report quotes full ones.
        paths = sorted(
            p for p in (HERE / "results").glob(f"{prefix}-*.json") if not p.stem.endswith("-quick")
        )
        if paths:
            found[prefix] = {"file": paths[-1].name, **json.loads(paths[-1].read_text())}
    return found


def _extra_module(prefix: str) -> Any:
    import importlib

    name = next(module for p, module, _ in EXTRAS if p == prefix)
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError:
        return None


def _extra_rows(extras: dict[str, dict[str, Any]]) -> list[tuple[str, str, bool]]:
    rows = []
    for prefix, result in extras.items():
        module = _extra_module(prefix)
        if module is not None:
            number = next(n for p, _, n in EXTRAS if p == prefix)
            rows += [
                (f"{number}. {t}", f"{m} (`benchmarks/results/{result['file']}`)", ok)
                for t, m, ok in module.target_rows(result)
            ]
    return rows


def _extra_sections(extras: dict[str, dict[str, Any]]) -> list[str]:
    lines: list[str] = []
    for prefix, result in extras.items():
        module = _extra_module(prefix)
        if module is not None:
            lines += ["", *module.section(result)]
    return lines


def write_results_md(
    results: dict[str, Any],
    json_name: str,
    chart_name: str,
    extras: dict[str, dict[str, Any]] | None = None,
) -> Path:
    walk = _walk_summary(results)
    rounds = issue_targets.round_figures(results)
    lines = [
        "# Benchmark results",
        "",
        f"Generated by `./scripts/bench` from `benchmarks/results/{json_name}` ({results['when']}, "
        f"{results['machine']}). Rerun it to replace this file. In-process figures are "
        "medians over repeated requests; ratios compare figures from the same run.",
        "",
        f"Data: {results['data']['comments']} comments; hot product `{results['data']['hot']}` "
        f"with {results['data']['hot_size']} comments; DynamoDB Local {results['engine']} "
        "in memory.",
        "",
        "## Targets",
        "",
        "| target | measured | met |",
        "|---|---|---|",
        *[f"| {t} | {m} | {'yes' if ok else '**no**'} |" for t, m, ok in targets(results, extras)],
        "",
        "How the rounds are counted (`benchmarks/targets.py`): *warm* pages were read before "
        "by the process under the same counters; *cold* ones are a process's first request "
        "for the product. Pages met for the first time (each walk's pages on its first "
        f"pass): {rounds['first_visit_one']:.0%} of {rounds['first_visit_pages']} in one "
        f"storage round, {rounds['first_visit_two']:.0%} in at most 2.",
        "",
        "## Read amplification over multi-rating pages",
        "",
        f"Items read per item returned on the first {walk['pages'] // len(results['walks'])} "
        f"pages of {len(results['walks'])} multi-rating filters ({walk['pages']} pages, page "
        "size 20), all three readers at the same positions, returning the same pages; ours "
        "on the first pass (each page met for the first time) and read again (warm):",
        "",
        "| reader | median | mean |",
        "|---|---|---|",
        f"| ours | {walk['ours_median']:.3f} | {walk['ours_mean']:.3f} |",
        f"| ours, read again | {walk['warm_median']:.3f} | - |",
        f"| blog's fan-out | {walk['blog_median']:.3f} | "
        f"{statistics.fmean(a for w in results['walks'] for a in w['blog_fan_out']):.3f} |",
        f"| naive filter | {walk['naive_median']:.3f} | "
        f"{statistics.fmean(a for w in results['walks'] for a in w['naive_filter']):.3f} |",
        "",
        "Sequential storage rounds per page on the first pass, the counters' read included: "
        f"{walk['one_round']:.0%} of pages in 1, {walk['within_two_rounds']:.0%} in at most 2, "
        f"{walk['within_three_rounds']:.0%} in at most 3.",
        "",
        f"![read amplification and latency by query kind]({chart_name})",
        "",
        "## Head-room: reads against rounds",
        "",
        "The same walks at several values of the fan-out head-room z (`READ_HEADROOM`), at "
        "the storage layer. Lower z reads fewer items and needs a second, range round more "
        "often; each storage call costs about a millisecond of client CPU in botocore.",
        "",
        "| z | pages | median read/returned | mean | pages in one query round | calls per page "
        "| p50 ms |",
        "|---|---|---|---|---|---|---|",
        *[
            f"| {r['z']} | {r['pages']} | {r['median_amplification']:.3f} "
            f"| {r['mean_amplification']:.3f} | {r['one_query_round']:.0%} "
            f"| {r['mean_calls']:.2f} | {r['p50_ms']:.2f} |"
            for r in results.get("headroom_sweep", [])
        ],
        "",
        "## Per query kind (through the GraphQL schema, in process)",
        "",
        "`rounds` are sequential storage rounds of the repeated (warm) request, the "
        "counters' read included when the page waits for it; `cold` those of the first "
        "request for the product in a process. `storage p50` is ours at the storage layer "
        "(counters, plan, queries), as the blog and naive figures are, over the same "
        "positions; `GraphQL p50` adds parsing, validation and resolving.",
        "",
        *_kinds_table(results),
        "",
        "## Scale: the hot product grown 1k → 10k → 50k",
        "",
        "| product size | query | items read | p50 ms |",
        "|---|---|---|---|",
        *[
            f"| {row['size']} | {row['kind']} | {row['items_read']} | {row['p50_ms']} |"
            for row in results["scale"]
        ],
        "",
        "## HTTP (uvicorn, one worker, loopback, closed loop)",
        "",
        f"{results['http_concurrency']} connections, {results['http_seconds']} s per run after "
        "a 2 s warm-up. The floor serves the same queries from the same schema with storage "
        "replaced by an in-memory fake holding the same data.",
        "",
        "`server CPU` is the share of one core the server process used during the run, "
        "`engine CPU` DynamoDB Local's (both on the same two cores as the load generator).",
        "",
        "| server | mix | req/s | p50 ms | p99 ms | errors | vs ours | server CPU "
        "| server CPU ms/request | engine CPU |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    ours = {r["mix"]: r["req_per_s"] for r in results["http"] if r["config"] == "ours"}
    for r in results["http"]:
        lines.append(
            f"| {r['config']} | {r['mix']} | {r['req_per_s']} | {r['p50_ms']} | {r['p99_ms']} "
            f"| {r['errors']} | {_ratio(r['req_per_s'], ours.get(r['mix']))} "
            f"| {r.get('server_cpu', '-')} | {r.get('server_cpu_ms_per_request', '-')} "
            f"| {r.get('engine_cpu', '-')} |"
        )
    if results.get("profile"):
        lines += [
            "",
            "## Where the time goes (pyinstrument, in process, mixed workload)",
            "",
            "```",
            *results["profile"],
            "```",
        ]
    lines += ["", *issue_targets.capacity_section(results), *_extra_sections(extras or {})]
    cpu = PAGES / "cpu.md"
    if cpu.exists():
        # The per-call CPU study: measured by benchmarks.http.ab, kept with the results.
        lines += ["", "#" + cpu.read_text().rstrip()]
    lines += ["", "## Notes", "", *NOTES, *results.get("notes", [])]
    out = PAGES / "results.md"
    out.write_text("\n".join(lines) + "\n")
    return out


def write_chart(results: dict[str, Any], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    kinds = results["kinds"]
    names = [k["kind"]["name"] for k in kinds]
    readers = [
        ("ours_storage", "ours"),
        ("blog_fan_out", "blog fan-out"),
        ("naive_filter", "naive filter"),
    ]
    fig, (top, bottom) = plt.subplots(2, 1, figsize=(14, 9), sharex=True)
    width = 0.27
    xs = range(len(names))
    for n, (key, label) in enumerate(readers):
        amp = [k[key]["amplification"] or 0 for k in kinds]
        p50 = [k[key]["p50_ms"] for k in kinds]
        top.bar([x + (n - 1) * width for x in xs], amp, width, label=label)
        bottom.bar([x + (n - 1) * width for x in xs], p50, width, label=label)
    top.set_ylabel("items read per item returned")
    top.set_yscale("log")
    top.axhline(1.0, color="grey", linewidth=0.8)
    top.legend()
    top.set_title("Read amplification and latency by query kind")
    bottom.set_ylabel("p50 latency at the storage layer, ms")
    bottom.set_xticks(list(xs))
    bottom.set_xticklabels(names, rotation=60, ha="right", fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main() -> None:
    """Regenerate docs/benchmarks/results.md and chart.png from a results file (default: the
    newest)."""
    import json
    import sys

    paths = sorted((HERE / "results").glob("2*.json"))
    path = Path(sys.argv[1]) if len(sys.argv) > 1 else paths[-1]
    results = json.loads(path.read_text())
    write_chart(results, PAGES / "chart.png")
    print(write_results_md(results, path.name, "chart.png", newest_extras()))


if __name__ == "__main__":
    main()
