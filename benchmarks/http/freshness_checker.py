"""The freshness benchmark's stale-answer checker (benchmarks.http.freshness): after each
write has settled, every product's page as the proxy and each server give it (GET: from
the proxy's cache or a process's map, when they hold it) against a read nothing keeps (a
POST, executed every time).

A product is compared only while none of its writes is unsettled (sent, and not yet both
at every process and 2 s old): a write still on its way may show anywhere or nowhere yet,
which is the visibility figure's business, not a stale answer. A check that saw one of
the product's writes start while it read is taken again once the write has settled, so
what is compared is always one state of the table; a product never quiet within the
attempts allowed is reported as unchecked, never silently skipped.

A mismatch is kept with what differed (comments missing or extra, bodies, counters) and
whether the same source answered right 1.5 s later (a purge's repeat, one second after the
first, heals a proxy that kept an answer fetched while a process still had the old one).
"""

from __future__ import annotations

import asyncio
from typing import Any

import httpx

from benchmarks.http.freshness_writes import Chain
from benchmarks.http.nginx_cache import HEADERS, PAGE, page_target
from testing.live_server import LiveServer

ATTEMPTS = 20
QUIET_SECONDS = 60.0
HEAL_SECONDS = 1.5
KEPT_MISMATCHES = 50


def describe(expected: Any, got: Any) -> str:
    """What differs between two page answers' data, in a line."""
    if not isinstance(got, dict) or not isinstance(expected, dict):
        return f"not a page: {str(got)[:200]}"
    want, have = expected.get("product") or {}, got.get("product") or {}
    parts = []
    if want.get("stats") != have.get("stats"):
        parts.append(f"stats {have.get('stats')} instead of {want.get('stats')}")

    def nodes(product: dict[str, Any]) -> dict[str, dict[str, Any]]:
        edges = (product.get("comments") or {}).get("edges") or []
        return {e["node"]["commentId"]: e["node"] for e in edges}

    a, b = nodes(want), nodes(have)
    if missing := [c for c in a if c not in b]:
        parts.append(f"missing comments {missing}")
    if extra := [c for c in b if c not in a]:
        parts.append(f"extra comments {extra}")
    if changed := [c for c in a if c in b and a[c] != b[c]]:
        parts.append(f"comments differing {changed}")
    rest = {k for k in want.keys() | have.keys() if k not in ("stats", "comments")}
    if differing := sorted(k for k in rest if want.get(k) != have.get(k)):
        parts.append(f"fields differing {differing}")
    if not parts and want.get("comments") != have.get("comments"):
        parts.append("the listing differs (order, cursors or counts)")
    return "; ".join(parts) or "no difference in the page's fields"


class StaleChecker:
    """Passes over every product; ``compared``, ``mismatches`` and ``unchecked`` are the
    accounting the report and its test read."""

    def __init__(
        self,
        http: httpx.AsyncClient,
        servers: list[LiveServer],
        proxy_url: str,
        chains: list[Chain],
        *,
        concurrency: int = 4,
        heal_seconds: float = HEAL_SECONDS,
    ) -> None:
        self.http = http
        self.servers = servers
        self.proxy_url = proxy_url
        self.chains = chains
        self.heal_seconds = heal_seconds
        self.passes = 0
        self.pass_seconds: list[float] = []  # how long each pass took
        self.compared = {"proxy": 0, "direct": 0}
        self.products_checked = 0
        self.retried = 0
        self.unchecked: list[dict[str, Any]] = []
        self.mismatches: list[dict[str, Any]] = []
        self.mismatch_count = 0
        self._slots = asyncio.Semaphore(concurrency)
        self._turn = 0

    async def check(self, write: int) -> None:
        """Compare every product once, for the write numbered ``write``."""
        loop = asyncio.get_running_loop()
        started = loop.time()
        await asyncio.gather(*(self._product(chain, write) for chain in self.chains))
        self.passes += 1
        self.pass_seconds.append(loop.time() - started)

    async def _product(self, chain: Chain, write: int) -> None:
        for _ in range(ATTEMPTS):
            await self._quiet(chain)
            async with self._slots:
                if chain.unsettled:
                    continue
                generation = chain.generation
                truth = await self._truth(chain.product)
                proxied = await self._get(self.proxy_url, chain.product)
                direct = [await self._get(s.base_url, chain.product) for s in self.servers]
                if chain.generation != generation or chain.unsettled:
                    self.retried += 1
                    continue
            self.products_checked += 1
            sources = [("proxy", self.proxy_url, proxied)]
            sources += [
                (f"server {i}", s.base_url, d)
                for i, (s, d) in enumerate(zip(self.servers, direct, strict=True))
            ]
            for where, base, (answer, cache) in sources:
                self.compared["proxy" if where == "proxy" else "direct"] += 1
                if answer.get("data") != truth or answer.get("errors"):
                    await self._mismatch(chain, write, where, base, truth, answer, cache)
            return
        self.unchecked.append({"write": write, "product": chain.product})

    async def _quiet(self, chain: Chain) -> None:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + QUIET_SECONDS
        while chain.unsettled:
            if loop.time() > deadline:
                raise RuntimeError(f"{chain.product}'s writes never settled")
            await asyncio.sleep(0.05)

    async def _truth(self, product: str) -> Any:
        """The page read by POST, which nothing keeps, from the servers in turn."""
        server = self.servers[self._turn % len(self.servers)]
        self._turn += 1
        response = await self.http.post(
            server.graphql_url,
            json={"query": PAGE, "variables": {"productId": product}},
            headers=HEADERS,
        )
        body = response.json()
        if response.status_code != 200 or body.get("errors") or not body.get("data"):
            raise RuntimeError(f"the uncached read failed: {response.text[:500]}")
        return body["data"]

    async def _get(self, base: str, product: str) -> tuple[dict[str, Any], str]:
        """The page by GET, as readers ask for it; the answer and its X-Cache."""
        response = await self.http.get(base + page_target(product), headers=HEADERS)
        try:
            answer: dict[str, Any] = response.json()
        except ValueError:
            answer = {"errors": [{"message": f"{response.status_code}: {response.text[:200]}"}]}
        return answer, response.headers.get("x-cache", "-")

    async def _mismatch(
        self,
        chain: Chain,
        write: int,
        where: str,
        base: str,
        truth: Any,
        answer: dict[str, Any],
        cache: str,
    ) -> None:
        self.mismatch_count += 1
        if len(self.mismatches) >= KEPT_MISMATCHES:
            return
        found: dict[str, Any] = {
            "write": write,
            "product": chain.product,
            "where": where,
            "x_cache": cache,
            "difference": describe(truth, answer.get("data"))
            if not answer.get("errors")
            else f"errors: {answer['errors']}",
        }
        self.mismatches.append(found)
        await asyncio.sleep(self.heal_seconds)
        if chain.unsettled:
            found["healed"] = None  # a write started since: nothing to compare with
            return
        again, _ = await self._get(base, chain.product)
        found["healed"] = again.get("data") == await self._truth(chain.product)
