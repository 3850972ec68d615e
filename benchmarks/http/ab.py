"""Same-run comparison of HTTP settings rows: the mixed workload, rounds interleaved, medians.

    .venv/bin/python -m benchmarks.http.ab --rounds 5 --seconds 6 \\
        --config ours --config floor --config "ours, botocore attribute parsing" \\
        --extra "ours, no access log:ACCESS_LOG=false"

Every server (one per row, from ``benchmarks.http.throughput.CONFIGS`` or ``--extra``) runs for
the whole session over one DynamoDB Local with the quick data set; each round loads them
one after another in a shuffled order, so the machine's drift falls on all rows alike. It
prints, per row, the median server CPU per request and requests per second over the rounds,
and both as ratios to the floor taken within each round. ``--profile ROW`` records the
server of that row with py-spy during one extra load and prints where its CPU went.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import statistics
import subprocess
import sys
import tempfile
from collections import Counter
from contextlib import ExitStack
from pathlib import Path

from benchmarks import data
from benchmarks.http.loadgen import run_load
from benchmarks.http.throughput import CONFIGS, ROOT, cpu_seconds, server
from benchmarks.reads.inprocess import QUERY, Runner, position_for
from benchmarks.run import TABLE, kinds, small_products
from server.dev.local_engine import LocalEngine
from storage.engine.client import ClientSettings, open_client
from storage.engine.table import TableRef
from storage.ops.create import create_table


def _settings(endpoint_url: str) -> ClientSettings:
    # A loaded machine can keep the engine from answering a large batch within seconds.
    return ClientSettings(endpoint_url=endpoint_url, read_timeout=120)


async def create(endpoint_url: str) -> None:
    async with open_client(_settings(endpoint_url)) as client:
        await create_table(client, TABLE)


async def mixed_bodies(endpoint_url: str, seed: int, hot_size: int, seeded: bool) -> list[bytes]:
    """Seed the table (unless it is) and return the mixed workload's request bodies (those
    of benchmarks.run)."""
    async with open_client(_settings(endpoint_url)) as client:
        table = TableRef(client, TABLE)
        if not seeded:
            await data.load(table, data.comments(seed, hot_size))
        busy, gap, gap_ratings = await small_products(table)
        runner = Runner(table, 1)
        bodies = []
        for kind in kinds(busy, gap, gap_ratings, (20, 60)):
            variables = runner._variables(kind, await position_for(table, kind))
            bodies.append(json.dumps({"query": QUERY, "variables": variables}).encode())
        return bodies


def parse_extra(spec: str) -> tuple[str, str, dict[str, str]]:
    """``"name:KEY=VALUE,KEY=VALUE"``: a row of our server with those settings."""
    name, _, settings = spec.partition(":")
    changes = dict(pair.split("=", 1) for pair in settings.split(",") if pair)
    return name, "real", changes


def load_once(port: int, pid: int, bodies: list[bytes], seconds: float) -> dict[str, float]:
    for attempt in range(3):
        before = cpu_seconds(pid)
        try:
            load = asyncio.run(run_load("127.0.0.1", port, bodies, concurrency=16, seconds=seconds))
            break
        except ConnectionError as exc:  # a connection the server dropped: measure again
            print(f"run {attempt + 1} on port {port} lost a connection ({exc!r})", file=sys.stderr)
    else:
        raise RuntimeError(f"the server on port {port} kept dropping connections")
    used = cpu_seconds(pid) - before
    return {
        "cpu_ms": 1000 * used / max(load.requests, 1),
        "rps": load.throughput,
        "errors": load.errors,
    }


def profile(pid: int, port: int, bodies: list[bytes], seconds: float) -> None:
    """Where the server's CPU goes: py-spy samples, self and inclusive, by function."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "stacks.txt"
        spy = subprocess.Popen(
            [
                str(ROOT / ".venv" / "bin" / "py-spy"),
                "record",
                "--pid",
                str(pid),
                "--format",
                "raw",
                "--rate",
                "250",
                "--duration",
                str(int(seconds)),
                "--output",
                str(out),
                "--nonblocking",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        asyncio.run(run_load("127.0.0.1", port, bodies, concurrency=16, seconds=seconds + 1))
        spy.wait()
        summarise(out.read_text())


def _frame(frame: str) -> str:
    """``function (path/to/file.py:12)`` as ``function file.py:12``."""
    return frame.split(" (")[0] + " " + frame.rsplit("/", 1)[-1].rstrip(")")


def summarise(stacks: str, top: int = 60) -> None:
    own: Counter[str] = Counter()
    inclusive: Counter[str] = Counter()
    total = 0
    for line in stacks.splitlines():
        frames, _, count = line.rpartition(" ")
        if not frames:
            continue
        n = int(count)
        names = [_frame(f) for f in frames.split(";")]
        total += n
        own[names[-1]] += n
        for name in set(names):
            inclusive[name] += n
    print(f"{total} samples")
    print("self:")
    for name, n in own.most_common(top):
        print(f"  {100 * n / total:5.1f} %  {name}")
    print("inclusive:")
    for name, n in inclusive.most_common(top * 2):
        print(f"  {100 * n / total:5.1f} %  {name}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", action="append", default=[], help="a CONFIGS row by name")
    parser.add_argument("--extra", action="append", default=[], help="NAME:KEY=VALUE,...")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--seconds", type=float, default=6.0)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--hot-size", type=int, default=10_000)
    parser.add_argument("--profile", help="a row to profile with py-spy")
    parser.add_argument("--data-dir", type=Path, help="keep the engine's data here, seeded once")
    args = parser.parse_args()
    rows = {name: (name, storage, changes) for name, storage, changes in CONFIGS}
    selected = [rows[name] for name in args.config or ["ours", "floor"]]
    selected += [parse_extra(spec) for spec in args.extra]
    seeded = args.data_dir is not None and any(args.data_dir.glob("*"))
    with LocalEngine(data_dir=args.data_dir) as engine, ExitStack() as stack:
        # The servers start on the empty table: their health checks (DescribeTable, which
        # DynamoDB Local answers by counting the items) then answer at once on a busy machine.
        asyncio.run(create(engine.endpoint_url))
        servers: dict[str, tuple[int, int]] = {}
        for name, storage, changes in selected:
            print(f"starting {name}", file=sys.stderr, flush=True)
            servers[name] = stack.enter_context(
                server(storage, changes, engine.endpoint_url, TABLE, args.seed, args.hot_size)
            )
        bodies = asyncio.run(mixed_bodies(engine.endpoint_url, args.seed, args.hot_size, seeded))
        for port, _ in servers.values():
            asyncio.run(run_load("127.0.0.1", port, bodies, concurrency=16, seconds=2))
        if args.profile:
            port, pid = servers[args.profile]
            profile(pid, port, bodies, args.seconds * 2)
        runs: dict[str, list[dict[str, float]]] = {name: [] for name in servers}
        for round_ in range(args.rounds):
            order = list(servers)
            random.shuffle(order)
            for name in order:
                port, pid = servers[name]
                runs[name].append(load_once(port, pid, bodies, args.seconds))
            print(f"round {round_ + 1}: " + report_line(runs), file=sys.stderr, flush=True)
    print(table(runs))


def report_line(runs: dict[str, list[dict[str, float]]]) -> str:
    return ", ".join(f"{name} {r[-1]['cpu_ms']:.2f} ms" for name, r in runs.items())


def table(runs: dict[str, list[dict[str, float]]]) -> str:
    floor = runs.get("floor")
    lines = [
        "| server | req/s | server CPU ms/request | CPU vs floor | req/s vs floor | errors |",
        "|---|---|---|---|---|---|",
    ]
    for name, results in runs.items():
        cpu = statistics.median(r["cpu_ms"] for r in results)
        rps = statistics.median(r["rps"] for r in results)
        errors = sum(int(r["errors"]) for r in results)
        ratios = "- | -"
        if floor:
            # Within each round first: the machine's drift between rounds cancels out.
            pairs = list(zip(results, floor, strict=True))
            cpu_ratio = statistics.median(r["cpu_ms"] / f["cpu_ms"] for r, f in pairs)
            rps_ratio = statistics.median(r["rps"] / f["rps"] for r, f in pairs)
            ratios = f"{cpu_ratio:.2f} | {rps_ratio:.2f}"
        lines.append(f"| {name} | {rps:.1f} | {cpu:.2f} | {ratios} | {errors} |")
    return "\n".join(lines)


if __name__ == "__main__":
    main()
