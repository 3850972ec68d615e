"""The fan-out across processes, live: several servers on one table with a broker, behind
the shipped Varnish. Each shard is read by one process only (GetRecords counted on every
process's metrics); a write through any process reaches a subscription and the kept
answers of every process, and is purged from the proxy by the shard's reader alone; a
broker restart ends every subscription with EVENTS_LOST, never silence; and when the
reading process is killed, another takes the shard over and writes reach everyone again."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import uuid
from collections.abc import AsyncIterator, Iterator
from contextlib import AsyncExitStack
from typing import Any

import httpx
import pytest

from resolvers.auth import mint
from server.dev.local_broker import LocalBroker
from server.dev.local_engine import LocalEngine
from storage.engine.client import ClientSettings, open_client
from storage.ops.create import create_table
from testing.fleet import Fleet
from testing.fleet import fleet as running_fleet
from testing.live_server import LiveServer
from testing.scrape import parse_scrape, sample
from testing.subscriber import Closed, Subscriber, subscriber
from tests.api_helpers import SECRET

pytestmark = pytest.mark.engine

# Eight: four times the two readers a shard allows, the processes a shop scales out to
# (FANOUT_TEST_PROCESSES may ask for more). They start side by side, in seconds each.
PROCESSES = int(os.environ.get("FANOUT_TEST_PROCESSES", "8"))
# Short, so that a killed reader's shard is taken over within seconds.
LEASE_SECONDS = 2
EVENTS = """subscription($pid: ID!) { commentEvents(productId: $pid) { kind commentId } }"""
CREATE = """mutation($input: CreateCommentInput!) {
  createComment(input: $input) { comment { commentId } userErrors { code } } }"""
AUTHOR = mint(SECRET, "ann", name="Ann")
READS = "comments_stream_get_records_total"
ANSWER_HITS = "comments_cache_lookups_total"
PURGES = "comments_purges_total"
STATS = "query($pid: ID!) { product(productId: $pid) { stats { total } } }"


async def _streamed_table(endpoint_url: str) -> str:
    name = f"fanout_{uuid.uuid4().hex[:8]}"
    async with open_client(ClientSettings(endpoint_url=endpoint_url)) as client:
        await create_table(client, name)
    return name


@pytest.fixture(scope="module")
def fleet(engine: LocalEngine) -> Iterator[Fleet]:
    """The servers on one table with their broker, started side by side (each takes seconds
    to start; one that fails stops those that started), and the proxy in front of them
    all, which they purge (started before anything is written, so that no purge waits out
    a backoff)."""
    table = asyncio.run(_streamed_table(engine.endpoint_url))
    env = {"FANOUT_LEASE_SECONDS": str(LEASE_SECONDS)}
    with running_fleet(engine.endpoint_url, table, SECRET, PROCESSES, env=env) as started:
        yield started


@pytest.fixture(scope="module")
def broker(fleet: Fleet) -> LocalBroker:
    return fleet.broker


@pytest.fixture(scope="module")
def servers(fleet: Fleet) -> list[LiveServer]:
    return fleet.servers


@pytest.fixture
async def http() -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(timeout=30) as client:
        yield client


async def _create(http: httpx.AsyncClient, server: LiveServer, pid: str, body: str) -> str:
    response = await http.post(
        server.graphql_url,
        json={
            "query": CREATE,
            "variables": {"input": {"productId": pid, "rating": 5, "language": "en", "body": body}},
        },
        headers={"authorization": f"Bearer {AUTHOR}"},
    )
    data: dict[str, Any] = response.json()["data"]["createComment"]
    assert data["userErrors"] == [], data
    cid: str = data["comment"]["commentId"]
    return cid


async def _reads(http: httpx.AsyncClient, server: LiveServer) -> float:
    scraped = await http.get(f"{server.base_url}/metrics")
    return sample(parse_scrape(scraped.text), READS)


async def _subscribed(
    stack: AsyncExitStack, servers: list[LiveServer], pid: str
) -> list[Subscriber]:
    clients = []
    for server in servers:
        client = await stack.enter_async_context(
            subscriber(server.graphql_url, authorization=f"Bearer {AUTHOR}")
        )
        await client.subscribe("s", EVENTS, {"pid": pid})
        clients.append(client)
    return clients


async def _until_all_see(
    http: httpx.AsyncClient, writer: LiveServer, clients: list[Subscriber], pid: str
) -> None:
    """Write probes through ``writer`` until every subscription has received one (a
    subscription is registered moments after its message); earlier probes are skipped."""
    probes: list[str] = []
    for _ in range(10):
        probes.append(await _create(http, writer, pid, "probe"))
        try:
            for client in clients:
                while True:
                    message = await client.next("s", seconds=3)
                    assert message["type"] == "next", message
                    assert "errors" not in message["payload"], message
                    if message["payload"]["data"]["commentEvents"]["commentId"] == probes[-1]:
                        break
        except TimeoutError:
            continue
        return
    raise AssertionError("the subscriptions never received a probe")


async def _holders(http: httpx.AsyncClient, servers: list[LiveServer]) -> list[int]:
    """The processes that called GetRecords while eight writes went through: those that
    read a shard."""
    before = [await _reads(http, s) for s in servers]
    await asyncio.sleep(1.5)  # a few polls of the holder (STREAM_POLL_SECONDS, 0.25 s)
    after = [await _reads(http, s) for s in servers]
    return [i for i, (b, a) in enumerate(zip(before, after, strict=True)) if a > b]


async def test_one_reader_per_shard_and_every_process_sees_every_write(
    servers: list[LiveServer], http: httpx.AsyncClient
) -> None:
    pid = f"fan-{uuid.uuid4().hex[:8]}"
    async with AsyncExitStack() as stack:
        clients = await _subscribed(stack, servers, pid)
        await _until_all_see(http, servers[0], clients, pid)
        # DynamoDB Local's stream has one open shard: one process reads it, none other.
        assert len(await _holders(http, servers)) == 1
        # Each says it takes its changes from the broker (what the fan-out alerts select by).
        for server in servers:
            scraped = await http.get(f"{server.base_url}/metrics")
            assert sample(parse_scrape(scraped.text), "comments_fanout_processes") == 1
        # A write through each process reaches the subscription on every process, once.
        written = [await _create(http, s, pid, f"from {i}") for i, s in enumerate(servers)]
        for client in clients:
            seen = [(await client.next("s"))["payload"]["data"]["commentEvents"] for _ in written]
            assert [(e["kind"], e["commentId"]) for e in seen] == [
                ("PUBLISHED", c) for c in written
            ]


async def test_answers_kept_by_every_process_follow_a_write_through_any_other(
    servers: list[LiveServer], http: httpx.AsyncClient
) -> None:
    """Each process's answer map rides on the fan-out as on a follower of its own: once a
    process serves a product's answer from memory, a write through another process reaches
    its next answer (the map has no expiry: without the fan-out's word, never)."""
    pid = f"fan-{uuid.uuid4().hex[:8]}"
    params = {"query": STATS, "variables": json.dumps({"pid": pid})}

    async def total(server: LiveServer) -> int:
        response = await http.get(server.graphql_url, params=params)
        assert response.status_code == 200, response.text
        value: int = response.json()["data"]["product"]["stats"]["total"]
        return value

    async with asyncio.timeout(30):
        for server in servers:
            before = await _answer_hits(http, server)
            while await _answer_hits(http, server) < before + 2:
                assert await total(server) == 0
                await asyncio.sleep(0.05)
    await _create(http, servers[-1], pid, "through the last")
    async with asyncio.timeout(30):
        for server in servers:
            while await total(server) != 1:  # noqa: ASYNC110
                await asyncio.sleep(0.05)


async def _purges(http: httpx.AsyncClient, server: LiveServer) -> float:
    scraped = await http.get(f"{server.base_url}/metrics")
    return sample(parse_scrape(scraped.text), PURGES, outcome="sent")


async def test_a_write_through_one_process_is_purged_from_the_proxy_by_the_reader(
    fleet: Fleet, http: httpx.AsyncClient
) -> None:
    """The proxy keeps a product's answer a day (s-maxage), served from its cache; a write
    through a process that reads no shard reaches the proxy's next answers by a purge from
    the one that does, and from no other."""
    servers = fleet.servers
    pid = f"fan-{uuid.uuid4().hex[:8]}"
    url = f"{fleet.proxy.url}/graphql"
    params = {"query": STATS, "variables": json.dumps({"pid": pid})}

    async def through_proxy() -> tuple[int, str]:
        response = await http.get(url, params=params)
        assert response.status_code == 200, response.text
        assert "s-maxage=86400" in response.headers["cache-control"]
        assert "surrogate-key" not in response.headers  # the proxy's business only
        value: int = response.json()["data"]["product"]["stats"]["total"]
        return value, response.headers["x-cache"]

    async with asyncio.timeout(30):
        while await through_proxy() != (0, "HIT"):  # noqa: ASYNC110
            await asyncio.sleep(0.05)
    (holder,) = await _holders(http, servers)
    writer = next(s for i, s in enumerate(servers) if i != holder)
    before = [await _purges(http, s) for s in servers]
    await _create(http, writer, pid, "through a process that reads no shard")
    async with asyncio.timeout(30):
        while (await through_proxy())[0] != 1:  # noqa: ASYNC110
            await asyncio.sleep(0.05)
    assert await through_proxy() == (1, "HIT")  # kept again, fresh
    # The reader counts a purge once the proxy has answered it, which may be after the
    # proxy's next answer: wait for its purge and the repeat a second later (by then any
    # other process's purge would have been counted too).
    async with asyncio.timeout(30):
        while await _purges(http, servers[holder]) < before[holder] + 2:  # noqa: ASYNC110
            await asyncio.sleep(0.1)
    after = [await _purges(http, s) for s in servers]
    purged_by = [i for i, (b, a) in enumerate(zip(before, after, strict=True)) if a > b]
    assert purged_by == [holder]


async def _answer_hits(http: httpx.AsyncClient, server: LiveServer) -> float:
    scraped = await http.get(f"{server.base_url}/metrics")
    return sample(parse_scrape(scraped.text), ANSWER_HITS, cache="answers", result="hit")


async def test_a_broker_restart_ends_every_subscription_with_events_lost(
    servers: list[LiveServer], broker: LocalBroker, http: httpx.AsyncClient
) -> None:
    pid = f"fan-{uuid.uuid4().hex[:8]}"
    async with AsyncExitStack() as stack:
        clients = await _subscribed(stack, servers, pid)
        await _until_all_see(http, servers[0], clients, pid)
        broker.kill()
        await asyncio.to_thread(broker.start)
        for client in clients:
            message = await client.next("s")
            assert message["type"] == "next", message
            (error,) = message["payload"]["errors"]
            assert error["extensions"]["code"] == "EVENTS_LOST", message
    # Connected again, every process sees writes again.
    async with AsyncExitStack() as stack:
        clients = await _subscribed(stack, servers, pid)
        await _until_all_see(http, servers[1], clients, pid)


async def test_a_killed_readers_shard_is_taken_over(
    servers: list[LiveServer], http: httpx.AsyncClient
) -> None:
    pid = f"fan-{uuid.uuid4().hex[:8]}"
    (holder,) = await _holders(http, servers)
    os.kill(servers[holder].pid, signal.SIGKILL)
    alive = [s for i, s in enumerate(servers) if i != holder]
    async with AsyncExitStack() as stack:
        clients = await _subscribed(stack, alive, pid)
        # Within the lease another process holds the shard and publishes what it reads;
        # the processes that see the hand-over end their subscriptions with EVENTS_LOST,
        # so the probes' loop subscribes again until every one receives.
        for _ in range(5):
            try:
                await _until_all_see(http, alive[0], clients, pid)
                break
            except (AssertionError, Closed):
                pass
            await stack.aclose()
            clients = await _subscribed(stack, alive, pid)
        else:
            raise AssertionError("no process took the killed reader's shard over")
    assert len(await _holders(http, alive)) == 1
