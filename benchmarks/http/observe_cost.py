"""What observing a request costs: counting it, timed alone, and the whole application with
metrics on against off over the in-memory DynamoDB, rounds interleaved.

    .venv/bin/python -m benchmarks.http.observe_cost [--rounds 15]
    PROMETHEUS_MULTIPROC_DIR=$(mktemp -d) .venv/bin/python -m benchmarks.http.observe_cost

The second form counts as a worker of ``serve --workers N`` does, in files (the variable
must be set before prometheus-client is imported, as the parent of the workers sees to).
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import os
import random
import statistics
import time
from contextlib import AsyncExitStack

import httpx

from benchmarks import data
from server.http.app import create_app
from server.observability.metrics import Metrics
from server.settings import Settings
from storage.engine.metering import Meter
from storage.engine.table import TableRef
from testing.fake_dynamo import FakeDynamo

PAGE = """query ProductPage($pid: ID!) { product(productId: $pid) { stats { total average }
  comments(first: 20) { totalCount nodes { commentId rating title body createdAt }
  pageInfo { endCursor hasNextPage } } } }"""
REQUESTS_PER_ROUND = 300


def count_alone(n: int = 50_000) -> float:
    """Microseconds ``Metrics.observe_request`` takes for a request of three storage calls."""
    metrics = Metrics()
    meter = Meter(calls={"query": 2, "get_item": 1}, items_read=20, read_capacity=2.5, rounds=1)
    started = time.perf_counter()
    for _ in range(n):
        metrics.observe_request("ProductPage", "ok", 0.01, meter)
    return (time.perf_counter() - started) / n * 1e6


async def interleaved(rounds: int) -> dict[str, list[float]]:
    """Milliseconds of CPU per product page, per round, with metrics on and off, in a
    shuffled order each round."""
    fake = FakeDynamo()
    await data.load(TableRef(fake, "bench"), data.comments(7, 2000), "loading the fake")
    body = {"query": PAGE, "variables": {"pid": "hot-1k"}}
    runs: dict[str, list[float]] = {"metrics on": [], "metrics off": []}
    async with AsyncExitStack() as stack:
        clients = {}
        for name in runs:
            settings = Settings(
                dynamodb_endpoint_url="http://in-memory.invalid",
                dynamodb_table="bench",
                jwt_secret="observe-cost-" + "x" * 32,
                metrics="on" if name == "metrics on" else "off",
                gc_freeze=False,
            )
            app = create_app(settings, client=fake)
            await stack.enter_async_context(app.router.lifespan_context(app))
            transport = httpx.ASGITransport(app=app)
            clients[name] = await stack.enter_async_context(
                httpx.AsyncClient(transport=transport, base_url="http://bench")
            )
        for http in clients.values():  # warm-up: caches, plan memory
            for _ in range(100):
                answer = (await http.post("/graphql", json=body)).json()
                assert "errors" not in answer, answer
        for _ in range(rounds):
            order = list(clients.items())
            random.shuffle(order)  # neither goes first every round
            for name, http in order:
                gc.collect()
                started = time.process_time()
                for _ in range(REQUESTS_PER_ROUND):
                    await http.post("/graphql", json=body)
                used = time.process_time() - started
                runs[name].append(1000 * used / REQUESTS_PER_ROUND)
    return runs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=15)
    args = parser.parse_args()
    mode = "files (several workers)" if os.environ.get("PROMETHEUS_MULTIPROC_DIR") else "memory"
    print(f"counting one request, values in {mode}: {count_alone():.1f} µs")
    runs = asyncio.run(interleaved(args.rounds))
    for name, values in runs.items():
        print(f"{name}: {statistics.median(values):.3f} ms CPU per request (median)")
    ratios = [on / off for on, off in zip(runs["metrics on"], runs["metrics off"], strict=True)]
    print(f"on / off, median of the rounds' ratios: {statistics.median(ratios):.3f}")


if __name__ == "__main__":
    main()
