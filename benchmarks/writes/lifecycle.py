"""Figures for the life of a comment: verified reads and the capacity of every transition.

    .venv/bin/python -m benchmarks.writes.lifecycle [--quick] [--seed 7]

Starts DynamoDB Local in memory, bulk-loads two products with 10 % and 50 % verified
comments and a product for the write measurements, then

- walks verified-only listings with ours, the blog's design with a filter and a naive
  filter (``benchmarks.reads.verified``);
- runs every transition of a comment's life through a capacity probe
  (``benchmarks.writes.costs``, priced by ``benchmarks.scale.capacity``);

and writes ``results/lifecycle-<timestamp>.json`` and ``docs/benchmarks/lifecycle.md``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import random
import sys
import time
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

from benchmarks.reads import verified as verified_reads
from benchmarks.report import HERE
from benchmarks.writes import costs as write_costs
from benchmarks.writes import lifecycle_report
from server.dev.demo import synthetic_comments
from server.dev.local_engine import LocalEngine
from storage.engine.client import ClientSettings, open_client
from storage.engine.table import TableRef

TABLE = "lifecycle"


def say(message: str) -> None:
    print(f"==> {message}", file=sys.stderr, flush=True)


async def measure(args: argparse.Namespace, engine: LocalEngine) -> dict[str, Any]:
    async with open_client(ClientSettings(endpoint_url=engine.endpoint_url)) as client:
        table = TableRef(client, TABLE)
        comments = verified_reads.product_comments(args.seed, args.product_size)
        # The product the transitions write to: comments in every rating (so a leaderboard
        # entry), 30 % of them verified.
        rng = random.Random(args.seed + 1)
        steady = synthetic_comments([(write_costs.PRODUCT, 500, False)], rng)
        comments += [replace(c, verified=rng.random() < 0.3) for c in steady]
        say(f"seeding {len(comments)} comments")
        started = time.perf_counter()
        await verified_reads.load(table, comments)
        seeded = time.perf_counter() - started
        say("verified listings: ours, the blog with a filter, a naive filter")
        reads = await verified_reads.measure(table, comments, args.pages)
        say("transitions through the capacity probe")
        writes = await write_costs.measure(table, args.repeats)
    return {
        "data": {
            "comments": len(comments),
            "product_size": args.product_size,
            "seed": args.seed,
            "seeded_seconds": round(seeded, 1),
        },
        "page_size": verified_reads.PAGE,
        "pages_per_walk": args.pages,
        "repeats": args.repeats,
        "reads": reads,
        "writes": writes,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small data and short runs")
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    args.product_size = 5_000 if args.quick else 50_000
    args.pages = 4 if args.quick else 10
    args.repeats = 3 if args.quick else 9
    started = time.perf_counter()
    with LocalEngine() as engine:
        measured = asyncio.run(measure(args, engine))
    when = datetime.now(UTC)
    results = {
        "when": when.isoformat(timespec="seconds"),
        "machine": f"{platform.machine()}, {platform.python_implementation()} "
        f"{platform.python_version()}, {len(os.sched_getaffinity(0))} cores",
        "engine": "DynamoDB Local 3.3.0",
        "quick": args.quick,
        "command": " ".join(["python -m benchmarks.writes.lifecycle", *sys.argv[1:]]),
        **measured,
        "duration_seconds": round(time.perf_counter() - started, 1),
    }
    out_dir = HERE / "results"
    out_dir.mkdir(exist_ok=True)
    stamp = when.strftime("%Y%m%dT%H%M%SZ")
    json_name = f"lifecycle-{stamp}{'-quick' if args.quick else ''}.json"
    (out_dir / json_name).write_text(json.dumps(results, indent=1) + "\n")
    path = lifecycle_report.write(results, json_name)
    say(f"wrote {out_dir / json_name} and {path} in {results['duration_seconds']} s")


if __name__ == "__main__":
    main()
