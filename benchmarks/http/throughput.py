"""HTTP throughput: uvicorn with one worker (or two), our storage or the in-memory floor,
under load."""

from __future__ import annotations

import asyncio
import os
import statistics
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from benchmarks.http.loadgen import run_load
from benchmarks.reads.inprocess import percentile
from server.dev.local_engine import free_port
from testing.live_server import server_process

ROOT = Path(__file__).resolve().parents[2]
SECRET = "bench-secret-" + "x" * 32

# (name, storage, settings changed from the defaults)
CONFIGS: list[tuple[str, str, dict[str, str]]] = [
    ("ours", "real", {}),
    ("floor", "fake", {}),
    ("ours, no parser/validation caches", "real", {"GRAPHQL_CACHES": "false"}),
    ("ours, botocore attribute parsing", "real", {"FAST_ATTRIBUTE_PARSING": "false"}),
    ("ours, hot reads through botocore", "real", {"DIRECT_READS": "false"}),
    # What the user agent switch is worth where it acts: on calls botocore makes.
    (
        "ours, hot reads through botocore, its user agent",
        "real",
        {"DIRECT_READS": "false", "STATIC_USER_AGENT": "false"},
    ),
    ("ours, stdlib json", "real", {"ORJSON": "false"}),
    ("ours, no gc.freeze", "real", {"GC_FREEZE": "false"}),
    ("ours, asyncio loop + h11", "real", {"UVICORN_LOOP": "asyncio", "UVICORN_HTTP": "h11"}),
    ("ours, read head-room z=0.5", "real", {"READ_HEADROOM": "0.5"}),
    # Two worker processes, on the same cores as the load generator and DynamoDB Local.
    ("ours, 2 workers", "real", {"WORKERS": "2"}),
]


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process and its live descendants so far (Linux /proc):
    a server with several workers is the parent and its worker processes."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    own = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    children = [
        int(child)
        for task in Path(f"/proc/{pid}/task").iterdir()
        for child in (task / "children").read_text().split()
    ]
    return own + sum(cpu_seconds(child) for child in children)


@contextmanager
def server(
    storage: str,
    env_changes: dict[str, str],
    engine_url: str,
    table: str,
    seed: int,
    hot_size: int,
) -> Iterator[tuple[int, int]]:
    port = free_port()
    env = dict(env_changes)
    if storage == "real":
        env.update(
            DYNAMODB_ENDPOINT_URL=engine_url,
            DYNAMODB_TABLE=table,
            JWT_SECRET=SECRET,
            PORT=str(port),
            HOST="127.0.0.1",
            CREATE_TABLE="false",
        )
        command = [str(ROOT / ".venv" / "bin" / "comments"), "serve"]
    else:
        command = [
            sys.executable,
            "-m",
            "benchmarks.http.floor",
            "--port",
            str(port),
            "--seed",
            str(seed),
            "--hot-size",
            str(hot_size),
        ]
    # A cold engine under the seeding that precedes some runs can take minutes to answer.
    with server_process(command, port, env, timeout=300) as pid:
        yield port, pid


def _engine_cpu(pid: int | None) -> float:
    return 0.0 if pid is None else cpu_seconds(pid)


def run_http(
    mixes: dict[str, list[bytes]],
    *,
    engine_url: str,
    table: str,
    seed: int,
    hot_size: int,
    seconds: float,
    concurrency: int,
    engine_pid: int | None = None,
) -> list[dict[str, Any]]:
    results = []
    for name, storage, changes in CONFIGS:
        # Settings variants only on the mixed workload; ours and the floor on every mix.
        selected = mixes if name in ("ours", "floor") else {"mixed": mixes["mixed"]}
        print(f"HTTP: {name}", file=sys.stderr, flush=True)
        with server(storage, changes, engine_url, table, seed, hot_size) as (port, pid):
            for mix, bodies in selected.items():
                asyncio.run(
                    run_load("127.0.0.1", port, bodies, concurrency=concurrency, seconds=2)
                )  # warm-up
                server_cpu, engine_cpu = cpu_seconds(pid), _engine_cpu(engine_pid)
                load = asyncio.run(
                    run_load("127.0.0.1", port, bodies, concurrency=concurrency, seconds=seconds)
                )
                server_cpu = cpu_seconds(pid) - server_cpu
                engine_cpu = _engine_cpu(engine_pid) - engine_cpu
                results.append(
                    {
                        "config": name,
                        "settings": changes,
                        "mix": mix,
                        "requests": load.requests,
                        "errors": load.errors,
                        "seconds": round(load.seconds, 2),
                        "req_per_s": round(load.throughput, 1),
                        "p50_ms": round(statistics.median(load.latencies_ms), 2),
                        "p99_ms": round(percentile(load.latencies_ms, 0.99), 2),
                        # Share of one core used by the server, and by the engine (real only).
                        "server_cpu": round(server_cpu / load.seconds, 2),
                        "engine_cpu": round(engine_cpu / load.seconds, 2)
                        if storage == "real"
                        else 0,
                        "server_cpu_ms_per_request": round(
                            1000 * server_cpu / max(load.requests, 1), 2
                        ),
                    }
                )
    return results
