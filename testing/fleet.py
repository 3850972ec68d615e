"""Several live servers on one table, as production runs them: a fan-out broker between
them (``FANOUT_URL``) and the shipped Varnish in front of them all, which they purge
(``PURGE_URLS``); for the freshness benchmark. Everything on loopback, on free ports,
stopped by PID when the block ends."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import AbstractContextManager, ExitStack, contextmanager
from dataclasses import dataclass
from typing import Any

from server.dev.local_broker import LocalBroker
from server.dev.local_engine import free_port
from server.dev.local_proxy import LocalProxy
from testing.live_server import LiveServer, live_server


@dataclass(frozen=True)
class Fleet:
    servers: list[LiveServer]
    proxy: LocalProxy
    broker: LocalBroker
    # What was started beside the servers (``alongside``), in the order given.
    alongside: list[Any]


def enter_together(stack: ExitStack, managers: Sequence[AbstractContextManager[Any]]) -> list[Any]:
    """Enter the context managers at once, on threads (a server takes seconds to start),
    each exited by ``stack``; when one fails, those that started are exited too."""
    if not managers:
        return []
    with ThreadPoolExecutor(len(managers)) as pool:
        futures = [pool.submit(m.__enter__) for m in managers]
        failure: BaseException | None = None
        entered: list[Any] = []
        for manager, future in zip(managers, futures, strict=True):
            try:
                entered.append(future.result())
            except BaseException as exc:  # the first failure is raised below
                failure = failure or exc
            else:
                stack.push(manager.__exit__)
    if failure is not None:
        raise failure
    return entered


@contextmanager
def fleet(
    endpoint_url: str,
    table: str,
    secret: str,
    processes: int,
    *,
    env: dict[str, str] | None = None,
    alongside: Sequence[AbstractContextManager[Any]] = (),
) -> Iterator[Fleet]:
    """``processes`` servers on ``table`` with a broker and a proxy; ``env`` adds settings
    to every server, ``alongside`` are started on threads beside them (another server, say)
    and stopped with them. The proxy starts once the servers answer (its configuration
    names their ports), before anything is written through them."""
    purge_port = free_port()
    with ExitStack() as stack:
        broker = stack.enter_context(LocalBroker())
        settings = {
            "FANOUT_URL": broker.url,
            "PURGE_URLS": f"http://127.0.0.1:{purge_port}/",
            **(env or {}),
        }
        servers = [
            live_server(endpoint_url, table, secret, log=None, **settings) for _ in range(processes)
        ]
        started = enter_together(stack, [*servers, *alongside])
        running: list[LiveServer] = started[:processes]
        proxy = LocalProxy([s.port for s in running])
        stack.callback(proxy.stop)
        proxy.start(purge_port=purge_port)
        yield Fleet(running, proxy, broker, started[processes:])
