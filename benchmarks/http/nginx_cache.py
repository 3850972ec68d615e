"""Product pages through nginx (deploy/nginx.conf) against the API alone.

    .venv/bin/python -m benchmarks.http.nginx_cache [--quick] [--seed 7]

Starts DynamoDB Local in memory, loads products with the project's seeder, runs one server
and nginx in front of it on loopback (``testing.nginx``), registers a product page's
persisted query (the product's counters and its first 20 comments), then

- sends the same closed-loop load of product-page GETs by hash, over many products with a
  Zipf popularity, first straight to the server (nothing kept), then through nginx (kept for
  the server's max-age): requests per second, p50 and p99 latency, CPU per request of the
  server, of nginx and of the engine, and nginx's hit ratio from its access log;
- writes comments at points spread over a kept page's life and polls that page through
  nginx until each shows: the delay from the write, against the max-age;

and writes ``results/proxy-<timestamp>.json``. ``section`` and ``target_rows`` turn a result
into lines of the results page (docs/benchmarks/results.md); ``latest`` reads the newest one.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import platform
import random
import statistics
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import httpx

from benchmarks import data
from benchmarks.http.loadgen import LoadResult, get_request, run_requests
from benchmarks.http.throughput import cpu_seconds
from benchmarks.reads.inprocess import percentile
from resolvers.auth import mint
from server.dev.demo import synthetic_comments
from server.dev.local_engine import LocalEngine
from server.http.persisted import sha256_hex
from server.settings import Settings
from storage.engine.client import ClientSettings, open_client
from storage.engine.table import TableRef
from testing.live_server import LiveServer, live_server
from testing.nginx import LiveNginx, live_nginx

HERE = Path(__file__).resolve().parent.parent  # benchmarks/
RESULTS = HERE / "results"
TABLE = "proxy"
SECRET = "bench-secret-" + "x" * 32
HOST = "127.0.0.1"
PAGE = """query ProductPage($productId: ID!) {
  product(productId: $productId) {
    productId
    lastCommentedAt
    stats { total average histogram { rating count } }
    comments(first: 20) {
      totalCount
      edges { cursor node { id commentId rating language title body author createdAt } }
      pageInfo { hasNextPage endCursor }
    }
  }
}"""
CREATE = """mutation Create($input: CreateCommentInput!) {
  createComment(input: $input) { created comment { commentId } }
}"""
# What a browser running Apollo Client sends with a product page's GET.
HEADERS = {
    "accept": "application/graphql-response+json, application/json;q=0.9",
    "accept-encoding": "gzip, deflate, br",
}
POLL_SECONDS = 0.1
# nginx keeps time in whole seconds: a kept answer may be served up to a second past max-age.
CLOCK_SECONDS = 1.0
# The tolerated delay past max-age plus the clock: the poll that sees the refresh, and the
# refresh itself.
POLL_SLACK = 2 * POLL_SECONDS
ZIPF_S = 1.0  # product popularity: the k-th product is asked for about 1/k as often


def say(message: str) -> None:
    print(f"==> {message}", file=sys.stderr, flush=True)


def page_target(product_id: str) -> str:
    """The GET of a product's page by its persisted query's hash, as Apollo's link sends it."""
    extensions = {"persistedQuery": {"version": 1, "sha256Hash": sha256_hex(PAGE)}}
    query = urlencode(
        {
            "operationName": "ProductPage",
            "variables": json.dumps({"productId": product_id}, separators=(",", ":")),
            "extensions": json.dumps(extensions, separators=(",", ":")),
        }
    )
    return f"/graphql?{query}"


def process_cpu(pid: int) -> float:
    """CPU seconds of a process and its children that are still running (nginx's workers)."""
    total = cpu_seconds(pid)
    children = Path(f"/proc/{pid}/task/{pid}/children")
    for child in children.read_text().split() if children.exists() else []:
        with contextlib.suppress(FileNotFoundError):  # a worker that has just exited
            total += cpu_seconds(int(child))
    return total


def popular(products: list[str], size: int, seed: int) -> list[str]:
    """``size`` page views over ``products`` with a Zipf popularity, in a random order."""
    weights = [1 / (rank + 1) ** ZIPF_S for rank in range(len(products))]
    return random.Random(seed).choices(products, weights=weights, k=size)


async def load_data(engine: LocalEngine, args: argparse.Namespace) -> dict[str, Any]:
    rng = random.Random(args.seed)
    plan = [(f"p-{n:03d}", rng.randint(5, 200), True) for n in range(args.products)]
    # Written to in the visibility runs, never part of the load: their pages are kept from the
    # moment those runs read them first.
    plan += [(f"w-{n:02d}", 20, False) for n in range(args.writes)]
    comments = list(synthetic_comments(plan, random.Random(args.seed + 1)))
    say(f"seeding {len(comments)} comments over {len(plan)} products")
    async with open_client(ClientSettings(endpoint_url=engine.endpoint_url)) as client:
        await data.load(TableRef(client, TABLE), comments)
    return {"products": args.products, "comments": len(comments), "seed": args.seed}


def check_pages(server: LiveServer, products: list[str]) -> None:
    """Registers the page's persisted query, then reads every page once: the load counts only
    statuses, so the answers are checked here (all data, no errors)."""
    with httpx.Client(base_url=server.base_url, headers=HEADERS, timeout=30) as http:
        registration = {
            "query": PAGE,
            "variables": {"productId": products[0]},
            "extensions": {"persistedQuery": {"version": 1, "sha256Hash": sha256_hex(PAGE)}},
        }
        registered = http.post("/graphql", json=registration)
        if registered.status_code != 200 or "errors" in registered.json():
            raise RuntimeError(f"the page's query did not register: {registered.text[:500]}")
        for product_id in products:
            page = http.get(page_target(product_id))
            body = page.json()
            if page.status_code != 200 or "errors" in body or body["data"]["product"] is None:
                raise RuntimeError(f"{product_id}'s page failed: {page.text[:500]}")


def measure_load(
    port: int,
    views: list[str],
    args: argparse.Namespace,
    pids: dict[str, int | None],
    proxy: LiveNginx | None = None,
) -> dict[str, Any]:
    """One closed-loop run of the page views against ``port``, after a warm-up."""
    requests = [get_request(HOST, port, page_target(p), HEADERS) for p in views]

    def run(seconds: float) -> LoadResult:
        return asyncio.run(
            run_requests(HOST, port, requests, concurrency=args.concurrency, seconds=seconds)
        )

    run(args.warmup)
    before_cpu = {name: process_cpu(pid) for name, pid in pids.items() if pid is not None}
    before_statuses = proxy.cache_statuses() if proxy is not None else None
    load = run(args.seconds)
    cpu = {name: process_cpu(pid) - before_cpu[name] for name, pid in pids.items() if pid}
    requests_done = max(load.requests, 1)
    row: dict[str, Any] = {
        "path": "nginx" if proxy is not None else "direct",
        "requests": load.requests,
        "errors": load.errors,
        "seconds": round(load.seconds, 2),
        "req_per_s": round(load.throughput, 1),
        "p50_ms": round(statistics.median(load.latencies_ms), 3),
        "p99_ms": round(percentile(load.latencies_ms, 0.99), 3),
        # CPU milliseconds per page served to a client, by process.
        **{
            f"{name}_cpu_ms_per_request": round(1000 * c / requests_done, 3)
            for name, c in cpu.items()
        },
        **{f"{name}_cpu": round(c / load.seconds, 2) for name, c in cpu.items()},
    }
    if proxy is not None and before_statuses is not None:
        statuses = proxy.cache_statuses() - before_statuses
        served = sum(statuses.values())
        row["cache_statuses"] = dict(sorted(statuses.items()))
        row["hit_ratio"] = round(statuses["HIT"] / served, 4) if served else None
        # Hits, and stale copies served while one request refreshes them: none reach the API.
        kept = statuses["HIT"] + statuses["STALE"] + statuses["UPDATING"]
        row["served_from_cache"] = round(kept / served, 4) if served else None
    return row


async def measure_visibility(
    proxy: LiveNginx, products: list[str], max_age: int, stale_while_revalidate: int
) -> dict[str, Any]:
    """For each product: read its page through nginx (kept from then), write a comment at an
    offset spread over max-age, and poll the page until the comment shows."""
    writes = len(products)
    offsets = [max_age * n / writes for n in range(writes)]
    give_up = max_age + stale_while_revalidate + 10

    async def one(http: httpx.AsyncClient, product_id: str, offset: float) -> dict[str, Any]:
        target = page_target(product_id)
        filled = await http.get(target)
        await asyncio.sleep(offset)
        comment = {
            "productId": product_id,
            "rating": 5,
            "language": "en",
            "title": "Just written",
            "body": "Is it on the page yet?",
        }
        created = await http.post(
            "/graphql",
            json={"query": CREATE, "variables": {"input": comment}},
            headers={"authorization": f"Bearer {mint(SECRET, f'writer-{product_id}')}"},
        )
        comment_id = created.json()["data"]["createComment"]["comment"]["commentId"]
        written = time.perf_counter()
        statuses = []
        while time.perf_counter() - written < give_up:
            page = await http.get(target)
            seen = time.perf_counter()
            statuses.append(page.headers.get("x-cache-status", "-"))
            if comment_id in page.text:
                return {
                    "product": product_id,
                    "offset_s": round(offset, 2),
                    "filled": filled.headers.get("x-cache-status", "-"),
                    "delay_s": round(seen - written, 3),
                    "polls": len(statuses),
                    "shown_by": statuses[-1],
                }
            await asyncio.sleep(POLL_SECONDS)
        return {"product": product_id, "offset_s": round(offset, 2), "delay_s": None}

    async with httpx.AsyncClient(base_url=proxy.base_url, headers=HEADERS, timeout=30) as http:
        runs = await asyncio.gather(
            *(one(http, p, o) for p, o in zip(products, offsets, strict=True))
        )
    delays = [r["delay_s"] for r in runs if r["delay_s"] is not None]
    return {
        "max_age_s": max_age,
        "stale_while_revalidate_s": stale_while_revalidate,
        "poll_s": POLL_SECONDS,
        "bound_s": max_age + CLOCK_SECONDS + POLL_SLACK,
        "writes": len(runs),
        "shown": len(delays),
        "median_s": round(statistics.median(delays), 3) if delays else None,
        "max_s": round(max(delays), 3) if delays else None,
        "runs": list(runs),
    }


def measure(args: argparse.Namespace) -> dict[str, Any]:
    with LocalEngine() as engine:
        loaded = asyncio.run(load_data(engine, args))
        products = [f"p-{n:03d}" for n in range(args.products)]
        views = popular(products, args.views, args.seed)
        env = {
            "CREATE_TABLE": "false",
            "SEED_DEMO": "false",
            "EXPLAIN": "false",  # as in production: answers carry no per-request figures
            "CACHE_MAX_AGE": str(args.max_age),
            "CACHE_STALE_WHILE_REVALIDATE": str(args.stale_while_revalidate),
        }
        say("starting the server and nginx")
        with live_server(engine.endpoint_url, TABLE, SECRET, log=None, **env) as server:
            check_pages(server, products)
            with live_nginx(server.port, workers=1) as proxy:
                pids: dict[str, int | None] = {
                    "server": server.pid,
                    "nginx": proxy.pid,
                    "engine": engine.pid,
                }
                say(f"product pages straight to the server ({args.seconds:g} s)")
                direct = measure_load(server.port, views, args, pids)
                say(f"product pages through nginx ({args.seconds:g} s)")
                cached = measure_load(proxy.port, views, args, pids, proxy)
                say(f"new comments through nginx ({args.writes} writes, max-age {args.max_age} s)")
                writes = [f"w-{n:02d}" for n in range(args.writes)]
                visibility = asyncio.run(
                    measure_visibility(proxy, writes, args.max_age, args.stale_while_revalidate)
                )
    return {
        "data": loaded,
        "settings": {
            "cache_max_age": args.max_age,
            "cache_stale_while_revalidate": args.stale_while_revalidate,
            "concurrency": args.concurrency,
            "seconds": args.seconds,
            "warmup_seconds": args.warmup,
            "views_in_mix": args.views,
            "popularity": f"Zipf s={ZIPF_S:g} over {args.products} products",
            "page": "stats, histogram and the first 20 comments, by APQ hash over GET, gzip",
            "nginx_workers": 1,
        },
        "load": [direct, cached],
        "visibility": visibility,
    }


def _load_rows(result: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {row["path"]: row for row in result["load"]}


def target_rows(result: dict[str, Any]) -> list[tuple[str, str, bool]]:
    """(target, measured, met) for the main report's targets table."""
    rows = _load_rows(result)
    direct, cached = rows["direct"], rows["nginx"]
    speedup = cached["req_per_s"] / direct["req_per_s"] if direct["req_per_s"] else 0.0
    server_share = (
        cached["server_cpu_ms_per_request"] / direct["server_cpu_ms_per_request"]
        if direct.get("server_cpu_ms_per_request")
        else 1.0
    )
    hit_ratio = cached.get("hit_ratio") or 0.0
    seen = result["visibility"]
    bound = seen["bound_s"]
    shown_in_time = (
        seen["shown"] == seen["writes"] and seen["max_s"] is not None and seen["max_s"] <= bound
    )
    return [
        (
            "product-page GETs through nginx: >= 95 % served from its cache",
            f"{hit_ratio:.1%}",
            hit_ratio >= 0.95,
        ),
        (
            "product-page GETs through nginx: server CPU per page <= 10 % of the API alone",
            f"{server_share:.1%} ({cached['server_cpu_ms_per_request']:.2f} ms vs "
            f"{direct['server_cpu_ms_per_request']:.2f} ms)",
            server_share <= 0.10,
        ),
        (
            "product-page GETs through nginx: >= 2x the API alone's req/s",
            f"{speedup:.1f}x ({cached['req_per_s']:.0f} vs {direct['req_per_s']:.0f} req/s)",
            speedup >= 2,
        ),
        (
            f"a new comment shows through nginx within max-age ({seen['max_age_s']} s, + 1 s "
            "of nginx's whole-second clock and a poll)",
            f"median {_seconds(seen['median_s'])}, max {_seconds(seen['max_s'])} over "
            f"{seen['shown']}/{seen['writes']} writes",
            shown_in_time,
        ),
    ]


def _seconds(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f} s"


def section(result: dict[str, Any]) -> list[str]:
    """Markdown lines for the results page: the load table, the visibility figures, notes."""
    settings = result["settings"]
    rows = _load_rows(result)
    seen = result["visibility"]
    lines = [
        "## Product pages through nginx",
        "",
        f"`python -m benchmarks.http.nginx_cache` ({result['when']}, "
        f"`benchmarks/results/{result['json_name']}`): "
        f"{settings['concurrency']} connections for {settings['seconds']:g} s each way, "
        f"product pages ({settings['page']}) with {settings['popularity']}; the server with "
        f"`CACHE_MAX_AGE={settings['cache_max_age']}`, "
        f"`CACHE_STALE_WHILE_REVALIDATE={settings['cache_stale_while_revalidate']}`; nginx "
        f"(`deploy/nginx.conf`, {settings['nginx_workers']} worker) on the same machine.",
        "",
        "| path | req/s | p50 ms | p99 ms | server CPU ms/page | nginx CPU ms/page "
        "| engine CPU ms/page | hit ratio | errors |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for name, label in (("direct", "API alone"), ("nginx", "through nginx")):
        row = rows[name]
        hit = row.get("hit_ratio")
        lines.append(
            f"| {label} | {row['req_per_s']:.0f} | {row['p50_ms']:.2f} | {row['p99_ms']:.2f} "
            f"| {row.get('server_cpu_ms_per_request', 0):.3f} "
            f"| {row.get('nginx_cpu_ms_per_request', 0):.3f} "
            f"| {row.get('engine_cpu_ms_per_request', 0):.3f} "
            f"| {'-' if hit is None else f'{hit:.1%}'} | {row['errors']} |"
        )
    cached = rows["nginx"]
    direct = rows["direct"]
    ratio = cached["req_per_s"] / direct["req_per_s"] if direct["req_per_s"] else 0.0
    delays = ", ".join(_seconds(r["delay_s"]) for r in seen["runs"])
    statuses = ", ".join(f"{k} {v}" for k, v in cached.get("cache_statuses", {}).items())
    served = cached.get("served_from_cache")
    lines += [
        "",
        f"Through nginx: {ratio:.1f}x the pages per second; cache statuses {statuses} "
        f"({'-' if served is None else f'{served:.1%}'} answered without the API: hits, and "
        "stale copies served while one request refreshes them).",
        "",
        f"A new comment on a kept page showed through nginx after a median "
        f"{_seconds(seen['median_s'])} and at most {_seconds(seen['max_s'])} "
        f"({seen['shown']} of {seen['writes']} writes; max-age {seen['max_age_s']} s; each "
        f"written at a point spread over the page's max-age, polled every "
        f"{seen['poll_s']:g} s): {delays}.",
        "",
        "- The load generator, the server, nginx and DynamoDB Local share the machine's cores; "
        "through nginx the load generator is the limit, so req/s there is a floor. CPU per "
        "page is each process's CPU time over the pages served to clients.",
        "- nginx keeps time in whole seconds: an answer kept at 10.9 s with max-age 30 is fresh "
        "until its clock reads 41, so a new comment may wait up to a second past max-age. The "
        "first request after expiry is served the stale page (stale-while-revalidate) while "
        "one background request refreshes it; the next one sees the comment.",
    ]
    return lines


def latest(directory: Path = RESULTS, *, quick: bool | None = None) -> dict[str, Any] | None:
    """The newest proxy result in ``directory`` (only quick runs, or only full ones, when
    ``quick`` says), or None."""
    found = sorted(
        path
        for path in directory.glob("proxy-*.json")
        if quick is None or path.stem.endswith("-quick") == quick
    )
    if not found:
        return None
    loaded: dict[str, Any] = json.loads(found[-1].read_text())
    return loaded


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small data and short runs")
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    defaults = Settings.model_fields
    args.products = 60 if args.quick else 300
    args.views = 2_000 if args.quick else 10_000
    args.writes = 4 if args.quick else 8
    args.concurrency = 16
    args.seconds = 4.0 if args.quick else 20.0
    args.warmup = 1.0 if args.quick else 3.0
    # The server's defaults (30 s, 60 s); a short life for a quick run's visibility check.
    args.max_age = 5 if args.quick else defaults["cache_max_age"].default
    args.stale_while_revalidate = (
        10 if args.quick else defaults["cache_stale_while_revalidate"].default
    )
    started = time.perf_counter()
    measured = measure(args)
    when = datetime.now(UTC)
    stamp = when.strftime("%Y%m%dT%H%M%SZ")
    json_name = f"proxy-{stamp}{'-quick' if args.quick else ''}.json"
    result = {
        "when": when.isoformat(timespec="seconds"),
        "json_name": json_name,
        "machine": f"{platform.machine()}, {platform.python_implementation()} "
        f"{platform.python_version()}, {len(os.sched_getaffinity(0))} cores",
        "quick": args.quick,
        "command": " ".join(["python -m benchmarks.http.nginx_cache", *sys.argv[1:]]),
        **measured,
        "duration_seconds": round(time.perf_counter() - started, 1),
    }
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / json_name).write_text(json.dumps(result, indent=1) + "\n")
    print("\n".join(section(result)))
    print()
    for target, value, met in target_rows(result):
        print(f"{'met' if met else 'NOT MET'}: {target}: {value}")
    say(f"wrote {RESULTS / json_name} in {result['duration_seconds']} s")


if __name__ == "__main__":
    main()
