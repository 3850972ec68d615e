"""How fresh answers are at the edge, and what keeping them saves: several servers on one
table behind the shipped Varnish, purging it and fanning the stream out through Redis.

    .venv/bin/python -m benchmarks.http.freshness [--quick] [--seed 7]

DynamoDB Local in memory, loaded with the product-page data set (benchmarks.data.pages);
a fan-out broker, the servers (``testing.fleet``), Varnish in front, and the in-memory
floor (benchmarks.http.floor ``--pages``, the same data) beside them. Then, in one run:

1. *Freshness through the proxy.* Writes spread over the products (a create, an edit of
   it, its rejection by a moderator, in turn per product) go straight to the servers while
   readers load the same pages through the proxy; after each write's answer a reader
   polls its page through the proxy until it shows the write: the delay, per write and by
   kind. Subscriptions on every server say when the change had reached every process.
2. *Stale answers.* For each write, once it had reached every process and was 2 s old,
   every product's page through the proxy and straight from each server (GET) against a
   POST, which nothing keeps (benchmarks.http.freshness_checker).
3. *A read-heavy mix* (page views with a Zipf popularity, one write a second): through
   the proxy, the share Varnish answered (``X-Cache`` at the load generator) against what
   the servers received and executed (their /metrics); then straight to the servers in
   rounds interleaved with the floor, the share answered from each process's map and the
   servers' CPU per request against the floor's.

Writes ``benchmarks/results/freshness-<timestamp>[-quick].json`` and, for a full run, the
page ``docs/benchmarks/freshness.md`` (benchmarks.http.freshness_report).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import AsyncExitStack, contextmanager, suppress
from dataclasses import asdict, dataclass, replace
from datetime import UTC, datetime
from typing import Any

import httpx

from benchmarks import data
from benchmarks.http import freshness_report as report
from benchmarks.http.freshness_checker import StaleChecker
from benchmarks.http.freshness_load import load, measured
from benchmarks.http.freshness_writes import (
    Chain,
    Events,
    Write,
    Writer,
    next_free,
    settle_after,
    watch,
)
from benchmarks.http.loadgen import LoadResult
from benchmarks.http.nginx_cache import HEADERS, PAGE, popular
from benchmarks.report import run_header, save_result
from server.dev.local_engine import LocalEngine, free_port
from server.http.persisted import sha256_hex
from storage.engine.client import ClientSettings, open_client
from storage.engine.table import TableRef
from testing.fleet import Fleet, fleet
from testing.live_server import server_process

SECRET = "bench-secret-" + "x" * 32
FLOOR_SECRET = "floor-secret-" + "x" * 32  # benchmarks.http.floor's own
# As in production: answers carry no per-request figures, so kept and executed answers
# are the same bytes.
SERVER_ENV = {"CREATE_TABLE": "false", "SEED_DEMO": "false", "EXPLAIN": "false"}
Say = Callable[[str], None]


def say(message: str) -> None:
    print(f"==> {message}", file=sys.stderr, flush=True)


@dataclass(frozen=True)
class Config:
    products: int = 20
    servers: int = 4
    writes: int = 300  # in the freshness phase
    write_rate: float = 2.0  # writes a second in the freshness phase
    poll_seconds: float = 0.02  # a watcher's pause between polls through the proxy
    readers: int = 8  # connections loading pages through the proxy meanwhile
    reader_rate: float = 25.0  # pages a second per reader connection
    settle_seconds: float = 2.0  # the checker compares a write's product no sooner
    reach_seconds: float = 10.0  # the longest a write waits for every process's event
    give_up_seconds: float = 30.0  # the longest a watcher polls
    mix_write_rate: float = 1.0  # writes a second during the read-heavy mix
    mix_seconds: float = 30.0  # the mix through the proxy
    concurrency: int = 16  # connections of the read-heavy mix
    rounds: int = 5  # straight to the servers, each against the floor
    round_seconds: float = 10.0
    warmup_seconds: float = 2.0
    views: int = 10_000  # page views in the mix (Zipf over the products)
    seed: int = 7


QUICK = Config(
    products=10,
    servers=2,
    writes=30,
    write_rate=3.0,
    mix_seconds=5.0,
    rounds=2,
    round_seconds=3.0,
    warmup_seconds=1.0,
    views=2_000,
)


@contextmanager
def floor_server(config: Config) -> Iterator[tuple[int, int]]:
    """The floor (benchmarks.http.floor) over the same data; its port and PID."""
    port = free_port()
    command = [sys.executable, "-m", "benchmarks.http.floor", "--port", str(port)]
    command += ["--seed", str(config.seed), "--pages", str(config.products)]
    env = {"EXPLAIN": "false", "HOST": "127.0.0.1", "PORT": str(port)}
    with server_process(command, port, env, timeout=300) as pid:
        yield port, pid


async def _load_table(endpoint_url: str, table: str, config: Config) -> int:
    comments = data.pages(config.seed, config.products)
    async with open_client(ClientSettings(endpoint_url=endpoint_url, read_timeout=120)) as client:
        await data.load(TableRef(client, table), comments)
    return len(comments)


def measure(config: Config, engine: LocalEngine, log: Say = say) -> dict[str, Any]:
    """The whole run on ``engine`` (a table of its own): the result's figures."""
    table = f"fresh_{uuid.uuid4().hex[:8]}"
    log(f"loading {config.products} products")
    comments = asyncio.run(_load_table(engine.endpoint_url, table, config))
    log(f"starting {config.servers} servers, the broker, Varnish and the floor")
    floor = floor_server(config)
    with fleet(
        engine.endpoint_url, table, SECRET, config.servers, env=SERVER_ENV, alongside=[floor]
    ) as running:
        ((floor_port, floor_pid),) = running.alongside
        figures = asyncio.run(_run(config, running, floor_port, floor_pid, engine.pid, log))
    return {"data": {"products": config.products, "comments": comments}, **figures}


async def _run(
    config: Config, running: Fleet, floor_port: int, floor_pid: int, engine: int | None, log: Say
) -> dict[str, Any]:
    return await Site(config, running, floor_port, floor_pid, engine, log).run()


class Site:
    """The running pieces, and the phases over them."""

    def __init__(
        self,
        config: Config,
        running: Fleet,
        floor_port: int,
        floor_pid: int,
        engine_pid: int | None,
        log: Say,
    ) -> None:
        self.config = config
        self.fleet = running
        self.floor_port = floor_port
        self.floor_pid = floor_pid
        self.engine_pid = engine_pid
        self.log = log
        products = data.page_products(config.products)
        self.products = products
        self.views = popular(products, config.views, config.seed)
        self.chains = [Chain(p) for p in products]
        limits = httpx.Limits(max_connections=200, max_keepalive_connections=200)
        self.http = httpx.AsyncClient(timeout=30, limits=limits)
        self.writer = Writer(self.http, running.servers, SECRET)
        self.events = Events(len(running.servers))

    @property
    def floor_url(self) -> str:
        return f"http://127.0.0.1:{self.floor_port}"

    async def run(self) -> dict[str, Any]:
        products = self.products
        async with self.http as http:
            bases = [s.base_url for s in self.fleet.servers]
            await register(http, [*bases, self.floor_url], products[0])
            same = await same_pages(http, self.fleet.servers[0].base_url, self.floor_url, products)
            async with AsyncExitStack() as subscriptions:
                await self.events.subscribe(subscriptions, self.fleet.servers, products)
                self.log("warming up: a write per product seen by every process")
                await self.warm_up()
                self.log(f"freshness: {self.config.writes} writes")
                fresh = await self.freshness()
            self.log(f"read-heavy mix through the proxy ({self.config.mix_seconds:g} s)")
            proxied = await self.proxy_mix()
            self.log(f"straight to the servers against the floor ({self.config.rounds} rounds)")
            rounds = await self.direct_rounds()
        return {
            "floor_same_pages": same,
            **fresh,
            "proxy_mix": proxied,
            "direct_rounds": rounds,
        }

    async def warm_up(self) -> None:
        """Each product's first write, again until every process's subscription has it
        (a subscription is registered moments after its message); then every page read
        through the proxy and from every server, and the writes left to settle."""

        async def one(chain: Chain) -> None:
            for _ in range(10):
                write = await self.writer.write(chain, -1)
                chain.unsettled -= 1
                await self.events.reached(write, 3.0)
                if write.reached_all is not None:
                    return
            raise RuntimeError(f"the subscriptions never received {chain.product}'s writes")

        await asyncio.gather(*(one(c) for c in self.chains))
        await asyncio.sleep(self.config.settle_seconds)
        checker = self._checker()
        await checker.check(-1)
        if checker.mismatch_count or checker.unchecked:
            raise RuntimeError(f"the pages disagree before the run: {checker.mismatches}")

    def _checker(self) -> StaleChecker:
        return StaleChecker(self.http, self.fleet.servers, self.fleet.proxy.url, self.chains)

    async def freshness(self) -> dict[str, Any]:
        config = self.config
        loop = asyncio.get_running_loop()
        stop = asyncio.Event()
        readers = asyncio.create_task(
            _proxy_readers(self.fleet.proxy.port or 0, self.views, config, stop)
        )
        checker = self._checker()
        writes: list[Write] = []

        async def one(chain: Chain, n: int) -> None:
            write = await self.writer.write(chain, n)
            writes.append(write)
            reached = asyncio.create_task(self.events.reached(write, config.reach_seconds))
            await watch(
                self.http, self.fleet.proxy.url, write, config.poll_seconds, config.give_up_seconds
            )
            chain.busy = False
            await reached
            write.settled = settle_after(write, config.settle_seconds, config.reach_seconds)
            await asyncio.sleep(max(0.0, write.settled - loop.time()))
            chain.unsettled -= 1
            await checker.check(n)

        started = loop.time()
        tasks = []
        turn = 0
        for n in range(config.writes):
            await asyncio.sleep(max(0.0, started + n / config.write_rate - loop.time()))
            turn, chain = await next_free(self.chains, turn, config.give_up_seconds * 2)
            turn += 1
            chain.busy = True
            tasks.append(asyncio.create_task(one(chain, n)))
            if (n + 1) % 50 == 0:
                self.log(f"{n + 1}/{config.writes} writes")
        await asyncio.gather(*tasks)
        stop.set()
        read = await readers
        self.log(f"checker: {checker.mismatch_count} mismatches, {checker.passes} passes")
        return {
            "freshness": {
                "seconds": round(loop.time() - started, 1),
                "writes": [w.record() for w in sorted(writes, key=lambda w: w.n)],
                "readers": {
                    "requests": read.requests,
                    "errors": read.errors,
                    "req_per_s": round(read.requests / read.seconds, 1) if read.seconds else 0,
                    "cache": dict(sorted(read.watched.items())),
                },
                "subscriptions_ended": list(self.events.ended),
            },
            "checker": {
                "passes": checker.passes,
                "pass_seconds": [round(x, 3) for x in checker.pass_seconds],
                "products_checked": checker.products_checked,
                "compared": dict(checker.compared),
                "retried": checker.retried,
                "unchecked": checker.unchecked,
                "mismatches": checker.mismatch_count,
                "mismatch_details": checker.mismatches,
            },
        }

    async def _writing(self, rate: float, stop: asyncio.Event) -> int:
        """Writes at ``rate`` a second until ``stop`` (each product's after its last was
        answered); the number written."""
        loop = asyncio.get_running_loop()
        started = loop.time()
        tasks = []
        turn = 0

        async def one(chain: Chain, n: int) -> None:
            await self.writer.write(chain, n)
            chain.busy = False
            chain.unsettled -= 1

        n = 0
        while not stop.is_set():
            turn, chain = await next_free(self.chains, turn, 60)
            turn += 1
            chain.busy = True
            tasks.append(asyncio.create_task(one(chain, n)))
            n += 1
            pause = max(0.0, started + n / rate - loop.time())
            with suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), pause)
        await asyncio.gather(*tasks)
        return len(tasks)

    def _servers(self) -> dict[str, int]:
        return {s.base_url: s.pid for s in self.fleet.servers}

    async def proxy_mix(self) -> dict[str, Any]:
        config = self.config
        stop = asyncio.Event()
        writing = asyncio.create_task(self._writing(config.mix_write_rate, stop))
        try:
            found = await measured(
                self.http,
                [self.fleet.proxy.port or 0],
                self.views,
                servers=self._servers(),
                others=_others({"proxy": self.fleet.proxy.pid, "engine": self.engine_pid}),
                concurrency=config.concurrency,
                seconds=config.mix_seconds,
                watch="x-cache",
            )
        finally:
            stop.set()
            found_writes = await writing
        return {**found, "writes": found_writes}

    async def direct_rounds(self) -> list[dict[str, Any]]:
        config = self.config
        ours = [s.port for s in self.fleet.servers]
        rows: dict[str, tuple[list[int], dict[str, int], dict[str, int]]] = {
            "ours": (ours, self._servers(), _others({"engine": self.engine_pid})),
            "floor": ([self.floor_port], {self.floor_url: self.floor_pid}, {}),
        }
        stop = asyncio.Event()
        writing = asyncio.create_task(self._writing(config.mix_write_rate, stop))
        rng = random.Random(config.seed)
        rounds = []
        try:
            for ports, _, _ in rows.values():  # warm-up: the maps filled, the floor's caches
                await measured(
                    self.http,
                    ports,
                    self.views,
                    servers={},
                    others={},
                    concurrency=config.concurrency,
                    seconds=config.warmup_seconds,
                )
            for n in range(config.rounds):
                order = list(rows)
                rng.shuffle(order)
                found: dict[str, Any] = {"order": order}
                for name in order:
                    ports, servers, others = rows[name]
                    found[name] = await measured(
                        self.http,
                        ports,
                        self.views,
                        servers=servers,
                        others=others,
                        concurrency=config.concurrency,
                        seconds=config.round_seconds,
                    )
                rounds.append(found)
                self.log(
                    f"round {n + 1}: ours {found['ours']['server_cpu_ms_per_request']:.3f} ms, "
                    f"floor {found['floor']['server_cpu_ms_per_request']:.3f} ms a request"
                )
        finally:
            stop.set()
            written = await writing
        for found in rounds:
            found["writes_during_rounds"] = written
        return rounds


def _others(pids: dict[str, int | None]) -> dict[str, int]:
    return {name: pid for name, pid in pids.items() if pid is not None}


async def _proxy_readers(
    port: int, views: list[str], config: Config, stop: asyncio.Event
) -> LoadResult:
    return await load(
        [port],
        views,
        concurrency=config.readers,
        seconds=24 * 3600,
        watch="x-cache",
        pace=1 / config.reader_rate,
        stop=stop,
    )


async def register(http: httpx.AsyncClient, bases: list[str], product: str) -> None:
    """Register the page's persisted query with every process (each keeps its own)."""
    registration = {
        "query": PAGE,
        "variables": {"productId": product},
        "extensions": {"persistedQuery": {"version": 1, "sha256Hash": sha256_hex(PAGE)}},
    }
    for base in bases:
        answer = await http.post(f"{base}/graphql", json=registration, headers=HEADERS)
        if answer.status_code != 200 or answer.json().get("errors"):
            raise RuntimeError(f"the page's query did not register: {answer.text[:500]}")


async def same_pages(
    http: httpx.AsyncClient, ours: str, floor: str, products: list[str]
) -> dict[str, int]:
    """How many products' pages the floor answers exactly as ours does (the same data)."""
    same = 0
    for product in products:
        body = {"query": PAGE, "variables": {"productId": product}}
        answers = [
            (await http.post(f"{base}/graphql", json=body, headers=HEADERS)).json()
            for base in (ours, floor)
        ]
        # Their data: extensions carry each request's id.
        same += answers[0].get("data") == answers[1].get("data") and not answers[0].get("errors")
    return {"same": same, "products": len(products)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a smoke run of a few minutes")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--servers", type=int, help="server processes (4; quick: 2)")
    parser.add_argument("--writes", type=int, help="writes in the freshness phase (300)")
    args = parser.parse_args()
    config = replace(QUICK if args.quick else Config(), seed=args.seed)
    if args.servers is not None:
        config = replace(config, servers=args.servers)
    if args.writes is not None:
        config = replace(config, writes=args.writes)
    started = time.perf_counter()
    load_before = os.getloadavg()
    with LocalEngine() as engine:
        measured_figures = measure(config, engine)
    when = datetime.now(UTC)
    result: dict[str, Any] = {
        **run_header("benchmarks.http.freshness", when),
        "quick": args.quick,
        "settings": asdict(config),
        # The machine's load average (1, 5, 15 minutes) before and after: other work on the
        # same cores moves every figure.
        "load_average": {
            "before": [round(x, 2) for x in load_before],
            "after": [round(x, 2) for x in os.getloadavg()],
        },
        **measured_figures,
        "duration_seconds": round(time.perf_counter() - started, 1),
    }
    path = save_result("freshness", result, when, tag="quick" if args.quick else "")
    result["file"] = path.name
    print("\n".join(report.section(result)))
    print()
    for target, value, met in report.target_rows(result):
        print(f"{'met' if met else 'NOT MET'}: {target}: {value}")
    if not args.quick:
        say(f"wrote {report.write_page(result)}")
    say(f"wrote {path} in {result['duration_seconds']} s")


if __name__ == "__main__":
    main()
