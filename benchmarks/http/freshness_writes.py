"""The freshness benchmark's writes (benchmarks.http.freshness): each product's chain of
writes, when each reached every process, and when a reader through the proxy first saw it.

Each product cycles through a create, an edit of that comment and its rejection by a
moderator, so the comment a write acts on is always the product's newest, on the first
page, and the page returns to its seeded comments after each cycle. Writes go straight to
the servers in turn (a mutation is never kept by a cache, wherever it enters).

``Events`` subscribes to every product on every server (``commentEvents``): a write's event
reaching a process means the process's map of answers has been told of it (the map is told
of each batch before subscribers hear of it), so the last arrival is when the change had
reached every process. ``watch`` polls the product's page through the proxy until it shows
the write. All times are the event loop's clock.
"""

from __future__ import annotations

import asyncio
from contextlib import AsyncExitStack, suppress
from dataclasses import dataclass, field
from typing import Any, Literal

import httpx

from benchmarks.http.nginx_cache import HEADERS, page_target
from resolvers.auth import mint
from testing.live_server import LiveServer
from testing.subscriber import Closed, Subscriber, subscriber

Kind = Literal["create", "edit", "reject"]
KINDS: tuple[Kind, ...] = ("create", "edit", "reject")
# The event each kind of write makes on its product's listing.
EVENT: dict[Kind, str] = {"create": "PUBLISHED", "edit": "EDITED", "reject": "REMOVED"}
EVENTS = """subscription FreshEvents($pid: ID!) {
  commentEvents(productId: $pid) { kind commentId } }"""
CREATE = """mutation FreshCreate($input: CreateCommentInput!) {
  createComment(input: $input) { comment { id commentId } userErrors { code message } } }"""
EDIT = """mutation FreshEdit($input: UpdateCommentInput!) {
  updateComment(input: $input) { comment { id } userErrors { code message } } }"""
REJECT = """mutation FreshReject($input: ModerateCommentInput!) {
  moderateComment(input: $input) { comment { id } userErrors { code message } } }"""
# The server's default (SUBSCRIPTIONS_PER_CONNECTION): more products take more connections.
SUBSCRIPTIONS_PER_CONNECTION = 10


@dataclass
class Write:
    """One write and what became of it."""

    n: int
    kind: Kind
    product: str
    server: int  # the index of the server it went to
    sent: float
    comment_id: str = ""
    body: str | None = None  # an edit's new body
    acked: float | None = None
    # Server index -> when its subscription received the write's event.
    events: dict[int, float] = field(default_factory=dict)
    reached_all: float | None = None
    settled: float | None = None
    seen: float | None = None  # the first poll through the proxy that showed it
    seen_cache: str | None = None  # that poll's X-Cache
    seen_fetch: float | None = None  # how long that poll took
    polls: int = 0
    warmup: bool = False

    def record(self) -> dict[str, Any]:
        """The write's figures, in seconds from its acknowledgement."""
        assert self.acked is not None
        acked = self.acked

        def since(t: float | None) -> float | None:
            return None if t is None else round(t - acked, 4)

        return {
            "n": self.n,
            "kind": self.kind,
            "product": self.product,
            "server": self.server,
            "write_ms": round(1000 * (self.acked - self.sent), 1),
            "events_s": {str(k): since(v) for k, v in sorted(self.events.items())},
            "reached_all_s": since(self.reached_all),
            "seen_s": since(self.seen),
            "seen_cache": self.seen_cache,
            "seen_fetch_ms": None if self.seen_fetch is None else round(1000 * self.seen_fetch, 1),
            "polls": self.polls,
        }


@dataclass
class Chain:
    """One product's writes: the next kind, the comment it acts on, and what is pending."""

    product: str
    next_kind: Kind = "create"
    node_id: str = ""
    comment_id: str = ""
    # A write the writer waits for before the product's next (acknowledged, or seen).
    busy: bool = False
    # Writes sent and not yet settled (reached every process, and 2 s old): the stale
    # checker compares this product's answers only while there are none.
    unsettled: int = 0
    # Writes ever sent: a check that saw it move during its reads is taken again.
    generation: int = 0


class Writer:
    """Sends each chain's next write to the servers in turn."""

    def __init__(self, http: httpx.AsyncClient, servers: list[LiveServer], secret: str) -> None:
        self.http = http
        self.servers = servers
        self.secret = secret
        self.moderator = mint(secret, "fresh-moderator", name="Moderator", roles=["moderator"])
        self._authors: dict[str, str] = {}
        self._turn = 0
        self.sent = 0

    def _author(self, product: str) -> str:
        token = self._authors.get(product)
        if token is None:
            token = self._authors[product] = mint(self.secret, f"fresh-{product}", name="Fresh")
        return token

    async def write(self, chain: Chain, n: int) -> Write:
        """Send ``chain``'s next write and wait for its answer; the chain moves on."""
        loop = asyncio.get_running_loop()
        index = self._turn % len(self.servers)
        self._turn += 1
        kind = chain.next_kind
        chain.generation += 1
        chain.unsettled += 1
        write = Write(n, kind, chain.product, index, loop.time())
        self.sent += 1
        if kind == "create":
            comment = {
                "productId": chain.product,
                "rating": 4,
                "language": "en",
                "title": f"Fresh {n}",
                "body": f"Written by the freshness benchmark, number {n}.",
            }
            data = await self._send(index, CREATE, comment, self._author(chain.product))
            chain.node_id = data["comment"]["id"]
            chain.comment_id = data["comment"]["commentId"]
            chain.next_kind = "edit"
        elif kind == "edit":
            write.body = f"Edited by the freshness benchmark, number {n}."
            change = {"id": chain.node_id, "body": write.body}
            await self._send(index, EDIT, change, self._author(chain.product))
            chain.next_kind = "reject"
        else:
            decision = {"id": chain.node_id, "decision": "REJECT"}
            await self._send(index, REJECT, decision, self.moderator)
            chain.next_kind = "create"
        write.comment_id = chain.comment_id
        write.acked = loop.time()
        return write

    async def _send(
        self, index: int, document: str, value: dict[str, Any], token: str
    ) -> dict[str, Any]:
        response = await self.http.post(
            self.servers[index].graphql_url,
            json={"query": document, "variables": {"input": value}},
            headers={"authorization": f"Bearer {token}"},
        )
        body = response.json()
        if response.status_code != 200 or body.get("errors"):
            raise RuntimeError(f"a write failed: {response.status_code} {response.text[:500]}")
        (payload,) = body["data"].values()
        if payload["userErrors"]:
            raise RuntimeError(f"a write was refused: {payload['userErrors']}")
        result: dict[str, Any] = payload
        return result


class Events:
    """Every product's events on every server, by (event kind, comment id)."""

    def __init__(self, servers: int) -> None:
        self.servers = servers
        self.arrivals: dict[tuple[str, str], dict[int, float]] = {}
        self._complete: dict[tuple[str, str], asyncio.Event] = {}
        self.ended: list[str] = []  # subscriptions the server ended (none expected)

    async def subscribe(
        self, stack: AsyncExitStack, servers: list[LiveServer], products: list[str]
    ) -> None:
        for index, server in enumerate(servers):
            for start in range(0, len(products), SUBSCRIPTIONS_PER_CONNECTION):
                client = await stack.enter_async_context(subscriber(server.graphql_url))
                for product in products[start : start + SUBSCRIPTIONS_PER_CONNECTION]:
                    await client.subscribe(product, EVENTS, {"pid": product})
                    task = asyncio.create_task(self._read(client, product, index))
                    stack.callback(task.cancel)

    async def _read(self, client: Subscriber, op_id: str, index: int) -> None:
        while True:
            try:
                arrived, message = await client.timed(op_id, 3600)
            except TimeoutError:
                continue
            except Closed as exc:
                self.ended.append(f"server {index}, {op_id}: closed ({exc})")
                return
            payload = message.get("payload") or {}
            if message.get("type") != "next" or payload.get("errors"):
                self.ended.append(f"server {index}, {op_id}: {message}")
                return
            event = payload["data"]["commentEvents"]
            key = (event["kind"], event["commentId"])
            seen = self.arrivals.setdefault(key, {})
            seen.setdefault(index, arrived)
            if len(seen) == self.servers:
                self._done(key).set()

    def _done(self, key: tuple[str, str]) -> asyncio.Event:
        return self._complete.setdefault(key, asyncio.Event())

    async def reached(self, write: Write, seconds: float) -> None:
        """Wait (at most ``seconds``) until every server has the write's event; note when
        each received it, and when the last did."""
        key = (EVENT[write.kind], write.comment_id)
        with suppress(TimeoutError):
            await asyncio.wait_for(self._done(key).wait(), seconds)
        write.events = dict(self.arrivals.get(key, {}))
        if len(write.events) == self.servers:
            write.reached_all = max(write.events.values())


def shows(write: Write, answer: dict[str, Any]) -> bool | None:
    """Whether a page answer shows ``write`` (None: not a page at all)."""
    product = (answer.get("data") or {}).get("product")
    if answer.get("errors") or not product:
        return None
    nodes = {e["node"]["commentId"]: e["node"] for e in product["comments"]["edges"]}
    if write.kind == "create":
        return write.comment_id in nodes
    if write.kind == "edit":
        node = nodes.get(write.comment_id)
        return node is not None and node["body"] == write.body
    return write.comment_id not in nodes


async def watch(
    http: httpx.AsyncClient, proxy_url: str, write: Write, poll: float, give_up: float
) -> None:
    """Poll the write's page through the proxy every ``poll`` seconds until it shows the
    write (at most ``give_up`` seconds after its acknowledgement)."""
    loop = asyncio.get_running_loop()
    assert write.acked is not None
    url = proxy_url + page_target(write.product)
    while loop.time() - write.acked < give_up:
        sent = loop.time()
        response = await http.get(url, headers=HEADERS)
        arrived = loop.time()
        write.polls += 1
        shown = shows(write, response.json()) if response.status_code == 200 else None
        if shown is None:
            raise RuntimeError(f"a page through the proxy failed: {response.text[:500]}")
        if shown:
            write.seen = arrived
            write.seen_cache = response.headers.get("x-cache", "-")
            write.seen_fetch = arrived - sent
            return
        await asyncio.sleep(poll)


async def next_free(chains: list[Chain], start: int, seconds: float) -> tuple[int, Chain]:
    """The first chain from ``start`` (in turn) whose last write the writer no longer waits
    for; waits while every one is busy (at most ``seconds``)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + seconds
    while True:
        for offset in range(len(chains)):
            index = (start + offset) % len(chains)
            if not chains[index].busy:
                return index, chains[index]
        if loop.time() > deadline:
            raise RuntimeError("every product's last write is still awaited")
        await asyncio.sleep(0.01)


def settle_after(write: Write, seconds: float, timeout: float) -> float:
    """When the checker may compare the write's product: once every process has the change
    (or ``timeout`` after the acknowledgement, when one never received it), and at least
    ``seconds`` after the acknowledgement."""
    assert write.acked is not None
    reached = write.reached_all if write.reached_all is not None else write.acked + timeout
    return max(reached, write.acked + seconds)
