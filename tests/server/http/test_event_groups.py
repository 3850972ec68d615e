"""Shared resolutions of subscription events: one per group, budgets charged once per
group and given back exactly, slow members ended alone, and every member the server ends
counted by its code."""

from __future__ import annotations

import asyncio
import random
from collections.abc import AsyncGenerator
from typing import Any

import orjson
import pytest
from graphql import GraphQLError
from strawberry.types import ExecutionResult
from strawberry.types.execution import PreExecutionError

from server.http.event_groups import EventGroups, GroupKey, Member, Refused, result_bytes
from server.http.subscriptions import TextFrames
from server.observability.metrics import Metrics
from testing.scrape import parse_scrape, sample


def _groups(**overrides: int) -> EventGroups:
    options: dict[str, Any] = {
        "product_cost": 10,
        "process_cost": 15,
        "client_cost": 1000,
        "max_members": 1000,
        "queue_size": 5,
        "max_bytes": 10_000,
        **overrides,
    }
    return EventGroups(**options)


class Source:
    """A group's execution, fed by the test: every result put is one resolution."""

    def __init__(self) -> None:
        self.queue: asyncio.Queue[ExecutionResult | None] = asyncio.Queue()
        self.started = 0
        self.closed = 0

    async def start(self) -> AsyncGenerator[ExecutionResult, None]:
        self.started += 1
        return self._results()

    async def _results(self) -> AsyncGenerator[ExecutionResult, None]:
        try:
            while (result := await self.queue.get()) is not None:
                yield result
        finally:
            self.closed += 1


def key(name: str, product: str = "p") -> GroupKey:
    return GroupKey.of(f"subscription {name}", None, {"pid": product}, None)


async def take(member: Member, n: int) -> list[ExecutionResult]:
    taken: list[ExecutionResult] = []
    async with asyncio.timeout(5):
        async for result in member.results():
            taken.append(result)
            if len(taken) == n:
                break
    return taken


async def test_members_of_a_group_share_each_resolution() -> None:
    groups = _groups()
    source = Source()
    members = [groups.join(key("a"), "p", 2, source.start) for _ in range(50)]
    assert (groups.groups, groups.members, groups.points) == (1, 50, 2)
    event = ExecutionResult(data={"commentEvents": {"kind": "PUBLISHED"}}, errors=None)
    await source.queue.put(event)
    for member in members:
        assert await take(member, 1) == [event]
    assert source.started == 1
    group = members[0].group
    assert group.resolved == 1
    for member in members:
        groups.leave(member)
    await asyncio.sleep(0)
    assert (groups.groups, groups.members, groups.points) == (0, 0, 0)
    assert source.closed == 1


async def test_budgets_count_distinct_groups_and_are_given_back() -> None:
    groups = _groups(product_cost=4, process_cost=6)
    sources = [Source() for _ in range(4)]
    first = groups.join(key("a"), "p", 2, sources[0].start)
    second = groups.join(key("b"), "p", 2, sources[1].start)
    # The product holds 4 of its 4 points: another document is refused, the same is not.
    with pytest.raises(Refused) as refused:
        groups.join(key("c"), "p", 1, sources[2].start)
    assert refused.value.code == "TOO_MANY_SUBSCRIPTIONS"
    same = groups.join(key("a"), "p", 2, sources[2].start)
    assert same.group is first.group
    # Another product has its own budget, within the process's 6.
    elsewhere = groups.join(key("a", "q"), "q", 2, sources[3].start)
    assert elsewhere.group is not first.group
    assert groups.points == 6
    with pytest.raises(Refused) as refused:
        groups.join(key("d", "r"), "r", 1, sources[3].start)
    assert "at most 6 are allowed" in str(refused.value)
    for member in (first, second, same, elsewhere):
        groups.leave(member)
    assert (groups.groups, groups.members, groups.points) == (0, 0, 0)
    # All given back: the refused ones fit now.
    groups.leave(groups.join(key("c"), "p", 4, Source().start))


async def test_a_slow_member_is_ended_alone() -> None:
    groups = _groups(queue_size=2)
    source = Source()
    slow = groups.join(key("a"), "p", 1, source.start)
    quick = groups.join(key("a"), "p", 1, source.start)
    events = [ExecutionResult(data={"n": n}, errors=None) for n in range(4)]
    for event in events:
        await source.queue.put(event)
        assert await take(quick, 1) == [event]
    # The slow one took nothing: two waited, the third ended it (what waited is dropped).
    (ended,) = await take(slow, 2)
    assert ended.errors is not None
    assert ended.errors[0].extensions == {"code": "TOO_SLOW"}
    await source.queue.put(ExecutionResult(data={"n": 9}, errors=None))
    assert (await take(quick, 1))[0].data == {"n": 9}
    groups.leave(slow)
    groups.leave(quick)


async def test_members_the_server_ends_are_counted_by_code() -> None:
    metrics = Metrics()
    with metrics.active():
        groups = _groups(queue_size=1)
        source = Source()
        slow = groups.join(key("a"), "p", 1, source.start)
        quick = [groups.join(key("a"), "p", 1, source.start) for _ in range(2)]
        for n in range(2):
            event = ExecutionResult(data={"n": n}, errors=None)
            await source.queue.put(event)
            for member in quick:
                assert await take(member, 1) == [event]
        # The slow one took nothing: ended alone, once, as TOO_SLOW.
        (ended,) = await take(slow, 1)
        assert ended.errors is not None
        assert ended.errors[0].extensions == {"code": "TOO_SLOW"}
        # Then the group ends (the feed lost changes): every member left is ended with it.
        lost = GraphQLError("lost", extensions={"code": "EVENTS_LOST"})
        await source.queue.put(ExecutionResult(data=None, errors=[lost]))
        for member in quick:
            (last,) = await take(member, 1)
            assert last.errors == [lost]
        # A refusal found when the operation runs ends its members too.
        refused = groups.join(key("b"), "p", 1, Source().start)
        groups.leave(refused)
        failing = Source()
        doomed = groups.join(key("c"), "p", 1, failing.start)
        await failing.queue.put(PreExecutionError(data=None, errors=[GraphQLError("bad")]))
        (refusal,) = await take(doomed, 1)
        assert refusal.errors is not None
        samples = parse_scrape(metrics.exposition().decode())
    ended_total = "comments_subscriptions_ended_total"
    assert sample(samples, ended_total, code="TOO_SLOW") == 1
    assert sample(samples, ended_total, code="EVENTS_LOST") == 2
    # An error without a code is the server's own failure.
    assert sample(samples, ended_total, code="INTERNAL_SERVER_ERROR") == 1
    # A member that leaves by itself is not counted.
    assert sum(v for (n, _), v in samples.items() if n == ended_total) == 4


async def test_an_ending_result_dissolves_the_group_at_once() -> None:
    groups = _groups()
    source = Source()
    member = groups.join(key("a"), "p", 1, source.start)
    await source.queue.put(
        ExecutionResult(data=None, errors=[GraphQLError("x", extensions={"code": "TOO_SLOW"})])
    )
    (ended,) = await take(member, 1)
    assert ended.errors is not None
    # Nobody joins a group that has ended: a newcomer gets a resolution of its own.
    newcomer_source = Source()
    newcomer = groups.join(key("a"), "p", 1, newcomer_source.start)
    assert newcomer.group is not member.group
    await asyncio.sleep(0)
    assert newcomer_source.started == 1
    groups.leave(member)
    groups.leave(newcomer)
    assert groups.points == 0


async def test_a_refusal_at_the_start_reaches_every_member() -> None:
    groups = _groups()
    source = Source()
    members = [groups.join(key("a"), "p", 1, source.start) for _ in range(3)]
    refusal = PreExecutionError(
        data=None, errors=[GraphQLError("no", extensions={"code": "LIVE_UPDATES_UNAVAILABLE"})]
    )
    await source.queue.put(refusal)
    for member in members:
        assert await take(member, 1) == [refusal]
    assert groups.groups == 0


async def test_an_event_over_the_byte_limit_ends_the_group() -> None:
    groups = _groups(max_bytes=100)
    source = Source()
    member = groups.join(key("a"), "p", 1, source.start)
    await source.queue.put(ExecutionResult(data={"body": "x" * 200}, errors=None))
    (ended,) = await take(member, 1)
    assert ended.errors is not None
    assert ended.errors[0].extensions == {"code": "QUERY_TOO_COMPLEX"}
    assert "at most 100 are allowed" in ended.errors[0].message
    groups.leave(member)


async def test_racing_joins_and_leaves_keep_the_books_exact() -> None:
    """Many subscribers joining and leaving at random over a few documents and products,
    with events flowing: the budgets are never exceeded, every member present when a
    result is handed out receives it, and once all have left nothing is held."""
    rng = random.Random(11)
    groups = _groups(product_cost=6, process_cost=10)
    sources: dict[GroupKey, Source] = {}
    feeding: list[asyncio.Task[None]] = []

    def check() -> None:
        assert groups.points <= 10
        for product in "pq":
            on_product = sum(
                g.points
                for k in sources
                if (g := groups.group_of(k)) is not None and g.product_id == product
            )
            assert on_product <= 6

    async def subscriber(n: int) -> None:
        await asyncio.sleep(rng.random() / 100)
        name, product = rng.choice("abcd"), rng.choice("pq")
        group_key = GroupKey.of(name, None, {"pid": product}, None)
        source = sources.setdefault(group_key, Source())
        try:
            member = groups.join(group_key, product, rng.choice([1, 2, 3]), source.start)
        except Refused:
            check()
            return
        check()
        received = 0
        try:
            async with asyncio.timeout(rng.random() / 20):
                async for _ in member.results():
                    received += 1
        except TimeoutError:
            pass
        finally:
            groups.leave(member)
            check()

    async def feed() -> None:
        for _ in range(50):
            await asyncio.sleep(0.001)
            for source in list(sources.values()):
                source.queue.put_nowait(ExecutionResult(data={"e": 1}, errors=None))

    feeding.append(asyncio.create_task(feed()))
    async with asyncio.TaskGroup() as tasks:
        for n in range(300):
            tasks.create_task(subscriber(n))
    await feeding[0]
    await asyncio.sleep(0.01)
    assert (groups.groups, groups.members, groups.points) == (0, 0, 0)
    # Every execution started was closed when its group ended.
    assert sum(s.started for s in sources.values()) == sum(s.closed for s in sources.values())


async def test_a_client_starts_groups_within_its_own_budget() -> None:
    # One client cannot take a product's budget (or the process's) with documents of its
    # own; another client still starts one, and joining a running group is free.
    groups = _groups(product_cost=10, client_cost=4)
    held = [groups.join(key(name), "p", 2, Source().start, "attacker") for name in "ab"]
    with pytest.raises(Refused) as refused:
        groups.join(key("c"), "p", 2, Source().start, "attacker")
    assert refused.value.code == "TOO_MANY_SUBSCRIPTIONS"
    assert "this address started would cost 6 points" in str(refused.value)
    shopper = groups.join(key("shipped"), "p", 2, Source().start, "shopper")
    joined = groups.join(key("a"), "p", 2, Source().start, "shopper")
    assert joined.group is held[0].group
    # While its starter holds it, a group counts against the starter, not the joiner.
    with pytest.raises(Refused):
        groups.join(key("c"), "p", 2, Source().start, "attacker")
    groups.leave(joined)
    groups.leave(held[0])
    again = groups.join(key("c"), "p", 2, Source().start, "attacker")
    for member in (held[1], shopper, again):
        groups.leave(member)
    assert (groups.groups, groups.members, groups.points) == (0, 0, 0)


async def test_errors_over_the_byte_limit_are_bounded_too() -> None:
    groups = _groups(max_bytes=1000)
    source = Source()
    member = groups.join(key("a"), "p", 1, source.start)
    many = [GraphQLError("e" * 100, extensions={"code": "BAD_USER_INPUT"}) for _ in range(50)]
    await source.queue.put(PreExecutionError(data=None, errors=many))
    (ended,) = await take(member, 1)
    assert isinstance(ended, PreExecutionError)
    assert ended.errors is not None
    assert len(ended.errors) == 1
    assert ended.errors[0].extensions == {"code": "QUERY_TOO_COMPLEX"}
    assert result_bytes(ended) <= 1000
    groups.leave(member)


class SlowSocket:
    """A WebSocket whose client reads slowly: each send waits for the test."""

    def __init__(self) -> None:
        self.sent: list[str] = []
        self.go = asyncio.Event()

    async def send_text(self, text: str) -> None:
        await self.go.wait()
        self.sent.append(text)


class CountingView:
    def __init__(self) -> None:
        self.encoded = 0

    def encode_json(self, data: object) -> bytes:
        self.encoded += 1
        return orjson.dumps(data)


async def test_a_connection_encodes_one_message_at_a_time() -> None:
    # Ten subscriptions of one connection sending the same large event to a client that
    # does not read: one is encoded and in the socket, the others wait unencoded.
    view, socket = CountingView(), SlowSocket()
    frames = TextFrames.__new__(TextFrames)
    frames.view = view  # type: ignore[assignment]
    frames.ws = socket  # type: ignore[assignment]
    event = {"type": "next", "payload": {"data": {"body": "x" * 100_000}}}
    sending = [asyncio.create_task(frames.send_json({**event, "id": str(n)})) for n in range(10)]
    await asyncio.sleep(0.01)
    assert view.encoded == 1
    socket.go.set()
    await asyncio.gather(*sending)
    assert (view.encoded, len(socket.sent)) == (10, 10)


async def test_the_client_that_started_a_group_is_free_once_it_leaves_it() -> None:
    # Whoever still holds a group pays for it: its starter, gone, may start others.
    groups = _groups(client_cost=2)
    starter = groups.join(key("a"), "p", 2, Source().start, "starter")
    stays = groups.join(key("a"), "p", 2, Source().start, "joiner")
    with pytest.raises(Refused):
        groups.join(key("b"), "p", 2, Source().start, "starter")
    groups.leave(starter)
    started = groups.join(key("b"), "p", 2, Source().start, "starter")
    # The joiner holds the first group now: its own budget is taken by it.
    with pytest.raises(Refused):
        groups.join(key("c"), "p", 2, Source().start, "joiner")
    for member in (stays, started):
        groups.leave(member)
    assert (groups.groups, groups.members, groups.points) == (0, 0, 0)
    groups.leave(groups.join(key("c"), "p", 2, Source().start, "joiner"))


async def test_an_event_is_counted_in_the_bytes_the_view_sends() -> None:
    # With ORJSON=false the view escapes every non-ASCII character: an emoji of 4 bytes
    # is sent as 12. The limit holds for what is sent.
    import json

    groups = _groups(max_bytes=3000)
    groups.encode = lambda data: json.dumps(data)
    source = Source()
    member = groups.join(key("a"), "p", 1, source.start)
    await source.queue.put(ExecutionResult(data={"body": "\U0001f600" * 400}, errors=None))
    (ended,) = await take(member, 1)
    assert ended.errors is not None
    assert ended.errors[0].extensions == {"code": "QUERY_TOO_COMPLEX"}
    assert result_bytes(ExecutionResult(data={"body": "\U0001f600" * 400}, errors=None)) < 3000
    groups.leave(member)
