"""Which addresses a process listens on, read from Linux's ``/proc``.

The DynamoDB Local launcher uses this to check, after start-up, that the engine is only
reachable over loopback: the check reads what the kernel says, so it holds whatever kept
(or failed to keep) the engine off the wildcard address.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from ipaddress import IPv4Address, IPv6Address, ip_address
from pathlib import Path

_LISTEN = "0A"  # TCP_LISTEN in /proc/net/tcp's "st" column


@dataclass(frozen=True, slots=True)
class ListeningSocket:
    address: IPv4Address | IPv6Address
    port: int
    inode: int

    def __str__(self) -> str:
        if isinstance(self.address, IPv4Address):
            return f"{self.address}:{self.port}"
        mapped = self.address.ipv4_mapped
        # Python before 3.13 prints a mapped address in hex (::ffff:7f00:1).
        shown = self.address if mapped is None else f"::ffff:{mapped}"
        return f"[{shown}]:{self.port}"

    @property
    def is_loopback(self) -> bool:
        """Only loopback can reach it: 127.0.0.0/8, ::1, or IPv4 loopback mapped into IPv6."""
        if isinstance(self.address, IPv6Address) and self.address.ipv4_mapped is not None:
            return self.address.ipv4_mapped.is_loopback
        return self.address.is_loopback


def _address(hex_address: str) -> IPv4Address | IPv6Address:
    # The kernel prints the address as 32-bit words in host byte order.
    words = [hex_address[i : i + 8] for i in range(0, len(hex_address), 8)]
    raw = b"".join(int(word, 16).to_bytes(4, sys.byteorder) for word in words)
    return ip_address(raw)


def parse_listening(table: str) -> Iterator[ListeningSocket]:
    """The listening sockets in the text of ``/proc/net/tcp`` or ``/proc/net/tcp6``."""
    for line in table.splitlines()[1:]:
        fields = line.split()
        if len(fields) < 10 or fields[3] != _LISTEN:
            continue
        hex_address, hex_port = fields[1].split(":")
        yield ListeningSocket(_address(hex_address), int(hex_port, 16), int(fields[9]))


def _socket_inodes(pid: int) -> set[int]:
    inodes: set[int] = set()
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        try:
            target = os.readlink(fd)
        except OSError:  # closed since the listing
            continue
        if target.startswith("socket:["):
            inodes.add(int(target[len("socket:[") : -1]))
    return inodes


def listening_sockets(pid: int, port: int) -> list[ListeningSocket]:
    """Every TCP socket listening on ``port`` or held by process ``pid``, in that process's
    network namespace; OSError when ``/proc`` cannot tell (not Linux, process gone)."""
    inodes = _socket_inodes(pid)
    found: list[ListeningSocket] = []
    for name in ("tcp", "tcp6"):
        table = Path(f"/proc/{pid}/net/{name}")
        # A kernel without IPv6 has no tcp6 table; tcp is always there on Linux.
        if name == "tcp6" and not table.exists():
            continue
        found += [
            s for s in parse_listening(table.read_text()) if s.port == port or s.inode in inodes
        ]
    return found
