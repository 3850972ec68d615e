"""Live updates across processes: event delay, snapshot freshness, idle subscriptions.

    .venv/bin/python -m benchmarks.live.processes [--events 1000] [--idle 200]

Starts DynamoDB Local in memory, a table with its stream, and two servers on it: A, where a
client subscribes (one connection, a subscription per product), and B, where the writes go.

- **Event delay.** Each write (a create, through B) is timed from its acknowledgement (the
  HTTP answer) to its event's arrival from A, one write at a time, round-robin over the
  products. Delay is ack to event; it can be negative when the event beats the answer.
- **Snapshot freshness.** This process follows the same stream with a feed of its own (a
  third "process"), and after each ack waits until that feed's counters snapshot counts
  the write: how long after a write another process plans from counters that include it.
- **Idle subscriptions.** A's resident memory before and after ``--idle`` connections
  with one idle subscription each, then after nine more on each of them.

Writes ``results/live-<timestamp>.json`` and ``docs/benchmarks/live.md``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import platform
import random
import secrets
import statistics
import sys
import time
from contextlib import AsyncExitStack
from datetime import UTC, datetime
from typing import Any

import httpx

from benchmarks.report import HERE, PAGES
from resolvers.auth import mint
from server.dev.local_engine import LocalEngine
from storage.engine.client import ClientSettings, open_client, open_streams_client
from storage.engine.table import TableRef
from storage.live.feed import Feed
from storage.live.stream import StreamFollower, stream_arn
from storage.ops.create import create_table
from storage.reads.reader import batch_get_counts
from storage.reads.snapshots import PlanMemory
from testing.live_server import LiveServer, live_server, rss_bytes
from testing.subscriber import Subscriber, subscriber

TABLE = "live_bench"
PRODUCTS = 10
EVENTS = """subscription($pid: ID!) { commentEvents(productId: $pid) {
  kind commentId stats { total } } }"""
IDLE = 'subscription { commentEvents(productId: "idle") { kind } }'
CREATE = """mutation($input: CreateCommentInput!) {
  createComment(input: $input) { comment { commentId } userErrors { code } } }"""


def say(message: str) -> None:
    print(f"==> {message}", file=sys.stderr, flush=True)


def quantile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def summary(values: list[float]) -> dict[str, float]:
    return {
        "n": len(values),
        "median_ms": round(statistics.median(values) * 1000, 1),
        "p90_ms": round(quantile(values, 0.90) * 1000, 1),
        "p99_ms": round(quantile(values, 0.99) * 1000, 1),
        "max_ms": round(max(values) * 1000, 1),
        "min_ms": round(min(values) * 1000, 1),
    }


async def _create(http: httpx.AsyncClient, b: LiveServer, token: str, pid: str, n: int) -> str:
    response = await http.post(
        b.graphql_url,
        json={
            "query": CREATE,
            "variables": {
                "input": {"productId": pid, "rating": 1 + n % 5, "language": "en", "body": f"#{n}"}
            },
        },
        headers={"authorization": f"Bearer {token}"},
    )
    data = response.json()["data"]["createComment"]
    if data["userErrors"]:
        raise RuntimeError(f"create refused: {data['userErrors']}")
    cid: str = data["comment"]["commentId"]
    return cid


async def _next_event(client: Subscriber, op_id: str, cid: str) -> float:
    while True:
        arrived, message = await client.timed(op_id, 30)
        if message.get("type") != "next":
            raise RuntimeError(f"subscription ended: {message}")
        if message["payload"]["data"]["commentEvents"]["commentId"] == cid:
            return arrived


async def _fresh(memory: PlanMemory, pid: str, total: int) -> float:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + 30
    while True:
        counts = memory.counts(pid, None)
        if counts is not None and counts.total >= total:
            return loop.time()
        if loop.time() > deadline:
            raise RuntimeError("the snapshot never counted the write")
        await asyncio.sleep(0.002)


async def delays(
    engine: LocalEngine, a: LiveServer, b: LiveServer, secret: str, events: int, poll: float
) -> dict[str, Any]:
    token = mint(secret, "bench", name="Bench")
    loop = asyncio.get_running_loop()
    settings = ClientSettings(endpoint_url=engine.endpoint_url)
    async with AsyncExitStack() as stack:
        client = await stack.enter_async_context(open_client(settings))
        streams = await stack.enter_async_context(open_streams_client(settings))
        memory = PlanMemory()
        feed = Feed(TableRef(client, TABLE).keep(memory))
        arn = await stream_arn(feed.table)
        assert arn is not None
        follower = StreamFollower(streams, arn, poll_seconds=poll)
        following = asyncio.create_task(feed.follow(follower.batches))
        stack.callback(following.cancel)
        http = await stack.enter_async_context(httpx.AsyncClient(timeout=30))
        sub = await stack.enter_async_context(subscriber(a.graphql_url))
        pids = [f"live-{n}" for n in range(PRODUCTS)]
        for pid in pids:
            await sub.subscribe(pid, EVENTS, {"pid": pid})
        await feed.wait_following(30)
        # Warm-up: one write per product, its event awaited (the subscriptions are live).
        totals = dict.fromkeys(pids, 0)
        for n, pid in enumerate(pids):
            cid = await _create(http, b, token, pid, n)
            await _next_event(sub, pid, cid)
            totals[pid] += 1
        # The third process has served these products' pages: its snapshot keeps their
        # counters (the stream refreshes the scopes a process keeps, and only those).
        await batch_get_counts(feed.table, [(pid, None) for pid in pids])
        event_delays: list[float] = []
        fresh_delays: list[float] = []
        started = time.perf_counter()
        rng = random.Random(7)
        for n in range(events):
            # A pause of a random part of the poll interval: writing at once when the last
            # event arrived would land every write at the same point of A's poll cycle.
            await asyncio.sleep(rng.uniform(0, poll))
            pid = pids[n % len(pids)]
            cid = await _create(http, b, token, pid, n)
            acked = loop.time()
            totals[pid] += 1
            fresh_task = asyncio.create_task(_fresh(memory, pid, totals[pid]))
            arrived = await _next_event(sub, pid, cid)
            event_delays.append(arrived - acked)
            fresh_delays.append(await fresh_task - acked)
            if (n + 1) % 100 == 0:
                say(f"{n + 1}/{events} events")
        return {
            "events": summary(event_delays),
            "snapshot_fresh": summary(fresh_delays),
            "seconds": round(time.perf_counter() - started, 1),
            "negative_event_delays": sum(d < 0 for d in event_delays),
        }


async def idle_memory(a: LiveServer, connections: int) -> dict[str, Any]:
    async with AsyncExitStack() as stack:
        await asyncio.sleep(1)
        before = rss_bytes(a.pid)
        clients = []
        for _ in range(connections):
            client = await stack.enter_async_context(subscriber(a.graphql_url))
            await client.subscribe("0", IDLE)
            clients.append(client)
        await asyncio.sleep(2)
        one_each = rss_bytes(a.pid)
        for client in clients:
            for n in range(1, 10):
                await client.subscribe(str(n), IDLE)
        await asyncio.sleep(2)
        ten_each = rss_bytes(a.pid)
    return {
        "connections": connections,
        "rss_before_bytes": before,
        "per_connection_with_one_subscription_bytes": (one_each - before) // connections,
        "per_further_subscription_bytes": (ten_each - one_each) // (9 * connections),
    }


def write_markdown(result: dict[str, Any]) -> None:
    e, f, m = result["delay"]["events"], result["delay"]["snapshot_fresh"], result["idle"]
    lines = [
        "# Live updates across processes",
        "",
        f"Run {result['when']} on {result['machine']}: `{result['command']}`, DynamoDB "
        "Local in memory, two servers (subscriber on A, writes through B, stream poll "
        f"{result['poll_seconds']} s), {PRODUCTS} products, one write at a time after a "
        "random pause within the poll interval (so writes fall anywhere in A's poll cycle). "
        "A process polls a quiet stream every poll interval, so about half of it is the "
        "expected wait; the rest is GetRecords, the counters' read and the delivery.",
        "",
        "| figure | n | median | p90 | p99 | max |",
        "|---|---|---|---|---|---|",
        f"| write acknowledged (B) to event received (A) | {e['n']} | {e['median_ms']} ms "
        f"| {e['p90_ms']} ms | {e['p99_ms']} ms | {e['max_ms']} ms |",
        f"| write acknowledged to another process's snapshot counting it | {f['n']} "
        f"| {f['median_ms']} ms | {f['p90_ms']} ms | {f['p99_ms']} ms | {f['max_ms']} ms |",
        "",
        f"Events that arrived before their write's answer: "
        f"{result['delay']['negative_event_delays']}.",
        "",
        f"Idle subscriptions on A ({m['connections']} connections): "
        f"{m['per_connection_with_one_subscription_bytes']:,} bytes of resident memory per "
        "connection holding one subscription (the WebSocket, its handler and the "
        f"subscription), {m['per_further_subscription_bytes']:,} bytes per further "
        "subscription on a connection.",
        "",
    ]
    (PAGES / "live.md").write_text("\n".join(lines))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--events", type=int, default=1000)
    parser.add_argument("--idle", type=int, default=200)
    parser.add_argument("--poll", type=float, default=0.25)
    args = parser.parse_args(argv)
    secret = secrets.token_urlsafe(32)
    say("starting DynamoDB Local, the table and two servers")
    with LocalEngine() as engine:

        async def make() -> None:
            async with open_client(ClientSettings(endpoint_url=engine.endpoint_url)) as client:
                await create_table(client, TABLE)

        asyncio.run(make())
        env = {
            "STREAM_POLL_SECONDS": str(args.poll),
            "SUBSCRIPTION_IDLE_SECONDS": "3600",
            # The idle connections all come from this one client (and the delay's one).
            "MAX_WEBSOCKETS_PER_ADDRESS": str(args.idle + 1),
        }
        with (
            live_server(engine.endpoint_url, TABLE, secret, log=None, **env) as a,
            live_server(engine.endpoint_url, TABLE, secret, log=None, **env) as b,
        ):
            say(f"{args.events} writes through B, each to its event on A")
            delay = asyncio.run(delays(engine, a, b, secret, args.events, args.poll))
            say(f"{args.idle} idle connections on A")
            idle = asyncio.run(idle_memory(a, args.idle))
    result = {
        "when": datetime.now(UTC).strftime("%Y-%m-%dT%H:%MZ"),
        "machine": f"{platform.machine()}, Python {platform.python_version()}",
        "command": "python -m benchmarks.live.processes " + " ".join(argv or sys.argv[1:]),
        "poll_seconds": args.poll,
        "delay": delay,
        "idle": idle,
    }
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    out = HERE / "results" / f"live-{stamp}.json"
    out.write_text(json.dumps(result, indent=2) + "\n")
    write_markdown(result)
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
