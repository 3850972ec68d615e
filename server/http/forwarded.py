"""The client address of a connection: its peer's, or, when the peer is a trusted proxy
(``FORWARDED_ALLOW_IPS``), the one the proxies forwarded.

Each proxy appends the address it was connected from to ``X-Forwarded-For`` (nginx's
``$proxy_add_x_forwarded_for``), so the list is read from the right: past the trusted
proxies, the first address is the client's; everything left of it is whatever that client
sent, and never believed. ``Forwarded`` (RFC 7239, its ``for=`` parameters) is read the same
way when a request has no ``X-Forwarded-For``. An entry that is no address (``unknown``, an
obfuscated name, garbage) names no one: the proxy that wrote it stands for the client.

uvicorn applies the same rule to ``scope["client"]`` before the application sees it (its
proxy headers, with the same setting, see server.cli); reading a scope it has rewritten
gives the same answer, so the application need not know whether it runs under uvicorn.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from starlette.types import Scope

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network

# What FORWARDED_ALLOW_IPS trusts by default: a proxy on this machine (uvicorn's default).
LOOPBACK_PROXIES = ("127.0.0.1", "::1")
# Every peer is a trusted proxy (uvicorn's spelling): only where nothing reaches the app
# but through the proxy.
EVERYONE = "*"


def parse_address(text: str) -> IPAddress | None:
    """An address as a proxy or a socket writes it (with a port, in brackets, quoted, with a
    zone), or None when it is no address; IPv4-mapped IPv6 addresses are their IPv4 one."""
    text = text.strip().strip('"')
    if text.startswith("["):
        text = text[1:].partition("]")[0]
    elif text.count(":") == 1:
        text = text.partition(":")[0]  # IPv4 with a port
    try:
        found = ipaddress.ip_address(text.partition("%")[0])
    except ValueError:
        return None
    if isinstance(found, ipaddress.IPv6Address) and found.ipv4_mapped is not None:
        return found.ipv4_mapped
    return found


@dataclass(frozen=True, slots=True)
class TrustedProxies:
    """Addresses and networks whose forwarding headers are believed."""

    networks: tuple[IPNetwork, ...] = ()
    everyone: bool = False

    @classmethod
    def parse(cls, entries: Iterable[str]) -> TrustedProxies:
        """From FORWARDED_ALLOW_IPS's entries: addresses, networks (``10.0.0.0/8``) or ``*``;
        ValueError for anything else."""
        names = [entry.strip() for entry in entries if entry.strip()]
        if EVERYONE in names:
            return cls(everyone=True)
        return cls(tuple(ipaddress.ip_network(name, strict=False) for name in names))

    def __contains__(self, address: IPAddress | None) -> bool:
        if address is None:
            return False
        return self.everyone or any(address in network for network in self.networks)

    def uvicorn(self) -> str:
        """The same, as uvicorn's ``forwarded_allow_ips``."""
        if self.everyone:
            return EVERYONE
        return ",".join(
            str(n.network_address) if n.num_addresses == 1 else str(n) for n in self.networks
        )


# An IPv6 client is one /64 (what one subscriber line or host is given): counted by its
# full address, one host could rotate through 2**64 of them.
IPV6_CLIENT_PREFIX = 64


def client_key(address: IPAddress | None) -> str:
    """What a limit per client counts by: an IPv4 address, or an IPv6 address's /64
    (``"-"``: no IP peer, a Unix socket)."""
    if address is None:
        return "-"
    if isinstance(address, ipaddress.IPv6Address):
        return str(ipaddress.IPv6Network((address, IPV6_CLIENT_PREFIX), strict=False))
    return str(address)


def client_address(scope: Scope, trusted: TrustedProxies) -> IPAddress | None:
    """The address of the client this connection (HTTP or WebSocket) serves; None when its
    peer is not an IP socket (a Unix socket) and no trusted proxy named one."""
    client = scope.get("client")
    address = parse_address(client[0]) if client else None
    if address not in trusted:
        return address
    chain = _forwarded_chain(scope.get("headers") or ())
    for entry in reversed(chain):
        hop = parse_address(entry)
        if hop not in trusted:
            # No address: the proxy that wrote it (the last trusted one) stands for it.
            return address if hop is None else hop
        address = hop
    # Every hop is a trusted proxy: the first is the client.
    return address


def _forwarded_chain(headers: Sequence[tuple[bytes, bytes]]) -> list[str]:
    """The addresses the proxies forwarded, the client's first: X-Forwarded-For's, else
    Forwarded's ``for=`` ones; each header may come several times (read in order)."""
    xff = [value for name, value in headers if name == b"x-forwarded-for"]
    if xff:
        return [e for v in xff for e in v.decode("latin-1").split(",") if e.strip()]
    chain = []
    for name, value in headers:
        if name != b"forwarded":
            continue
        for element in value.decode("latin-1").split(","):
            found = "unknown"  # an element without for= still counts as a hop
            for pair in element.split(";"):
                key, _, text = pair.partition("=")
                if key.strip().lower() == "for":
                    found = text
            chain.append(found)
    return chain
