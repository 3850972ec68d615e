"""The freshness benchmark's report (``benchmarks.http.freshness``'s results): its targets,
met or not, its section of the results page, and its own page, docs/benchmarks/freshness.md.
Pure: it reads a results dict, never a server."""

from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path
from typing import Any

from benchmarks.reads.inprocess import percentile
from benchmarks.report import HERE, PAGES

VISIBLE_P99_SECONDS = 1.0
MIN_WRITES = 200
SHARE_GOAL = 0.95
CPU_RATIO_GOAL = 0.25
KIND_ORDER = ("create", "edit", "reject")
KIND_LABEL = {"create": "new comment", "edit": "edit", "reject": "rejection"}


def spread(values: list[float]) -> dict[str, Any]:
    """n, median, p90, p99 and max of some seconds (None when there are none)."""
    if not values:
        return {"n": 0, "median": None, "p90": None, "p99": None, "max": None}
    return {
        "n": len(values),
        "median": round(statistics.median(values), 4),
        "p90": round(percentile(values, 0.90), 4),
        "p99": round(percentile(values, 0.99), 4),
        "max": round(max(values), 4),
    }


def visibility(result: dict[str, Any]) -> dict[str, Any]:
    """The freshness phase's delays: seen through the proxy, reached every process, and
    seen after reaching every process; overall and by kind."""
    writes = result["freshness"]["writes"]
    seen = [w["seen_s"] for w in writes if w["seen_s"] is not None]
    by_kind = {
        kind: spread([w["seen_s"] for w in writes if w["kind"] == kind and w["seen_s"] is not None])
        for kind in KIND_ORDER
    }
    reached = [w["reached_all_s"] for w in writes if w["reached_all_s"] is not None]
    first = [min(w["events_s"].values()) for w in writes if w["events_s"]]
    after = [
        w["seen_s"] - w["reached_all_s"]
        for w in writes
        if w["seen_s"] is not None and w["reached_all_s"] is not None
    ]
    caches: dict[str, int] = {}
    for w in writes:
        if w["seen_cache"] is not None:
            caches[w["seen_cache"]] = caches.get(w["seen_cache"], 0) + 1
    return {
        "writes": len(writes),
        "unseen": len(writes) - len(seen),
        "unreached": sum(w["reached_all_s"] is None for w in writes),
        "seen": spread(seen),
        "by_kind": by_kind,
        "first_process": spread(first),
        "every_process": spread(reached),
        "seen_after_every_process": spread(after),
        "over_target": sorted(
            (w for w in writes if w["seen_s"] is None or w["seen_s"] >= VISIBLE_P99_SECONDS),
            key=lambda w: -(w["seen_s"] or 1e9),
        ),
        "seen_by": dict(sorted(caches.items())),
        # How long the poll that first showed each write took (a miss waits for a server).
        "seen_fetch": spread(
            [w["seen_fetch_ms"] / 1000 for w in writes if w.get("seen_fetch_ms") is not None]
        ),
        "write": spread([w["write_ms"] / 1000 for w in writes]),
    }


def proxy_share(result: dict[str, Any]) -> dict[str, Any]:
    """Through the proxy: Varnish's hits at the load generator, against what the servers
    received and executed."""
    mix = result["proxy_mix"]
    sent = mix["requests"]
    cache = mix["cache"]
    counts = mix["counts"]
    return {
        "sent": sent,
        "hits": cache.get("HIT", 0),
        "misses": cache.get("MISS", 0),
        "hit_share": cache.get("HIT", 0) / sent if sent else 0.0,
        "received": counts["received"],
        "map_hits": counts["map_hits"],
        "executed": counts["executed"],
        "unexecuted_share": 1 - counts["executed"] / sent if sent else 0.0,
        "writes": mix["writes"],
        "misses_per_write": cache.get("MISS", 0) / mix["writes"] if mix["writes"] else None,
    }


def direct_share(result: dict[str, Any]) -> dict[str, Any]:
    """Straight to the servers, over every round: answers from the maps against GETs sent."""
    rows = [r["ours"] for r in result["direct_rounds"]]
    sent = sum(r["requests"] for r in rows)
    hits = sum(r["counts"]["map_hits"] for r in rows)
    received = sum(r["counts"]["received"] for r in rows)
    executed = sum(r["counts"]["executed"] for r in rows)
    writes = result["direct_rounds"][-1]["writes_during_rounds"] if rows else 0
    return {
        "sent": sent,
        "map_hits": hits,
        "received": received,
        "executed": executed,
        "share": hits / sent if sent else 0.0,
        "unexecuted_share": 1 - executed / received if received else 0.0,
        # Writes went on while the floor was loaded too: an upper bound of those that
        # dropped answers the rounds of ours then executed again.
        "writes": writes,
        "executions_per_write": executed / writes if writes else None,
    }


def cpu(result: dict[str, Any]) -> dict[str, Any]:
    """Server CPU per request, ours (in-process answers) against the floor: medians over
    the rounds, and the median of the ratios taken within each round."""
    rounds = result["direct_rounds"]
    if not rounds:
        return {"rounds": 0, "ours_ms": None, "floor_ms": None, "ratio": None}
    ours = [r["ours"]["server_cpu_ms_per_request"] for r in rounds]
    floor = [r["floor"]["server_cpu_ms_per_request"] for r in rounds]
    ratios = [o / f for o, f in zip(ours, floor, strict=True) if f]
    return {
        "rounds": len(rounds),
        "ours_ms": statistics.median(ours),
        "floor_ms": statistics.median(floor),
        "ratio": statistics.median(ratios) if ratios else None,
        "ours_req_per_s": statistics.median(r["ours"]["req_per_s"] for r in rounds),
        "floor_req_per_s": statistics.median(r["floor"]["req_per_s"] for r in rounds),
        "engine_ms": statistics.median(
            r["ours"].get("engine_cpu_ms_per_request", 0.0) for r in rounds
        ),
    }


def _s(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f} s"


def target_rows(result: dict[str, Any]) -> list[tuple[str, str, bool]]:
    """(target, measured, met), in the work item's order."""
    seen = visibility(result)
    overall = seen["seen"]
    kinds = ", ".join(f"{KIND_LABEL[k]} p99 {_s(seen['by_kind'][k]['p99'])}" for k in KIND_ORDER)
    products = result["settings"]["products"]
    proxy = proxy_share(result)
    direct = direct_share(result)
    spent = cpu(result)
    check = result["checker"]
    compared = check["compared"]
    ratio = spent["ratio"]
    return [
        (
            f"a new comment, an edit and a rejection visible through the proxy: p99 under "
            f"{VISIBLE_P99_SECONDS:g} s from the write's answer, over at least {MIN_WRITES} "
            f"writes on {products} products while readers load them",
            f"p99 {_s(overall['p99'])}, median {_s(overall['median'])}, max "
            f"{_s(overall['max'])} over {overall['n']} of {seen['writes']} writes ({kinds})",
            seen["writes"] >= MIN_WRITES
            and seen["unseen"] == 0
            and overall["p99"] is not None
            and overall["p99"] < VISIBLE_P99_SECONDS,
        ),
        (
            f"read-heavy mix through the proxy: >= {SHARE_GOAL:.0%} of anonymous GETs "
            "answered by Varnish (X-Cache at the load generator)",
            f"{proxy['hit_share']:.2%} ({proxy['hits']} of {proxy['sent']}); the servers "
            f"received {proxy['received']} (misses: {proxy['misses']}) and executed "
            f"{proxy['executed']}: {proxy['unexecuted_share']:.2%} answered without "
            "executing",
            proxy["hit_share"] >= SHARE_GOAL,
        ),
        (
            f"read-heavy mix straight to the servers: >= {SHARE_GOAL:.0%} of anonymous GETs "
            "answered from the process's map",
            f"{direct['share']:.2%} ({direct['map_hits']} of {direct['sent']}); the servers "
            f"received {direct['received']} and executed {direct['executed']}",
            direct["share"] >= SHARE_GOAL,
        ),
        (
            f"server CPU per request with in-process answers <= {CPU_RATIO_GOAL:g}x the "
            "floor's (no proxy; medians of interleaved rounds)",
            "-"
            if ratio is None
            else f"{ratio:.3f}x ({spent['ours_ms']:.3f} ms against {spent['floor_ms']:.3f} ms "
            f"a request, {spent['rounds']} rounds)",
            ratio is not None and ratio <= CPU_RATIO_GOAL,
        ),
        (
            "no stale answer: after each write reached every process (and 2 s), every "
            "product through the proxy and from each server equals an uncached read",
            f"{check['mismatches']} mismatches over {compared['proxy'] + compared['direct']} "
            f"comparisons ({compared['proxy']} through the proxy, {compared['direct']} "
            f"straight to a server) in {check['passes']} passes; "
            f"{len(check['unchecked'])} products left unchecked",
            check["mismatches"] == 0 and not check["unchecked"],
        ),
    ]


def _cache(counts: dict[str, int]) -> str:
    return ", ".join(f"{k} {v}" for k, v in counts.items()) or "-"


def section(result: dict[str, Any], *, own_page: bool = False) -> list[str]:
    """Markdown lines: the run, and its figures by target."""
    settings = result["settings"]
    seen = visibility(result)
    proxy = proxy_share(result)
    direct = direct_share(result)
    spent = cpu(result)
    check = result["checker"]
    readers = result["freshness"]["readers"]
    load = result.get("load_average")
    lines = [
        "## Freshness through Varnish and the answer maps",
        "",
        f"`python -m benchmarks.http.freshness` ({result['when']}, {result['machine']}, "
        f"`benchmarks/results/{result['file']}`): {settings['servers']} servers on one "
        f"DynamoDB Local table with the fan-out broker, the shipped Varnish in front, "
        f"{settings['products']} products ({result['data']['comments']} comments)"
        + (
            ""
            if load is None
            else f"; the machine's load average {load['before'][0]:g} before, "
            f"{load['after'][0]:g} after"
        )
        + ("." if own_page else "; [Freshness at the edge](freshness.md) explains."),
        "",
        "| seconds from the write's answer | n | median | p90 | p99 | max |",
        "|---|---|---|---|---|---|",
    ]
    rows = [(f"{KIND_LABEL[k]}, seen through the proxy", seen["by_kind"][k]) for k in KIND_ORDER]
    rows += [
        ("every write, seen through the proxy", seen["seen"]),
        ("the change at the first process", seen["first_process"]),
        ("the change at every process", seen["every_process"]),
        ("seen through the proxy, after every process had it", seen["seen_after_every_process"]),
        ("the poll that first showed the write took", seen["seen_fetch"]),
        ("the write itself took (to its answer)", seen["write"]),
    ]
    for label, s in rows:
        lines.append(
            f"| {label} | {s['n']} | {_s(s['median'])} | {_s(s['p90'])} | {_s(s['p99'])} "
            f"| {_s(s['max'])} |"
        )
    per_write = proxy["misses_per_write"]
    executions = direct["executions_per_write"]
    lines += [
        "",
        f"{settings['writes']} writes, {settings['write_rate']:g} a second, straight to the "
        f"servers in turn; after each answer a reader polled the page through the proxy "
        f"every {settings['poll_seconds'] * 1000:g} ms until it showed the write, while "
        f"{settings['readers']} reader connections loaded the pages through the proxy "
        f"({readers['req_per_s']:g} pages/s; X-Cache {_cache(readers['cache'])}). The "
        f"first poll that showed a write was answered {_cache(seen['seen_by'])}. *At every "
        "process*: every server's subscription to the product had the write's event (a "
        "process's map is told of a change before its subscribers).",
        "",
        "| read-heavy mix (one write a second) | GETs | answered without GraphQL | by "
        "| servers received | servers executed |",
        "|---|---|---|---|---|---|",
        f"| through the proxy, {settings['mix_seconds']:g} s | {proxy['sent']} "
        f"| {proxy['hit_share']:.2%} | Varnish (X-Cache HIT {proxy['hits']}, MISS "
        f"{proxy['misses']}) | {proxy['received']} | {proxy['executed']} |",
        f"| straight to the servers, {spent['rounds']} rounds of "
        f"{settings['round_seconds']:g} s | {direct['sent']} | {direct['share']:.2%} "
        f"| the processes' maps ({direct['map_hits']} hits) | {direct['received']} "
        f"| {direct['executed']} |",
        "",
        f"Through the proxy: {proxy['writes']} writes, "
        + ("-" if per_write is None else f"{per_write:.1f}")
        + " misses a write (the purge, and its repeat a second later); misses a server "
        f"answered from its map: {proxy['map_hits']}. Straight "
        f"to the servers: at most {direct['writes']} writes over the rounds, "
        + ("-" if executions is None else f"{executions:.1f}")
        + " executions a write (each drops the product's page from every process's map).",
        "",
    ]
    same = result["floor_same_pages"]
    if spent["ratio"] is not None:
        lines += [
            f"Server CPU per request straight to the servers: {spent['ours_ms']:.3f} ms with "
            f"the maps against {spent['floor_ms']:.3f} ms for the floor executing every "
            f"request ({spent['ratio']:.3f}x, median of the ratios within each of "
            f"{spent['rounds']} interleaved rounds; {spent['ours_req_per_s']:g} against "
            f"{spent['floor_req_per_s']:g} req/s, {settings['concurrency']} connections). "
            f"DynamoDB Local used {spent['engine_ms']:.3f} ms a request. Before the "
            f"writes, the floor answered {same['same']} of {same['products']} products' "
            "pages exactly as the servers did.",
            "",
        ]
    passes = check.get("pass_seconds") or []
    lines.append(
        f"Stale answers: {check['mismatches']} over "
        f"{check['compared']['proxy'] + check['compared']['direct']} comparisons after "
        f"{check['passes']} writes ({check['products_checked']} product checks, "
        f"{check['retried']} taken again because a write started meanwhile"
        + (
            f"; a pass over every product took a median {statistics.median(passes):.2f} s"
            if passes
            else ""
        )
        + ")."
    )
    return lines


def _direct_table(result: dict[str, Any]) -> list[str]:
    lines = [
        "| round | order | ours req/s | ours CPU ms/request | floor req/s "
        "| floor CPU ms/request | ratio | map hits / GETs |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for n, r in enumerate(result["direct_rounds"], 1):
        ours, floor = r["ours"], r["floor"]
        ratio = (
            ours["server_cpu_ms_per_request"] / floor["server_cpu_ms_per_request"]
            if floor["server_cpu_ms_per_request"]
            else 0.0
        )
        hits = ours["counts"]["map_hits"] / ours["requests"] if ours["requests"] else 0.0
        lines.append(
            f"| {n} | {', '.join(r['order'])} | {ours['req_per_s']:g} "
            f"| {ours['server_cpu_ms_per_request']:.3f} | {floor['req_per_s']:g} "
            f"| {floor['server_cpu_ms_per_request']:.3f} | {ratio:.3f} | {hits:.2%} |"
        )
    return lines


def _slow_writes(result: dict[str, Any]) -> list[str]:
    slow = visibility(result)["over_target"]
    if not slow:
        return [f"No write took {VISIBLE_P99_SECONDS:g} s or more to show through the proxy."]
    lines = [
        f"Writes that took {VISIBLE_P99_SECONDS:g} s or more to show through the proxy "
        "(seconds from the write's answer):",
        "",
        "| write | kind | product | at every process | seen | seen by | polls |",
        "|---|---|---|---|---|---|---|",
    ]
    for w in slow[:20]:
        lines.append(
            f"| {w['n']} | {w['kind']} | {w['product']} | {_s(w['reached_all_s'])} "
            f"| {_s(w['seen_s'])} | {w['seen_cache'] or '-'} | {w['polls']} |"
        )
    return lines


def _mismatches(result: dict[str, Any]) -> list[str]:
    found = result["checker"]["mismatch_details"]
    if not found:
        return []
    lines = [
        "",
        "| write | product | where | X-Cache | what differed | right 1.5 s later |",
        "|---|---|---|---|---|---|",
    ]
    for m in found:
        lines.append(
            f"| {m['write']} | {m['product']} | {m['where']} | {m['x_cache']} "
            f"| {m['difference']} | {m.get('healed')} |"
        )
    return lines


# Why the figures are what they are; the page's last part.
NOTES = [
    "- **Where a write's delay goes.** The table's stream: the process holding the shard "
    "(the fan-out's claimed reader) polls it every `STREAM_POLL_SECONDS` (0.25 s), so a "
    "change waits about half a poll and a GetRecords call (*the change at the first "
    "process*). The fan-out: the holder publishes the batch on Redis and every process "
    "receives it within about a millisecond; *at every process* is when the slowest "
    "process's subscription had the write's event, which is resolved after the process's "
    "map was told, so the maps had it somewhat sooner. The purge: the holder sends it once "
    "it has published, and Varnish drops the product's pages. Last, the next poll (every "
    "20 ms) and, for most writes, its miss: the page executed by a server (*the poll that "
    "first showed the write took*). A write first seen on a HIT was fetched fresh by "
    "another reader in between.",
    "- **The tail is the machine.** Four servers, DynamoDB Local, Redis, Varnish, the "
    "floor, the readers, the checker and the load generator share two cores, with other "
    "work on them (the load average is in the table of runs): a process that gets the CPU "
    "late applies a change late, and a miss waits for a busy server. Between runs the "
    "tails move far more than the medians, as other work on the machine comes and goes; "
    "in the first run (started at a load average of 7) the slowest write reached two of "
    "the four processes 0.65 s after the other two.",
    "- **The race the repeat purge is for.** The purge is sent once the batch is "
    "published, not once every process has applied it: a miss in between can be answered "
    "from the map of a process that has not yet dropped the page, and Varnish would keep "
    "that answer until the purge's repeat `PURGE_REPEAT_SECONDS` (1 s) later. A write "
    "caught by it shows about a second after its purge; *Slow writes* lists every write "
    "that took a second or more. DynamoDB Local updates its indexes with the table; on "
    "DynamoDB a listing read from a global secondary index right after the write may lag "
    "it by a fraction of a second, which the same repeat covers, and which this "
    "benchmark cannot show.",
    "- **Why so few misses.** A write purges its product's tags (and `all`) twice, the "
    "purge and its repeat, so each write costs at most about two misses of its product's "
    "page through the proxy (the second only when the page was asked for in between), "
    "whatever the read rate: at R page views a second and W writes a second, at least "
    "about 1 - 2W/R of them are hits. The closed-loop load generator asks for "
    "tens of thousands of pages a second here (it is the limit), hence 99.99 %; the "
    "readers of the freshness phase, at 200 pages a second with two writes a second and "
    "the watchers' polls, miss more often (their X-Cache counts are above). A miss "
    "reaches a server whose map was "
    "told to drop that page at about the same moment, so misses through the proxy are "
    "executed, seldom answered from a map.",
    "- **Straight to the servers** every GET reaches a process; a write drops the page "
    "from every process's map, so each costs about one execution a process (four here); "
    "concurrent misses of one page in a process wait for one execution.",
    "- **CPU per request.** What an answer from the map still costs: the HTTP exchange "
    "(uvicorn, httptools), the middleware (request id, metrics, CORS, security headers), "
    "the map's key (SHA-256 over the parameters' canonical JSON), and gzip and the ETag, "
    "per request. The floor does all of that and executes the page's GraphQL over its "
    "in-memory data (20 comments with their fields, the counters). Ours is the sum over "
    "the four servers, their background work included (the fan-out's subscription, the "
    "stream reader, Varnish's health probes, the writes of one a second). Half of what is "
    "left is compression: the map keeps an answer's bytes before compression, so every "
    "answer from it is gzipped again; a py-spy profile of one server answering these page "
    "views from its map (2026-11-28) had 49 % of its samples in Starlette's "
    "`GZipResponder._compress_body`. Keeping the compressed bytes and their ETag with the "
    "entry would take most of that away.",
    "- **Counting.** The share answered from the maps is hits over GETs sent: "
    '`comments_cache_lookups_total{cache="answers"}` counts a request that missed and '
    "then waited for another request's execution of the same answer as a miss and a hit "
    "(two lookups), so hits / (hits + misses) would understate it slightly. Executions are "
    "`comments_storage_rounds_count` of the page's operation, observed for every executed "
    "request and never for one from the map: hits and executions add up to the requests "
    "the servers counted, and through the proxy those equal the misses counted at the "
    "load generator (the test suite checks both sums).",
    "- **The checker** compares the page's `data` (answers to POSTs carry their request's "
    "id). A product is compared only while none of its writes is unsettled (sent, and not "
    "both at every process and 2 s old); a check that saw a write start meanwhile is taken "
    "again, so every product was compared after every write, each against one state of "
    "the table.",
]


def history(directory: Path = HERE / "results") -> list[dict[str, Any]]:
    """Every full run's results, oldest first, each with its file's name."""
    paths = sorted(p for p in directory.glob("freshness-*.json") if not p.stem.endswith("-quick"))
    return [{"file": p.name, **json.loads(p.read_text())} for p in paths]


def _runs_table(runs: list[dict[str, Any]]) -> list[str]:
    lines = [
        "| run | load average before, after | seen p99 | seen max | Varnish hits | map hits "
        "| CPU vs floor | stale answers |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for run in runs:
        seen = visibility(run)["seen"]
        spent = cpu(run)
        load = run.get("load_average")
        loads = "-" if load is None else f"{load['before'][0]:g}, {load['after'][0]:g}"
        ratio = "-" if spent["ratio"] is None else f"{spent['ratio']:.3f}x"
        lines.append(
            f"| `{run['file']}` | {loads} | {_s(seen['p99'])} | {_s(seen['max'])} "
            f"| {proxy_share(run)['hit_share']:.2%} | {direct_share(run)['share']:.2%} "
            f"| {ratio} | {run['checker']['mismatches']} |"
        )
    return lines


def page(result: dict[str, Any], runs: list[dict[str, Any]]) -> str:
    """docs/benchmarks/freshness.md's text: the targets, the run, the details, every full
    run (``runs``), the notes."""
    targets = [f"| {t} | {m} | {'yes' if ok else '**no**'} |" for t, m, ok in target_rows(result)]
    lines = [
        "# Freshness at the edge",
        "",
        "`.venv/bin/python -m benchmarks.http.freshness` (about ten minutes; `--quick` for a "
        "smoke run of about two) measures how soon a write shows through the shipped Varnish "
        "in front of several servers, whether any answer is stale once a write has reached "
        "every process, and what the cache and each process's map of answers save "
        "([Running them](index.md#running-them) says what it runs). "
        "`python -m benchmarks.http.freshness_report` writes this page again from a saved run.",
        "",
        "## Targets",
        "",
        "| target | measured | met |",
        "|---|---|---|",
        *targets,
        "",
        "## The run",
        "",
        *section(result, own_page=True)[2:],
        "",
        "### Slow writes",
        "",
        *_slow_writes(result),
        *_mismatches(result),
        "",
        "### Straight to the servers, round by round",
        "",
        *_direct_table(result),
        "",
        "## Every full run",
        "",
        "The same benchmark on the same machine; the load average (one minute) is the "
        "machine's, other work included.",
        "",
        *_runs_table(runs),
        "",
        "## Notes",
        "",
        *NOTES,
    ]
    return "\n".join(lines).rstrip() + "\n"


def write_page(result: dict[str, Any], runs: list[dict[str, Any]] | None = None) -> str:
    """Write docs/benchmarks/freshness.md for ``result`` (every full run saved so far unless
    ``runs``); its path."""
    path = PAGES / "freshness.md"
    path.write_text(page(result, history() if runs is None else runs))
    return str(path)


def latest(directory: Path = HERE / "results") -> Path | None:
    """The newest full run's results (quick runs are smoke runs, never the page's)."""
    found = sorted(p for p in directory.glob("freshness-*.json") if not p.stem.endswith("-quick"))
    return found[-1] if found else None


def main() -> None:
    """Write docs/benchmarks/freshness.md again from a results file (default: the newest
    full run's)."""
    path = Path(sys.argv[1]) if len(sys.argv) > 1 else latest()
    if path is None:
        raise SystemExit("no results yet: run python -m benchmarks.http.freshness")
    result = {"file": path.name, **json.loads(path.read_text())}
    print(write_page(result))


if __name__ == "__main__":
    main()
