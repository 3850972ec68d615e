"""WebSocket places: per process, per client address and per token holder, so that one
client cannot take every place; refusals are close codes graphql-ws retries, counted in
the metrics by reason; the counts keep no entry for a client that holds no socket."""

from __future__ import annotations

import asyncio
import ipaddress
import uuid
from collections.abc import AsyncIterator, Iterator
from contextlib import AsyncExitStack, asynccontextmanager

import httpx
import pytest
from websockets.exceptions import ConnectionClosed

from resolvers.auth import mint
from server.dev.local_engine import LocalEngine
from server.http.sockets import (
    ADDRESS_FULL,
    PROCESS_FULL,
    TOKEN_FULL,
    TOO_MANY_FOR_TOKEN,
    TRY_AGAIN_LATER,
    SocketPlaces,
)
from server.settings import Settings
from testing.live_server import LiveServer, live_server
from testing.scrape import parse_scrape, sample
from testing.subscriber import Closed, Subscriber, subscriber
from tests.api_helpers import SECRET

PER_PROCESS = 6
PER_ADDRESS = 3
PER_TOKEN = 2


async def _send(_: object) -> None:
    return None


def test_the_counts_keep_no_entry_for_a_client_without_sockets() -> None:
    places = SocketPlaces(total=3, per_address=2, per_token=1)
    one, two = ipaddress.ip_address("10.0.0.1"), ipaddress.ip_address("10.0.0.2")
    first, second = places.take(one, _send), places.take(one, _send)
    assert places.take(one, _send) == ADDRESS_FULL
    third = places.take(two, _send)
    assert places.take(ipaddress.ip_address("10.0.0.3"), _send) == PROCESS_FULL
    assert not isinstance(first, str)
    assert not isinstance(second, str)
    assert not isinstance(third, str)
    assert places.take_for_holder(first, "ann")
    assert not places.take_for_holder(second, "ann")
    assert places.take_for_holder(third, "bob")
    for socket in (first, second, third):
        places.give_back(socket)
    assert (places.open, places.addresses, places.holders) == (0, {}, {})


def test_an_ipv6_client_is_its_slash_64() -> None:
    # One host given a /64 could otherwise open the address's share from each of 2**64.
    places = SocketPlaces(total=10, per_address=2, per_token=1)
    taken = [places.take(ipaddress.ip_address(f"2001:db8:1:2::{n}"), _send) for n in (1, 2)]
    assert places.take(ipaddress.ip_address("2001:db8:1:2:ffff::9"), _send) == ADDRESS_FULL
    elsewhere = places.take(ipaddress.ip_address("2001:db8:1:3::1"), _send)
    assert not isinstance(elsewhere, str)
    for socket in [*taken, elsewhere]:
        assert not isinstance(socket, str)
        places.give_back(socket)
    assert (places.open, places.addresses) == (0, {})


def test_the_defaults_leave_room_for_many_clients() -> None:
    fields = Settings.model_fields
    total = fields["max_websockets"].default
    assert fields["max_websockets_per_address"].default * 20 <= total
    assert fields["max_websockets_per_token"].default < fields["max_websockets_per_address"].default


# A live server: sockets from other loopback addresses (127.0.0.2, ...) are other clients.


@pytest.fixture(scope="module")
def server(engine: LocalEngine) -> Iterator[LiveServer]:
    with live_server(
        engine.endpoint_url,
        f"sockets_{uuid.uuid4().hex[:8]}",
        SECRET,
        log=None,
        CREATE_TABLE="true",
        SEED_DEMO="false",
        LIVE_UPDATES="false",
        MAX_WEBSOCKETS=str(PER_PROCESS),
        MAX_WEBSOCKETS_PER_ADDRESS=str(PER_ADDRESS),
        MAX_WEBSOCKETS_PER_TOKEN=str(PER_TOKEN),
    ) as running:
        yield running


async def _refusal(url: str, source: str, authorization: str | None = None) -> Closed:
    """How the server closes a connection from ``source`` (with ``authorization`` in
    connection_init when given)."""
    async with subscriber(url, source=source, init=False) as client:
        if authorization is not None:
            payload = {"authorization": authorization}
            await client.send({"type": "connection_init", "payload": payload})
        return await client.closed(seconds=10)


async def _refused(server: LiveServer, reason: str) -> float:
    """The server's count of WebSocket connections refused for ``reason``."""
    async with httpx.AsyncClient(timeout=10) as http:
        scraped = await http.get(f"{server.base_url}/metrics")
    return sample(parse_scrape(scraped.text), "comments_websocket_refusals_total", reason=reason)


@asynccontextmanager
async def _held(
    url: str, source: str, count: int, authorization: str | None = None
) -> AsyncIterator[list[Subscriber]]:
    """``count`` acknowledged connections from ``source``; the server may still be closing
    those of the tests before, so a refusal is tried again for a while."""
    async with AsyncExitStack() as stack:
        held: list[Subscriber] = []
        for _ in range(50):
            if len(held) == count:
                break
            try:
                opened = subscriber(url, source=source, authorization=authorization)
                held.append(await stack.enter_async_context(opened))
            except (RuntimeError, ConnectionClosed):
                await asyncio.sleep(0.1)
        assert len(held) == count
        yield held


@pytest.mark.engine
async def test_one_address_cannot_take_every_place(server: LiveServer) -> None:
    url = server.graphql_url
    async with _held(url, "127.0.0.2", PER_ADDRESS):
        before = await _refused(server, "per_address")
        closed = await _refusal(url, "127.0.0.2")
        assert (closed.code, closed.reason) == (TRY_AGAIN_LATER, ADDRESS_FULL)
        assert await _refused(server, "per_address") == before + 1
        # Others still get in, up to the process's places.
        async with _held(url, "127.0.0.3", PER_ADDRESS):
            before = await _refused(server, "max_websockets")
            closed = await _refusal(url, "127.0.0.4")
            assert (closed.code, closed.reason) == (TRY_AGAIN_LATER, PROCESS_FULL)
            assert await _refused(server, "max_websockets") == before + 1
    # The places are given back with the sockets.
    async with _held(url, "127.0.0.2", PER_ADDRESS):
        pass


@pytest.mark.engine
async def test_one_token_holder_cannot_take_every_place(server: LiveServer) -> None:
    url = server.graphql_url
    # Fresh tokens of one holder share its places; each from an address of its own.
    ann = [f"Bearer {mint(SECRET, 'ann', ttl_seconds=3600 + n)}" for n in range(3)]
    async with AsyncExitStack() as stack:
        for n in range(PER_TOKEN):
            await stack.enter_async_context(_held(url, f"127.0.1.{n + 1}", 1, ann[n]))
        before = await _refused(server, "per_token")
        closed = await _refusal(url, "127.0.1.9", ann[-1])
        assert (closed.code, closed.reason) == (TOO_MANY_FOR_TOKEN, TOKEN_FULL)
        assert await _refused(server, "per_token") == before + 1
        # Another holder, and anonymous connections, are not held back by ann's.
        bob = f"Bearer {mint(SECRET, 'bob')}"
        async with _held(url, "127.0.1.10", 1, bob), _held(url, "127.0.1.11", 1):
            pass
    # Ann's places are given back with her sockets.
    async with _held(url, "127.0.1.12", PER_TOKEN, ann[-1]):
        pass
