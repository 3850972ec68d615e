"""Places for WebSocket connections in one process, so that no client can take them all.

A connection takes three kinds of place: one of the process's (``MAX_WEBSOCKETS``), one of
its client address's (``MAX_WEBSOCKETS_PER_ADDRESS``, the address server.http.forwarded gives,
an IPv6 client counted by its /64) when it is opened, and one of its token holder's
(``MAX_WEBSOCKETS_PER_TOKEN``, by the token's subject, so that fresh tokens of one holder
share them) when connection_init brings a token. Past either of the first two the socket
is accepted and closed at once with 1013 (try again later); past the third, with 4029 and
a reason. ``graphql-ws`` retries both with its back-off: it gives up at once only on the
protocol's fatal codes (4400, 4401, 4406, 4409, 4429, 4500) and on 1xxx errors other than
the passing ones (1013 among those).

The counts per address and per holder keep an entry only while it is above zero, so they
never hold more entries than there are sockets open (``MAX_WEBSOCKETS``), each a short key.
"""

from __future__ import annotations

from collections import Counter
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import TypeVar

from starlette.types import Message, Send

from server.http.forwarded import IPAddress, client_key

# Close codes: the process or the address has no place left (RFC 6455's "try again later"),
# the token's holder has none (4000-4399 are the application's; the protocol's are 44xx).
TRY_AGAIN_LATER = 1013
TOO_MANY_FOR_TOKEN = 4029
PROCESS_FULL = "Too many connections; retry later"
ADDRESS_FULL = "Too many connections from this address; retry later"
TOKEN_FULL = "Too many connections with this token; close one first"


@dataclass(slots=True)
class Socket:
    """One connection's places, and its ``send`` once the connection was closed here (the
    protocol handler's own later messages are dropped)."""

    send: Send
    address: IPAddress | None
    holder: str | None = None
    closed: bool = False

    async def forward(self, message: Message) -> None:
        if not self.closed:
            await self.send(message)

    async def close(self, code: int, reason: str) -> None:
        if not self.closed:
            self.closed = True
            await self.send({"type": "websocket.close", "code": code, "reason": reason})


K = TypeVar("K")

# The connection the running task serves: the protocol handler calls the view's
# on_ws_connect with the connection's context alone.
CURRENT: ContextVar[Socket | None] = ContextVar("comments_socket", default=None)


@dataclass(slots=True)
class SocketPlaces:
    """The places of one process and how many are taken, in all and per key."""

    total: int
    per_address: int
    per_token: int
    open: int = 0
    # Sockets per client (server.http.forwarded.client_key: an IPv6 client is its /64).
    addresses: Counter[str] = field(default_factory=Counter)
    holders: Counter[str] = field(default_factory=Counter)

    def take(self, address: IPAddress | None, send: Send) -> Socket | str:
        """A place for a new connection from ``address``, or why there is none."""
        if self.open >= self.total:
            return PROCESS_FULL
        if self.addresses[client_key(address)] >= self.per_address:
            return ADDRESS_FULL
        self.open += 1
        self.addresses[client_key(address)] += 1
        return Socket(send, address)

    def take_for_holder(self, socket: Socket, holder: str) -> bool:
        """A place for ``holder``'s token on ``socket``; False when it has none left."""
        if self.holders[holder] >= self.per_token:
            return False
        self.holders[holder] += 1
        socket.holder = holder
        return True

    def give_back(self, socket: Socket) -> None:
        self.open -= 1
        _decrement(self.addresses, client_key(socket.address))
        if socket.holder is not None:
            _decrement(self.holders, socket.holder)
            socket.holder = None


def _decrement(counts: Counter[K], key: K) -> None:
    counts[key] -= 1
    if counts[key] <= 0:
        del counts[key]
