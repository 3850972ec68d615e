"""Webhooks across processes: delay from a write's acknowledgement to its delivery, and
duplicates and losses when a process is killed.

    .venv/bin/python -m benchmarks.live.webhooks [--events 1000] [--rate 20]

Starts DynamoDB Local in memory, a table with its stream, and two servers on it (A and B)
with webhooks on, and a receiver in this process on loopback (signatures verified with
the standardwebhooks library). Writes go through B's API, one at a time at about
``--rate`` a second, round-robin over 10 products.

- **Delay.** Each write is timed from its acknowledgement (the HTTP answer) to the
  receiver taking its ``comment.published`` event. The baseline, in the same run: this
  process follows the same stream itself (a plain follower, as each process does for live
  updates) and times the same acknowledgement to the stream record's arrival: the part of
  the delay that is the stream's own.
- **A killed process.** A second run of ``--events`` writes; half way, A is killed
  (SIGKILL) while it holds shards and lanes, and writes go on through B. Every event is
  awaited (B takes A's shards and lanes over after the lease, ``--lease`` seconds); the
  receiver's duplicates (an event taken twice) and losses (an event never taken) are
  counted, and the per-product sequence numbers checked for gaps.

Writes ``results/webhooks-<timestamp>.json`` and ``docs/benchmarks/webhooks.md``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import random
import secrets
import signal
import sys
import time
from collections import Counter
from contextlib import AsyncExitStack
from datetime import UTC, datetime
from typing import Any

import httpx

from benchmarks.live.processes import _create, say, summary
from benchmarks.report import HERE, PAGES
from resolvers.auth import mint
from server.dev.local_engine import LocalEngine
from storage.engine.client import ClientSettings, open_client, open_streams_client
from storage.engine.table import TableRef
from storage.live.stream import StreamFollower, stream_arn
from storage.model.webhooks import Endpoint, EventType, SecretEntry, new_endpoint_id, new_secret
from storage.ops.create import create_table
from storage.writes.webhook_endpoints import create_endpoint
from testing.live_server import LiveServer, live_server
from testing.webhook_receiver import Receiver

TABLE = "webhook_bench"
PRODUCTS = 10


async def _run(
    engine: LocalEngine, b: LiveServer, a_pid: int, secret: str, args: argparse.Namespace
) -> dict[str, Any]:
    token = mint(secret, "bench", name="Bench")
    loop = asyncio.get_running_loop()
    settings = ClientSettings(endpoint_url=engine.endpoint_url)
    async with AsyncExitStack() as stack:
        client = await stack.enter_async_context(open_client(settings))
        streams = await stack.enter_async_context(open_streams_client(settings))
        table = TableRef(client, TABLE)
        hook_secret = new_secret()
        receiver = await stack.enter_async_context(Receiver(hook_secret))
        await create_endpoint(
            table,
            Endpoint(
                new_endpoint_id(),
                receiver.url,
                frozenset({EventType.COMMENT_PUBLISHED}),
                secrets=(SecretEntry(hook_secret),),
                created_at="2026-01-01T00:00:00Z",
            ),
        )
        arn = await stream_arn(table)
        assert arn is not None
        follower = StreamFollower(streams, arn, poll_seconds=args.poll)
        await follower.start()
        seen: dict[str, float] = {}

        async def follow() -> None:
            async for batch in follower.batches():
                now = loop.time()
                for change in batch:
                    if change.kind == "INSERT" and change.new is not None:
                        cid = change.new.get("commentId", {}).get("S")
                        if cid is not None:
                            seen.setdefault(cid, now)

        following = asyncio.create_task(follow())
        stack.callback(following.cancel)
        http = await stack.enter_async_context(httpx.AsyncClient(timeout=30))
        pids = [f"hook-{n}" for n in range(PRODUCTS)]
        rng = random.Random(7)

        async def write(n: int) -> tuple[str, float]:
            await asyncio.sleep(rng.expovariate(args.rate))
            cid = await _create(http, b, token, pids[n % PRODUCTS], n)
            return cid, loop.time()

        def arrivals() -> dict[str, list[float]]:
            out: dict[str, list[float]] = {}
            for r in receiver.got:
                out.setdefault(r.body["data"]["commentId"], []).append(r.at)
            return out

        # Warm-up: a write per product, delivered.
        for n in range(PRODUCTS):
            await write(n)
        await receiver.wait_for(lambda got: len(got) >= PRODUCTS, 120)
        say("warmed up")
        # Run 1: delay.
        acked: dict[str, float] = {}
        for n in range(args.events):
            cid, at = await write(PRODUCTS + n)
            acked[cid] = at
            if (n + 1) % 200 == 0:
                say(f"{n + 1}/{args.events} written")
        await receiver.wait_for(lambda got: len(got) >= PRODUCTS + args.events, 300)
        offset = time.time() - loop.time()  # receiver times are wall-clock
        got = arrivals()
        hook_delays = [got[c][0] - offset - at for c, at in acked.items()]
        stream_delays = [seen[c] - at for c, at in acked.items() if c in seen]
        first_run = len(receiver.got)
        say("run 1 done")
        # Run 2: A killed half way.
        killed_at = args.events // 2
        acked2: dict[str, float] = {}
        for n in range(args.events):
            if n == killed_at:
                os.kill(a_pid, signal.SIGKILL)
                say("A killed")
            cid, at = await write(PRODUCTS + args.events + n)
            acked2[cid] = at
        expected = first_run + args.events
        lost_wait = args.lease * 3 + 60
        try:
            await receiver.wait_for(lambda got: len(got) >= expected, lost_wait)
        except TimeoutError:
            say("not every event arrived")
        await asyncio.sleep(2)
        ids = Counter(r.message_id for r in receiver.got)
        got = arrivals()
        lost = [c for c in acked2 if c not in got]
        per_product: dict[str, list[int]] = {}
        for r in receiver.got:
            per_product.setdefault(r.product or "", []).append(r.sequence)
        gaps = sum(
            1
            for seqs in per_product.values()
            for x, y in zip(sorted(set(seqs)), sorted(set(seqs))[1:], strict=False)
            if y != x + 1
        )
        kill_delays = [got[c][0] - offset - at for c, at in acked2.items() if c in got]
        return {
            "webhook_delay": summary(hook_delays),
            "stream_delay": summary(stream_delays),
            "killed_run": {
                "events": args.events,
                "delivered": len(acked2) - len(lost),
                "lost": len(lost),
                "duplicates": sum(n - 1 for n in ids.values() if n > 1),
                "sequence_gaps": gaps,
                "unverified": sum(not r.verified for r in receiver.got),
                "delay": summary(kill_delays),
            },
        }


def _page(result: dict[str, Any], argv: str) -> None:
    hook, stream, killed = result["webhook_delay"], result["stream_delay"], result["killed_run"]
    lines = [
        "# Webhooks across processes",
        "",
        f"Run {result['run_at']} on {result['machine']}, Python {result['python']}: "
        f"`python -m benchmarks.live.webhooks {argv}`, DynamoDB Local in memory, two servers "
        f"with webhooks on (stream poll {result['poll']} s, due-lane poll "
        f"{result['webhook_poll']} s, lease {result['lease']} s), writes through B's API at "
        f"about {result['rate']}/s over {PRODUCTS} products, a receiver on loopback verifying "
        "every signature. The baseline is the stream itself: this process follows it and "
        "times the same acknowledgement to the record's arrival.",
        "",
        "| figure | n | median | p90 | p99 | max |",
        "|---|---|---|---|---|---|",
    ]
    for name, s in (
        ("write acknowledged to webhook received", hook),
        ("write acknowledged to stream record read (baseline)", stream),
        ("webhook received, run with a process killed", killed["delay"]),
    ):
        lines.append(
            f"| {name} | {s['n']} | {s['median_ms']} ms | {s['p90_ms']} ms | "
            f"{s['p99_ms']} ms | {s['max_ms']} ms |"
        )
    lines += [
        "",
        f"A killed (SIGKILL) half way through {killed['events']} writes: "
        f"{killed['delivered']} delivered, {killed['lost']} lost, {killed['duplicates']} "
        f"duplicates, {killed['sequence_gaps']} gaps in per-product sequence numbers, "
        f"{killed['unverified']} signatures that did not verify. Events written while A's "
        "shards and lanes waited for their lease to run out arrive that much later (the "
        "max above).",
        "",
    ]
    (PAGES / "webhooks.md").write_text("\n".join(lines))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="benchmarks.live.webhooks")
    parser.add_argument("--events", type=int, default=1000)
    parser.add_argument("--rate", type=float, default=20.0, help="writes a second, about")
    parser.add_argument("--poll", type=float, default=0.25, help="STREAM_POLL_SECONDS")
    parser.add_argument("--webhook-poll", type=float, default=0.1, help="WEBHOOK_POLL_SECONDS")
    parser.add_argument("--lease", type=float, default=10.0, help="WEBHOOK_LEASE_SECONDS")
    args = parser.parse_args(argv)
    secret = secrets.token_urlsafe(32)
    env = {
        "WEBHOOKS": "true",
        "STREAM_POLL_SECONDS": str(args.poll),
        "WEBHOOK_POLL_SECONDS": str(args.webhook_poll),
        "WEBHOOK_LEASE_SECONDS": str(args.lease),
        "WEBHOOK_CONNECT_SECONDS": "1",
        "WEBHOOK_READ_SECONDS": "2",
        "SHUTDOWN_DELAY_SECONDS": "0",
    }
    with LocalEngine() as engine:

        async def make() -> None:
            async with open_client(ClientSettings(endpoint_url=engine.endpoint_url)) as client:
                await create_table(client, TABLE)

        asyncio.run(make())
        say("starting two servers")
        with (
            live_server(engine.endpoint_url, TABLE, secret, log=None, **env) as a,
            live_server(engine.endpoint_url, TABLE, secret, log=None, **env) as b,
        ):
            result = asyncio.run(_run(engine, b, a.pid, secret, args))
    stamp = datetime.now(UTC).strftime("%Y-%m-%dT%H%MZ")
    result |= {
        "run_at": stamp,
        "machine": platform.machine(),
        "python": platform.python_version(),
        "poll": args.poll,
        "webhook_poll": args.webhook_poll,
        "lease": args.lease,
        "rate": args.rate,
    }
    out = HERE / "results" / f"webhooks-{stamp}.json"
    out.write_text(json.dumps(result, indent=2) + "\n")
    shown = " ".join(sys.argv[1:] if argv is None else argv) or "(defaults)"
    _page(result, shown)
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
