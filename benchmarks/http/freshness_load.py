"""The freshness benchmark's read loads (benchmarks.http.freshness): product-page GETs with
a Zipf popularity, through the proxy and straight to the servers, and what the servers'
/metrics say about them.

Accounting, from both ends:

- at the load generator, every answer through the proxy is counted by its ``X-Cache``
  (HIT: Varnish answered; MISS: it asked a server);
- at the servers, before and after each load, their metrics: GraphQL requests of the page
  (``comments_graphql_request_duration_seconds_count`` for its operation, answers from the
  map included), answers from each process's map (``comments_cache_lookups_total``,
  ``cache="answers"``, ``result="hit"``) and executions (``comments_storage_rounds_count``
  for the operation: observed for every executed request, never for one from the map).

Through the proxy the servers receive the misses and nothing else; straight to them, every
GET. Requests from the map plus executions add up to requests received.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

import httpx

from benchmarks.http.loadgen import LoadResult, get_request, run_requests
from benchmarks.http.nginx_cache import HEADERS, page_target
from benchmarks.http.throughput import cpu_seconds
from testing.scrape import Samples, parse_scrape

HOST = "127.0.0.1"
OPERATION = "ProductPage"  # the page query's name (benchmarks.http.nginx_cache.PAGE)
REQUESTS = "comments_graphql_request_duration_seconds_count"
LOOKUPS = "comments_cache_lookups_total"
EXECUTED = "comments_storage_rounds_count"


def total(samples: Samples, name: str, **labels: str) -> float:
    """The sum of the samples of that name whose labels include these."""
    wanted = set(labels.items())
    return sum(v for (n, ls), v in samples.items() if n == name and wanted <= ls)


@dataclass(frozen=True)
class Counts:
    """One process's page figures from its metrics, at one moment."""

    received: float  # GraphQL requests of the page, however answered
    map_hits: float  # answered from the process's map
    map_misses: float  # map lookups that found nothing (some then waited for a flight)
    executed: float  # executed (storage figures observed)

    def __sub__(self, other: Counts) -> Counts:
        return Counts(
            self.received - other.received,
            self.map_hits - other.map_hits,
            self.map_misses - other.map_misses,
            self.executed - other.executed,
        )

    def __add__(self, other: Counts) -> Counts:
        return Counts(
            self.received + other.received,
            self.map_hits + other.map_hits,
            self.map_misses + other.map_misses,
            self.executed + other.executed,
        )

    def figures(self) -> dict[str, int]:
        return {
            "received": int(self.received),
            "map_hits": int(self.map_hits),
            "map_misses": int(self.map_misses),
            "executed": int(self.executed),
        }


ZERO = Counts(0, 0, 0, 0)


async def counts(http: httpx.AsyncClient, base_url: str) -> Counts:
    scraped = parse_scrape((await http.get(f"{base_url}/metrics")).text)
    return Counts(
        total(scraped, REQUESTS, operation=OPERATION),
        total(scraped, LOOKUPS, cache="answers", result="hit"),
        total(scraped, LOOKUPS, cache="answers", result="miss"),
        total(scraped, EXECUTED, operation=OPERATION),
    )


async def all_counts(http: httpx.AsyncClient, base_urls: list[str]) -> list[Counts]:
    return [await counts(http, url) for url in base_urls]


def summed(after: list[Counts], before: list[Counts]) -> Counts:
    found = ZERO
    for a, b in zip(after, before, strict=True):
        found = found + (a - b)
    return found


def page_requests(port: int, views: list[str]) -> list[bytes]:
    """The page views as whole GETs to ``port`` (by the persisted query's hash)."""
    return [get_request(HOST, port, page_target(p), HEADERS) for p in views]


async def load(
    ports: list[int],
    views: list[str],
    *,
    concurrency: int,
    seconds: float,
    watch: str | None = None,
    pace: float = 0.0,
    stop: asyncio.Event | None = None,
) -> LoadResult:
    """Closed-loop (or paced) page views spread over ``ports``, ``concurrency`` connections
    in all (at least one each), merged into one result."""
    share = max(1, concurrency // len(ports))
    results = await asyncio.gather(
        *(
            run_requests(
                HOST,
                port,
                page_requests(port, views[i:] + views[:i]),
                concurrency=share,
                seconds=seconds,
                watch=watch,
                pace=pace,
                stop=stop,
            )
            for i, port in enumerate(ports)
        )
    )
    merged = LoadResult(seconds=max(r.seconds for r in results))
    for r in results:
        merged.requests += r.requests
        merged.errors += r.errors
        merged.latencies_ms += r.latencies_ms
        merged.watched.update(r.watched)
    return merged


async def measured(
    http: httpx.AsyncClient,
    ports: list[int],
    views: list[str],
    *,
    servers: dict[str, int],
    others: dict[str, int],
    concurrency: int,
    seconds: float,
    watch: str | None = None,
) -> dict[str, Any]:
    """One load of ``ports`` with the CPU of the ``servers`` (base URL -> PID: summed as the
    servers' CPU) and of the ``others`` (name -> PID), and the servers' page counts, around
    it."""
    urls = list(servers)
    pids = {**{f"server {n}": servers[u] for n, u in enumerate(urls)}, **others}
    before = await all_counts(http, urls)
    cpu = {name: cpu_seconds(pid) for name, pid in pids.items()}
    result = await load(ports, views, concurrency=concurrency, seconds=seconds, watch=watch)
    used = {name: cpu_seconds(pid) - cpu[name] for name, pid in pids.items()}
    after = await all_counts(http, urls)
    servers_cpu = sum(used[f"server {n}"] for n in range(len(urls)))
    done = max(result.requests, 1)
    return {
        "requests": result.requests,
        "errors": result.errors,
        "seconds": round(result.seconds, 2),
        "req_per_s": round(result.requests / result.seconds, 1) if result.seconds else 0.0,
        "cache": dict(sorted(result.watched.items())),
        "counts": summed(after, before).figures(),
        "server_cpu_ms_per_request": round(1000 * servers_cpu / done, 4),
        **{f"{k}_cpu_ms_per_request": round(1000 * used[k] / done, 4) for k in others},
    }
