"""The guarded transport: addresses refused after resolution, at registration and at
delivery, in production posture; redirects not followed; answers read up to a cap."""

from __future__ import annotations

import asyncio
import ipaddress
import threading

import httpx
import pytest

from server.webhooks.transport import (
    Lookups,
    Policy,
    Refused,
    Sender,
    address_problem,
    resolve_checked,
    url_problem,
)
from testing.webhook_receiver import Receiver

PRODUCTION = Policy()
DEV = Policy(allow_loopback=True, allow_http=True)
LOOKUPS = Lookups()


@pytest.mark.parametrize(
    ("address", "refused"),
    [
        ("127.0.0.1", True),
        ("::1", True),
        ("10.1.2.3", True),
        ("172.16.0.1", True),
        ("192.168.1.1", True),
        ("169.254.169.254", True),  # link-local: cloud metadata
        ("100.64.0.1", True),  # CGNAT
        ("0.0.0.0", True),
        ("::", True),
        ("224.0.0.1", True),
        ("ff02::1", True),
        ("fe80::1", True),
        ("fc00::1", True),
        ("::ffff:10.0.0.1", True),  # IPv4-mapped private
        ("::ffff:127.0.0.1", True),
        ("2002:0a00:0001::1", True),  # 6to4 of 10.0.0.1
        ("93.184.215.14", False),
        ("2606:4700::1111", False),
        ("::ffff:93.184.215.14", False),
        # Forms Python 3.11's is_global calls global, that carry or reach an IPv4 address:
        ("::127.0.0.1", True),  # IPv4-compatible (deprecated)
        ("::ffff:0:127.0.0.1", True),  # IPv4-translated (SIIT)
        ("64:ff9b::127.0.0.1", True),  # NAT64 well-known prefix, judged by its IPv4
        ("64:ff9b::169.254.169.254", True),
        ("64:ff9b::10.0.0.5", True),
        ("64:ff9b:1::10.0.0.5", True),  # local-use NAT64: its IPv4 cannot be told
        ("64:ff9b::93.184.215.14", False),  # DNS64 of a public receiver
    ],
)
def test_addresses(address: str, refused: bool) -> None:
    problem = address_problem(ipaddress.ip_address(address), PRODUCTION)
    assert (problem is not None) is refused


def test_loopback_only_when_allowed() -> None:
    assert address_problem(ipaddress.ip_address("127.0.0.1"), DEV) is None
    assert address_problem(ipaddress.ip_address("10.0.0.1"), DEV) is not None
    assert address_problem(ipaddress.ip_address("64:ff9b::127.0.0.1"), DEV) is None
    assert address_problem(ipaddress.ip_address("::127.0.0.1"), DEV) is not None


def test_urls() -> None:
    assert url_problem("http://example.com/x", PRODUCTION) == "an https URL is needed"
    assert url_problem("http://example.com/x", DEV) is None
    assert url_problem("ftp://example.com/x", DEV) is not None
    assert url_problem("https://user:pw@example.com/x", PRODUCTION) is not None
    assert url_problem("https://example.com/x", PRODUCTION) is None


@pytest.mark.parametrize(
    "url", ["https://127.0.0.1/hook", "https://localhost/hook", "https://[::1]:8443/hook"]
)
async def test_loopback_refused_after_resolution(url: str) -> None:
    with pytest.raises(Refused):
        await asyncio.wait_for(resolve_checked(url, PRODUCTION, LOOKUPS), 10)


async def test_lookups_are_bounded_in_time_and_keep_off_the_process_threads() -> None:
    """Names whose server never answers: each lookup gives up in its time, and the
    threads the process's other lookups (the DynamoDB client's) run on stay free."""
    answered = threading.Event()

    def never(*_: object) -> list[object]:
        answered.wait(10)
        return []

    lookups = Lookups(threads=2, seconds=0.2, resolve=never)
    try:
        # More than the default executor's threads on this machine and most others.
        slow = [resolve_checked(f"https://h{n}.example/", PRODUCTION, lookups) for n in range(40)]
        outcomes = await asyncio.wait_for(asyncio.gather(*slow, return_exceptions=True), 10)
        assert all(isinstance(o, Refused) for o in outcomes)
        assert "in time" in str(outcomes[0])
        loop = asyncio.get_running_loop()
        assert await asyncio.wait_for(loop.run_in_executor(None, lambda: 7), 5) == 7
    finally:
        answered.set()
        lookups.close()


async def test_delivery_refuses_before_connecting() -> None:
    async with Receiver() as receiver:
        sender = Sender(Policy(allow_http=True), connect_seconds=1, read_seconds=1)
        try:
            for url in (receiver.url, receiver.url.replace("127.0.0.1", "localhost")):
                with pytest.raises(Refused):
                    await asyncio.wait_for(sender.post(url, b"{}", {}), 10)
        finally:
            await sender.aclose()
    assert receiver.attempts == []


async def test_redirects_are_not_followed() -> None:
    async with Receiver() as target, Receiver() as receiver:
        receiver.redirect_to = target.url
        sender = Sender(DEV, connect_seconds=1, read_seconds=1)
        try:
            answer = await asyncio.wait_for(sender.post(receiver.url, b'{"a":1}', {}), 10)
        finally:
            await sender.aclose()
    assert answer.status == 307
    assert len(receiver.attempts) == 1
    assert target.attempts == []


async def test_a_silent_receiver_times_out() -> None:
    async with Receiver(answer=lambda r: None) as silent:
        sender = Sender(DEV, connect_seconds=0.5, read_seconds=0.5)
        try:
            with pytest.raises(httpx.TimeoutException):
                await asyncio.wait_for(sender.post(silent.url, b"{}", {}), 10)
        finally:
            await sender.aclose()
    assert len(silent.attempts) == 1


@pytest.mark.parametrize(
    ("url", "host"),
    [
        ("https://[2606:4700::1111]/hook", "[2606:4700::1111]"),
        ("https://[2606:4700::1111]:8443/hook", "[2606:4700::1111]:8443"),
        ("https://93.184.215.14/hook", "93.184.215.14"),
        ("https://93.184.215.14:8443/hook", "93.184.215.14:8443"),
    ],
)
async def test_host_header_of_an_address_literal(url: str, host: str) -> None:
    """An IPv6 literal's Host is bracketed, with or without a port (RFC 9110, 3986)."""
    seen: list[str | None] = []

    def answer(request: httpx.Request) -> httpx.Response:
        seen.append(request.headers.get("host"))
        return httpx.Response(204, stream=httpx.ByteStream(b""))

    sender = Sender(PRODUCTION, transport=httpx.MockTransport(answer))
    try:
        await sender.post(url, b"{}", {})
    finally:
        await sender.aclose()
    assert seen == [host]
