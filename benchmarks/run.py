"""The whole benchmark, end to end: ``./scripts/bench`` (or ``--quick`` for a smoke run).

Starts DynamoDB Local in memory, loads the data with the project's seeder, measures every
query kind through the GraphQL schema against the blog's fan-out and a naive filter, walks
multi-rating listings, grows the hot product 1k -> 10k -> 50k, runs the HTTP load against
our storage and the in-memory floor, profiles the mixed workload, and writes
``results/<timestamp>.json``, ``docs/benchmarks/results.md`` and its ``chart.png``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import sys
import time
from datetime import UTC, datetime
from typing import Any

from benchmarks import data, report
from benchmarks.http.throughput import run_http
from benchmarks.reads.inprocess import (
    QUERY,
    Kind,
    Runner,
    headroom_sweep,
    position_for,
    walk_amplification,
)
from server.dev.local_engine import LocalEngine
from storage.engine.client import ClientSettings, open_client
from storage.engine.table import TableRef
from storage.model import rules
from storage.reads.reader import batch_get_counts

TABLE = "bench"


def say(message: str) -> None:
    print(f"==> {message}", file=sys.stderr, flush=True)


async def small_products(table: TableRef) -> tuple[str, str, tuple[int, ...]]:
    """A small product with several comments, and one with a rating missing (and which)."""
    pids = [f"p-{n:03d}" for n in range(data.SMALL)]
    counts = await batch_get_counts(table, [(p, None) for p in pids])
    busy = max(counts, key=lambda c: c.total).product_id
    gap = next(c for c in counts if c.total > 100 and 0 in c.by_rating)
    missing = gap.by_rating.index(0) + 1
    present = [r for r in rules.RATINGS if gap.count(r) > 0]
    return busy, gap.product_id, (missing, *present[:2])


def kinds(busy: str, gap: str, gap_ratings: tuple[int, ...], deep: tuple[int, int]) -> list[Kind]:
    hot = data.HOT
    mid, far = deep
    return [
        Kind("no filter", "first page", hot),
        Kind("no filter, size 10", "page size", hot, size=10),
        Kind("no filter, size 50", "page size", hot, size=50),
        Kind("language de", "first page", hot, "de"),
        Kind("rating 2", "first page", hot, ratings=(2,)),
        Kind("ratings 1,2", "first page", hot, ratings=(1, 2)),
        Kind("ratings 4,5", "first page", hot, ratings=(4, 5)),
        Kind("ratings 1,2,3", "first page", hot, ratings=(1, 2, 3)),
        Kind("ratings 1,2,3,4", "first page", hot, ratings=(1, 2, 3, 4)),
        Kind("ratings 1,2,3, size 10", "page size", hot, ratings=(1, 2, 3), size=10),
        Kind("ratings 1,2,3, size 50", "page size", hot, ratings=(1, 2, 3), size=50),
        Kind("fr + ratings 1,2", "first page", hot, "fr", (1, 2)),
        Kind("de + ratings 2,3,4", "first page", hot, "de", (2, 3, 4)),
        Kind("en + ratings 1,2,3,4", "first page", hot, "en", (1, 2, 3, 4)),
        Kind("set with an empty rating", "first page", gap, ratings=gap_ratings),
        Kind("small product, ratings 1,2", "first page", busy, ratings=(1, 2)),
        Kind(f"no filter, page {mid}", "deep", hot, page=mid),
        Kind(f"no filter, page {far}", "deep", hot, page=far),
        Kind(f"ratings 1,2, page {mid}", "deep", hot, ratings=(1, 2), page=mid),
        Kind(f"no filter, backward at page {mid}", "backward", hot, page=mid, backward=True),
        Kind(
            f"ratings 1,2, backward at page {mid}",
            "backward",
            hot,
            ratings=(1, 2),
            page=mid,
            backward=True,
        ),
    ]


WALKS = [
    (None, (1, 2)),
    (None, (4, 5)),
    (None, (1, 2, 3)),
    (None, (2, 3, 4)),
    (None, (1, 2, 3, 4)),
    (None, (1, 3, 4, 5)),
    ("fr", (1, 2)),
    ("de", (2, 3, 4)),
    ("en", (1, 2, 5)),
]


def scale_kinds() -> list[tuple[int, Kind]]:
    out = []
    for size, product in data.SCALE.items():
        out += [
            (size, Kind("no filter, first page", "scale", product)),
            (size, Kind("no filter, page 40", "scale", product, page=40)),
            (size, Kind("ratings 1,2, first page", "scale", product, ratings=(1, 2))),
            (size, Kind("ratings 1,2, page 8", "scale", product, ratings=(1, 2), page=8)),
        ]
    return out


async def measure(args: argparse.Namespace, engine: LocalEngine) -> dict[str, Any]:
    async with open_client(ClientSettings(endpoint_url=engine.endpoint_url)) as client:
        table = TableRef(client, TABLE)
        comments = data.comments(args.seed, args.hot_size)
        say(f"seeding {len(comments)} comments")
        started = time.perf_counter()
        await data.load(table, comments)
        seeded = time.perf_counter() - started
        busy, gap, gap_ratings = await small_products(table)
        runner = Runner(table, args.repeats)
        rows = []
        say("query kinds (ours through GraphQL, baselines at the same positions)")
        selected = kinds(busy, gap, gap_ratings, args.deep)
        # Untimed pass over every kind first: the engine's JIT and the client's pools would
        # otherwise make whichever kind is measured first look slow.
        for kind in selected:
            await runner.ours(kind, await position_for(table, kind))
        bodies: list[bytes] = []
        first_bodies: list[bytes] = []
        for kind in selected:
            rows.append(await runner.kind(kind))
            position = await position_for(table, kind)
            body = json.dumps({"query": QUERY, "variables": runner._variables(kind, position)})
            bodies.append(body.encode())
            if kind.group == "first page":
                first_bodies.append(body.encode())
            print(f"    {kind.name}: ours {rows[-1]['ours']['amplification']}", file=sys.stderr)
        say("multi-rating walks")
        walks = []
        for language, ratings in WALKS:
            kind = Kind(f"walk {language} {ratings}", "walk", data.HOT, language, ratings)
            walk = await walk_amplification(table, kind, args.walk_pages)
            walks.append({"language": language, "ratings": list(ratings), **walk})
        say("head-room sweep")
        walk_kinds = [
            Kind(f"walk {language} {ratings}", "walk", data.HOT, language, ratings)
            for language, ratings in WALKS
        ]
        sweep = await headroom_sweep(table, walk_kinds, args.walk_pages, [0.0, 0.25, 0.5, 1.0, 2.0])
        say("scale series")
        scale = []
        for size, kind in scale_kinds():
            if size > args.hot_size:
                continue
            measured = await runner.ours(kind, await position_for(table, kind))
            scale.append({"size": size, "kind": kind.name, **measured.summary()})
        profile = await profile_mixed(runner, selected, table) if args.profile else []
    return {
        "data": {
            "comments": len(comments),
            "hot": data.HOT,
            "hot_size": args.hot_size,
            "seed": args.seed,
            "seeded_seconds": round(seeded, 1),
        },
        "kinds": rows,
        "walks": walks,
        "headroom_sweep": sweep,
        "scale": scale,
        "profile": profile,
        "mixes": {"mixed": bodies, "first pages": first_bodies},
    }


async def profile_mixed(runner: Runner, selected: list[Kind], table: TableRef) -> list[str]:
    from pyinstrument import Profiler

    say("profiling the mixed workload in process")
    positions = [await position_for(table, k) for k in selected]
    profiler = Profiler(async_mode="enabled")
    profiler.start()
    for _ in range(5):
        for kind, position in zip(selected, positions, strict=True):
            await runner.ours(kind, position)
    profiler.stop()
    text = profiler.output_text(unicode=False, color=False, show_all=False)
    return [line for line in text.splitlines() if line.strip()][:60]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small data and short runs")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--no-profile", dest="profile", action="store_false")
    args = parser.parse_args()
    args.hot_size = 10_000 if args.quick else 50_000
    args.repeats = 5 if args.quick else 30
    args.walk_pages = 8 if args.quick else 25
    args.http_seconds = 3.0 if args.quick else 20.0
    args.http_concurrency = 16
    args.deep = (20, 60) if args.quick else (100, 500)
    started = time.perf_counter()
    with LocalEngine() as engine:
        measured = asyncio.run(measure(args, engine))
        mixes = measured.pop("mixes")
        say("HTTP load")
        http = run_http(
            mixes,
            engine_url=engine.endpoint_url,
            table=TABLE,
            seed=args.seed,
            hot_size=args.hot_size,
            seconds=args.http_seconds,
            concurrency=args.http_concurrency,
            engine_pid=engine.pid,
        )
    when = datetime.now(UTC)
    results = {
        "when": when.isoformat(timespec="seconds"),
        "machine": f"{platform.machine()}, {platform.python_implementation()} "
        f"{platform.python_version()}, {len(os.sched_getaffinity(0))} cores",
        "engine": "3.3.0",
        "quick": args.quick,
        **measured,
        "http": http,
        "http_seconds": args.http_seconds,
        "http_concurrency": args.http_concurrency,
        "duration_seconds": round(time.perf_counter() - started, 1),
        "notes": [],
    }
    out_dir = report.HERE / "results"
    out_dir.mkdir(exist_ok=True)
    stamp = when.strftime("%Y%m%dT%H%M%SZ")
    json_name = f"{stamp}{'-quick' if args.quick else ''}.json"
    (out_dir / json_name).write_text(json.dumps(results, indent=1) + "\n")
    report.write_chart(results, report.PAGES / "chart.png")
    path = report.write_results_md(results, json_name, "chart.png", report.newest_extras())
    say(f"wrote {out_dir / json_name}, {path} and chart.png in {results['duration_seconds']} s")
    for target, measured_value, ok in report.targets(results, report.newest_extras()):
        print(f"  {'met ' if ok else 'MISS'}  {target}: {measured_value}")


if __name__ == "__main__":
    main()
