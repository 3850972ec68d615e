"""The lane claim protocol under real concurrency: several deliverers (as separate
owners) race for the same lanes on DynamoDB Local while receivers fail at random; every
event reaches each endpoint exactly once, in order per lane, and no lane is ever sent
by two deliverers at once. Then one deliverer hangs mid-send (as if its process froze)
and another takes its lanes over after the lease: at most one duplicate, nothing lost."""

from __future__ import annotations

import asyncio
import json
import random
import uuid
from collections import Counter, defaultdict
from contextlib import suppress

from server.webhooks.delivery import Deliverer, DeliveryTuning
from server.webhooks.transport import Answer
from storage.base.types import DynamoClient
from storage.engine.table import TableRef
from storage.model.webhooks import Event, EventType, event_id
from storage.reads.webhooks import list_endpoints
from storage.writes.webhook_outbox import record_event
from tests.helpers import own_table
from tests.server.webhooks.rig import endpoint

TUNING = DeliveryTuning(
    concurrency=8,
    per_endpoint=4,
    lease_seconds=1.0,
    poll_seconds=0.02,
    retry_base_seconds=0.02,
    retry_max_seconds=0.1,
)


class Flaky:
    """Answers 500 to about a third of the attempts; records what it took, and checks
    that no lane is in two sends at once."""

    def __init__(self, seed: int, hang: asyncio.Event | None = None) -> None:
        self.rand = random.Random(seed)
        self.took: list[tuple[str, str, int]] = []
        self.in_flight: Counter[tuple[str, str]] = Counter()
        self.overlaps = 0
        self.hang = hang

    async def post(self, url: str, body: bytes, headers: dict[str, str]) -> Answer:
        data = json.loads(body)["data"]
        lane = (url, data["productId"])
        self.in_flight[lane] += 1
        if self.in_flight[lane] > 1:
            self.overlaps += 1
        try:
            if self.hang is not None:
                self.hang.set()
                await asyncio.Event().wait()  # never answers
            await asyncio.sleep(self.rand.random() * 0.005)
            if self.rand.random() < 0.33:
                return Answer(500, b"")
            self.took.append((url, data["productId"], data["sequence"]))
            return Answer(200, b"")
        finally:
            self.in_flight[lane] -= 1


async def _events(table: TableRef, products: list[str], per_product: int) -> None:
    endpoints = await list_endpoints(table)
    for n in range(per_product):
        for product in products:
            key = {"PK": {"S": f"COMMENT#{product}-{n}"}, "SK": {"S": f"COMMENT#{product}-{n}"}}
            event = Event(
                event_id(key, str(n), EventType.COMMENT_PUBLISHED),
                EventType.COMMENT_PUBLISHED,
                product,
                "2026-01-01T00:00:00Z",
                {"productId": product, "rating": 5},
            )
            assert await record_event(table, event, endpoints) is not None
            # Recorded again (a shard read twice): nothing new.
            assert await record_event(table, event, endpoints) is None


async def test_racing_deliverers_deliver_each_event_once_in_order(
    table: TableRef, client: DynamoClient
) -> None:
    own = await own_table(table, "claims")
    urls = [f"https://r{i}.example/hook" for i in range(3)]
    for url in urls:
        await endpoint(own, url)
    products = [f"p{i}" for i in range(4)]
    await _events(own, products, 6)
    posters = [Flaky(seed) for seed in range(4)]
    deliverers = [
        Deliverer(own, f"owner-{i}-{uuid.uuid4().hex[:4]}", p, TUNING, rand=random.Random(i).random)
        for i, p in enumerate(posters)
    ]
    tasks = [asyncio.create_task(d.run()) for d in deliverers]
    expected = len(urls) * len(products) * 6
    try:
        async with asyncio.timeout(60):
            while sum(len(p.took) for p in posters) < expected:  # noqa: ASYNC110
                await asyncio.sleep(0.05)
            await asyncio.sleep(0.3)  # nothing more comes
    finally:
        for task in tasks:
            task.cancel()
        for task in tasks:
            with suppress(asyncio.CancelledError):
                await asyncio.wait_for(task, 10)
    took = [t for p in posters for t in p.took]
    assert len(took) == len(set(took)) == expected  # once each
    assert sum(p.overlaps for p in posters) == 0
    # Several owners took part, and each lane got its events in order.
    assert sum(1 for p in posters if p.took) >= 2
    lanes: dict[tuple[str, str], list[int]] = defaultdict(list)
    for p in posters:
        for url, product, sequence in p.took:
            lanes[(url, product)].append(sequence)
    # Owners interleave on a lane only one after another: merged, each lane is 1..6.
    assert all(sorted(s) == list(range(1, 7)) for s in lanes.values())
    assert sum(d.stats.failed_attempts for d in deliverers) > 0  # failures were retried


async def test_a_frozen_deliverer_is_taken_over_after_its_lease(
    table: TableRef, client: DynamoClient
) -> None:
    own = await own_table(table, "frozen")
    await endpoint(own, "https://r.example/hook")
    await _events(own, ["solo"], 3)
    froze = asyncio.Event()
    frozen = Flaky(0, hang=froze)
    first = Deliverer(own, "frozen-owner", frozen, TUNING)
    task = asyncio.create_task(first.run())
    try:
        await asyncio.wait_for(froze.wait(), 20)
        healthy = Flaky(1)
        healthy.rand = random.Random(99)
        second = Deliverer(own, "healthy-owner", healthy, TUNING)
        other = asyncio.create_task(second.run())
        try:
            async with asyncio.timeout(30):
                while len(healthy.took) < 3:  # noqa: ASYNC110
                    await asyncio.sleep(0.05)
        finally:
            other.cancel()
            with suppress(asyncio.CancelledError):
                await asyncio.wait_for(other, 10)
    finally:
        task.cancel()
        with suppress(asyncio.CancelledError):
            await asyncio.wait_for(task, 10)
    assert sorted(s for _, _, s in healthy.took) == [1, 2, 3]
    assert frozen.took == []  # its one attempt never finished: the duplicate at most


class Stuck:
    """Refuses every delivery of some products (their lanes back off for long), takes the
    others."""

    def __init__(self, refused: set[str]) -> None:
        self.refused = refused
        self.took: list[str] = []

    async def post(self, url: str, body: bytes, headers: dict[str, str]) -> Answer:
        product = json.loads(body)["data"]["productId"]
        if product in self.refused:
            return Answer(503, b"")
        self.took.append(product)
        return Answer(200, b"")


async def test_lanes_past_a_page_of_stuck_ones_are_reached(
    table: TableRef, client: DynamoClient
) -> None:
    own = await own_table(table, "duepages")
    await endpoint(own, "https://r.example/hook")
    await _events(own, ["a0", "a1", "a2", "a3"], 1)
    poster = Stuck({"a0", "a1"})
    slow = DeliveryTuning(poll_seconds=0.02, retry_base_seconds=600, retry_max_seconds=600)
    deliverer = Deliverer(own, "pager", poster, slow, due_per_poll=2)
    task = asyncio.create_task(deliverer.run())
    try:
        async with asyncio.timeout(20):
            while sorted(poster.took) != ["a2", "a3"]:  # noqa: ASYNC110
                await asyncio.sleep(0.02)
    finally:
        task.cancel()
        with suppress(asyncio.CancelledError):
            await asyncio.wait_for(task, 10)
