"""Sending a delivery without letting the URL reach inside the network (SSRF), hang the
sender, or flood its memory.

- The URL's host is resolved here, every address it resolves to is checked, and the
  connection goes to a checked address, with the original name as ``Host`` and as the TLS
  server name (SNI; the certificate is verified against the name): a name that resolves
  to a public address when checked and to a private one when connected (DNS rebinding)
  cannot slip between the two, since there is only one resolution.
- Refused: any address that is not globally routable (private, loopback, link-local,
  CGNAT 100.64/10, unspecified, reserved, documentation ranges), multicast, and IPv6
  forms that carry an IPv4 address (mapped, 6to4, Teredo, NAT64 64:ff9b::/96) judged by
  that address; the other forms in the reserved ::/8 (IPv4-compatible, SIIT, local-use
  NAT64) are refused.
  Loopback is allowed only when ``allow_loopback`` (development and tests); ``https``
  only, unless ``allow_http``.
- Connect and read timeouts, and an overall deadline; redirects are not followed (a 3xx
  is a failed delivery); at most ``BODY_CAP`` bytes of the answer are read; no proxy from
  the environment; no connection kept alive (a pooled connection to an address would be
  shared by names that resolve to it, with another name's TLS session).
- Host names are looked up on a few threads of their own (``Lookups``), each lookup for at
  most ``LOOKUP_SECONDS``: the system resolver blocks a thread until the name server
  answers, and names whose server never does would otherwise take the threads the
  process's other lookups (the DynamoDB client's) wait for. A delivery's lookup counts in
  its deadline.
"""

from __future__ import annotations

import asyncio
import ipaddress
import socket
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import httpx

BODY_CAP = 4096
# How long a host name's lookup may take, and how many run at once (the rest queue, within
# their own time).
LOOKUP_SECONDS = 5.0
LOOKUP_THREADS = 4

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address

# NAT64's well-known prefix (RFC 6052): a translator connects to the IPv4 address in its
# last 32 bits, so such an address is judged by that IPv4 address.
NAT64 = ipaddress.IPv6Network("64:ff9b::/96")


class Refused(Exception):
    """The URL may not be delivered to; the message says why (safe to show its owner)."""


@dataclass(frozen=True, slots=True)
class Policy:
    allow_loopback: bool = False
    allow_http: bool = False


def address_problem(address: IPAddress, policy: Policy) -> str | None:
    """Why a delivery may not connect to ``address``; None when it may."""
    if isinstance(address, ipaddress.IPv6Address):
        embedded = address.ipv4_mapped or address.sixtofour
        if address.teredo is not None:
            embedded = address.teredo[1]
        if address in NAT64:
            embedded = ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
        if embedded is not None:
            return address_problem(embedded, policy)
    if address.is_loopback:
        return None if policy.allow_loopback else "a loopback address"
    if address.is_multicast:
        return "a multicast address"
    if address.is_unspecified:
        return "an unspecified address"
    # is_reserved too: Python's is_global (before 3.12.4) calls IPv6 forms that carry an
    # IPv4 address global (IPv4-compatible ::a.b.c.d, SIIT ::ffff:0:a.b.c.d, local-use
    # NAT64 64:ff9b:1::/48), all in the reserved ::/8.
    if address.is_reserved or not address.is_global:
        return "a private, link-local or reserved address"
    return None


def url_problem(url: str, policy: Policy) -> str | None:
    """What is wrong with ``url`` before resolving it; None when nothing is."""
    try:
        parsed = httpx.URL(url)
    except httpx.InvalidURL:
        return "not a URL"
    if parsed.scheme not in ("https", "http") or not parsed.host:
        return "an https URL is needed"
    if parsed.scheme == "http" and not policy.allow_http:
        return "an https URL is needed"
    if parsed.userinfo:
        return "credentials in the URL are not allowed"
    return None


class Lookups:
    """Host name lookups on threads of their own, each bounded in time; ``close`` when done."""

    def __init__(
        self,
        threads: int = LOOKUP_THREADS,
        seconds: float = LOOKUP_SECONDS,
        resolve: Callable[..., list[Any]] = socket.getaddrinfo,
    ) -> None:
        self.seconds = seconds
        self.resolve = resolve  # the system resolver; tests give a slow one
        self.pool = ThreadPoolExecutor(max_workers=threads, thread_name_prefix="webhook-dns")

    async def addresses(self, host: str, port: int) -> list[IPAddress]:
        """The addresses ``host`` resolves to; Refused when it does not, or not in time."""
        loop = asyncio.get_running_loop()
        lookup = loop.run_in_executor(self.pool, self.resolve, host, port, 0, socket.SOCK_STREAM)
        try:
            infos = await asyncio.wait_for(lookup, self.seconds)
        except TimeoutError as exc:
            raise Refused("the host name did not resolve in time") from exc
        except (OSError, UnicodeError) as exc:
            raise Refused("the host name does not resolve") from exc
        return list(dict.fromkeys(ipaddress.ip_address(i[4][0]) for i in infos))

    def close(self) -> None:
        # A thread still waiting on the resolver ends when it answers; nothing waits for it.
        self.pool.shutdown(wait=False, cancel_futures=True)


async def resolve_checked(url: str, policy: Policy, lookups: Lookups) -> list[IPAddress]:
    """Every address the URL's host resolves to, all checked; Refused otherwise."""
    problem = url_problem(url, policy)
    if problem is not None:
        raise Refused(problem)
    parsed = httpx.URL(url)
    host = parsed.host
    try:
        literal: IPAddress | None = ipaddress.ip_address(host)
    except ValueError:
        literal = None
    found = [literal] if literal is not None else await lookups.addresses(host, parsed.port or 443)
    if not found:
        raise Refused("the host name does not resolve")
    for address in found:
        problem = address_problem(address, policy)
        if problem is not None:
            raise Refused(f"the host resolves to {problem}")
    return found


@dataclass(frozen=True, slots=True)
class Answer:
    status: int
    body: bytes


class Sender:
    """POSTs deliveries through one client (no keep-alive); ``aclose`` when done."""

    def __init__(
        self,
        policy: Policy,
        *,
        connect_seconds: float = 5.0,
        read_seconds: float = 10.0,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        self.policy = policy
        # A lookup is part of connecting: it has the connect timeout too.
        self.lookups = Lookups(seconds=connect_seconds)
        # The lookup, the connection and the answer, all within it.
        self.deadline = 2 * connect_seconds + 2 * read_seconds
        self.client = httpx.AsyncClient(
            timeout=httpx.Timeout(read_seconds, connect=connect_seconds, pool=connect_seconds),
            follow_redirects=False,
            trust_env=False,
            limits=httpx.Limits(max_keepalive_connections=0),
            transport=transport,
        )

    async def aclose(self) -> None:
        await self.client.aclose()
        self.lookups.close()

    async def post(self, url: str, body: bytes, headers: dict[str, str]) -> Answer:
        """Resolve, check, connect to a checked address and POST; the answer's status and
        at most ``BODY_CAP`` bytes. Refused, or httpx's errors (timeouts included)."""
        async with asyncio.timeout(self.deadline):
            return await self._post(url, body, headers)

    async def _post(self, url: str, body: bytes, headers: dict[str, str]) -> Answer:
        addresses = await resolve_checked(url, self.policy, self.lookups)
        parsed = httpx.URL(url)
        target = parsed.copy_with(host=str(addresses[0]))
        # An IPv6 literal is bracketed in Host, with or without a port (RFC 3986's IP-literal).
        named = f"[{parsed.host}]" if ":" in parsed.host else parsed.host
        host_header = named if parsed.port is None else f"{named}:{parsed.port}"
        request = self.client.build_request(
            "POST",
            target,
            content=body,
            headers={**headers, "host": host_header, "content-type": "application/json"},
            extensions={"sni_hostname": parsed.host},
        )
        response = await self.client.send(request, stream=True)
        try:
            kept = bytearray()
            async for chunk in response.aiter_raw():
                kept += chunk[: BODY_CAP - len(kept)]
                if len(kept) >= BODY_CAP:
                    break
        finally:
            await response.aclose()
        return Answer(response.status_code, bytes(kept))
