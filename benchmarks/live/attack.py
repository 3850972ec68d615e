"""A plain reader beside hostile subscribers and a writer: what live updates cost others.

    .venv/bin/python -m benchmarks.live.attack [--seconds 10] [--edits 5]

Starts DynamoDB Local in memory, a table with its stream and one server. A reader asks for
a product page (the counters and the first 20 comments, over POST, so nothing is cached)
one request after another; its latency is measured:

1. **solo**: the reader alone, for ``--seconds``, before the attacks and again after them
   (the baseline is their mean: the machine is shared, and its pace drifts);
2. for each attack, the reader again while one anonymous client holds 10 WebSocket
   connections with 10 subscriptions each on the same product, and one ordinary account
   edits its comment there ``--edits`` times, spread over the window:

   - ``listing``: the issue's document, 30 aliases of the event's comment each reading
     the product's listing (``comment { product { comments(...) } }``);
   - ``budget``: what is left to an attacker when listings are refused: 100 different
     documents (so none shares another's resolution), each as costly as one event may be.

Reported: the reader's requests, p50 and p99 in each phase, and the ratios against its solo
run in the same run; the subscriptions the server accepted and refused; the events it
resolved and the storage calls they made (from its metrics). Writes
``results/live-attack-<timestamp>.json``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import platform
import secrets
import statistics
import sys
import time
from contextlib import AsyncExitStack
from datetime import UTC, datetime
from typing import Any

import httpx

from benchmarks.live.processes import quantile, say
from benchmarks.report import save_result
from resolvers.auth import mint
from server.dev.local_engine import LocalEngine
from storage.engine.client import ClientSettings, open_client
from storage.ops.create import create_table
from testing.live_server import LiveServer, live_server
from testing.scrape import parse_scrape, sample
from testing.subscriber import subscriber

TABLE = "live_attack"
PRODUCT = "attacked"
PAGE = """query($pid: ID!) { product(productId: $pid) {
  stats { total average histogram { rating count } }
  comments(first: 20) { totalCount nodes { commentId rating title body author createdAt } }
} }"""
CREATE = """mutation($input: CreateCommentInput!) {
  createComment(input: $input) { comment { commentId } userErrors { code message } } }"""
EDIT = """mutation($input: UpdateCommentInput!) {
  updateComment(input: $input) { comment { commentId } userErrors { code message } } }"""
SOCKETS = 10
PER_SOCKET = 10


def listing_document() -> str:
    aliases = " ".join(
        f"c{n}: comment {{ product {{ comments(ratings: [1, 2], first: 5) "
        "{ totalCount nodes { body } } } }"
        for n in range(30)
    )
    return f"subscription($pid: ID!) {{ commentEvents(productId: $pid) {{ {aliases} }} }}"


def budget_document(n: int, calls: int) -> str:
    """A document of its own (its alias names differ), making ``calls`` reads per event."""
    aliases = " ".join(
        f"d{n}x{k}: comment {{ product {{ stats {{ total }} }} }}" for k in range(calls)
    )
    return f"subscription($pid: ID!) {{ commentEvents(productId: $pid) {{ kind {aliases} }} }}"


def summary(values: list[float]) -> dict[str, float]:
    return {
        "requests": len(values),
        "p50_ms": round(statistics.median(values) * 1000, 1),
        "p99_ms": round(quantile(values, 0.99) * 1000, 1),
        # A write's events are resolved in a burst: the few requests caught in it show in
        # the maximum and the mean (and in how few requests fit the window), not the p99.
        "max_ms": round(max(values) * 1000, 1),
        "mean_ms": round(statistics.mean(values) * 1000, 1),
    }


async def _post(
    http: httpx.AsyncClient, server: LiveServer, query: str, token: str | None, **variables: Any
) -> dict[str, Any]:
    headers = {} if token is None else {"authorization": f"Bearer {token}"}
    response = await http.post(
        server.graphql_url, json={"query": query, "variables": variables}, headers=headers
    )
    body: dict[str, Any] = response.json()
    return body


async def _read(
    http: httpx.AsyncClient, server: LiveServer, seconds: float
) -> tuple[list[float], int]:
    """The reader's latencies, and how many of its pages came back with errors."""
    took: list[float] = []
    failed = 0
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        started = time.perf_counter()
        body = await _post(http, server, PAGE, None, pid=PRODUCT)
        took.append(time.perf_counter() - started)
        failed += "errors" in body
    return took, failed


async def _edit(
    http: httpx.AsyncClient, server: LiveServer, token: str, cid: str, edits: int, seconds: float
) -> int:
    done = 0
    for n in range(edits):
        await asyncio.sleep(seconds / (edits + 1))
        body = await _post(http, server, EDIT, token, input={"id": cid, "body": f"edit {n}"})
        errors = body.get("errors") or body["data"]["updateComment"]["userErrors"]
        done += not errors
    return done


async def _work(http: httpx.AsyncClient, server: LiveServer) -> tuple[float, float]:
    scraped = parse_scrape((await http.get(f"{server.base_url}/metrics")).text)
    return (
        sample(scraped, "comments_subscription_resolutions_total"),
        sample(scraped, "comments_subscription_storage_calls_total"),
    )


async def attack(
    server: LiveServer, documents: list[str], token: str, cid: str, args: argparse.Namespace
) -> dict[str, Any]:
    async with AsyncExitStack() as stack:
        http = await stack.enter_async_context(httpx.AsyncClient(timeout=60))
        accepted = refused = 0
        clients = []
        for socket in range(SOCKETS):
            client = await stack.enter_async_context(subscriber(server.graphql_url))
            for n in range(PER_SOCKET):
                document = documents[(socket * PER_SOCKET + n) % len(documents)]
                await client.subscribe(str(n), document, {"pid": PRODUCT})
            clients.append(client)
        for client in clients:
            for n in range(PER_SOCKET):
                try:
                    message = await client.next(str(n), seconds=0.5)
                except TimeoutError:
                    accepted += 1  # no refusal: it waits for events
                    continue
                refused += message["type"] == "error"
                accepted += message["type"] != "error"
        before = await _work(http, server)
        reading = asyncio.create_task(_read(http, server, args.seconds))
        edits = await _edit(http, server, token, cid, args.edits, args.seconds)
        took, failed = await reading
        await asyncio.sleep(1)
        after = await _work(http, server)
    return {
        **summary(took),
        "reader_errors": failed,
        "subscriptions_accepted": accepted,
        "subscriptions_refused": refused,
        "edits": edits,
        "events_resolved": after[0] - before[0],
        "event_storage_calls": after[1] - before[1],
    }


async def run(server: LiveServer, secret: str, args: argparse.Namespace) -> dict[str, Any]:
    author = mint(secret, "attacker", name="Ordinary")
    seeder = mint(secret, "seeder", name="Seeder")
    async with httpx.AsyncClient(timeout=60) as http:
        for n in range(40):
            await _post(
                http,
                server,
                CREATE,
                mint(secret, f"s{n}", name="S"),
                input={"productId": PRODUCT, "rating": 1 + n % 5, "language": "en", "body": "x"},
            )
        made = await _post(
            http,
            server,
            CREATE,
            author,
            input={"productId": PRODUCT, "rating": 2, "language": "en", "body": "mine"},
        )
        cid = made["data"]["createComment"]["comment"]["commentId"]
        del seeder
        await _read(http, server, 2.0)  # warm-up: the engine and the server's caches
        say(f"solo reader, {args.seconds} s")
        took, failed = await _read(http, server, args.seconds)
        solo = {**summary(took), "reader_errors": failed}
    result: dict[str, Any] = {"solo": solo}
    attacks = {
        "listing": [listing_document()],
        "budget": [budget_document(n, args.event_cost) for n in range(SOCKETS * PER_SOCKET)],
    }
    for name, documents in attacks.items():
        say(f"reader beside the {name} attack, {args.seconds} s")
        result[name] = await attack(server, documents, author, cid, args)
    async with httpx.AsyncClient(timeout=60) as http:
        say(f"solo reader again, {args.seconds} s")
        took, failed = await _read(http, server, args.seconds)
        result["solo_again"] = {**summary(took), "reader_errors": failed}
    # The baseline: the two solo runs, one before the attacks and one after (the machine
    # is shared; its pace drifts).
    figures = ("p50_ms", "p99_ms", "max_ms", "mean_ms")
    base = {q: statistics.mean([result["solo"][q], result["solo_again"][q]]) for q in figures}
    for name in attacks:
        for q in figures:
            result[name][q.replace("_ms", "_ratio")] = round(result[name][q] / base[q], 2)
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--edits", type=int, default=5)
    parser.add_argument(
        "--event-cost", type=int, default=5, help="storage calls of each budget document"
    )
    args = parser.parse_args(argv)
    secret = secrets.token_urlsafe(32)
    say("starting DynamoDB Local, the table and a server")
    with LocalEngine() as engine:

        async def make() -> None:
            async with open_client(ClientSettings(endpoint_url=engine.endpoint_url)) as client:
                await create_table(client, TABLE)

        asyncio.run(make())
        env = {"SUBSCRIPTION_IDLE_SECONDS": "3600", "COMMENTS_PER_HOUR": "0"}
        with live_server(engine.endpoint_url, TABLE, secret, log=None, **env) as server:
            found = asyncio.run(run(server, secret, args))
    result = {
        "when": datetime.now(UTC).strftime("%Y-%m-%dT%H:%MZ"),
        "machine": f"{platform.machine()}, Python {platform.python_version()}",
        "command": "python -m benchmarks.live.attack " + " ".join(argv or sys.argv[1:]),
        **found,
    }
    out = save_result("live-attack", result)
    print(json.dumps(result, indent=2))
    say(f"wrote {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
