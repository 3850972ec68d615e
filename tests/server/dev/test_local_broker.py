"""The development Redis: started on loopback on a free port, stopped by PID, restarted
on the same port after a crash."""

from __future__ import annotations

import os

import pytest

from server.dev.local_broker import BrokerError, LocalBroker, _answers
from server.dev.loopback import listening_sockets


def test_it_listens_on_loopback_only_and_stops_by_pid() -> None:
    with LocalBroker() as broker:
        assert broker.port is not None
        assert broker.pid is not None
        pid, port = broker.pid, broker.port
        assert broker.url == f"redis://127.0.0.1:{port}/0"
        sockets = listening_sockets(pid, port)
        assert sockets
        assert all(s.is_loopback for s in sockets)
    assert not _answers(port)
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)
    with pytest.raises(BrokerError):
        _ = broker.url


def test_a_killed_broker_starts_again_on_its_port() -> None:
    with LocalBroker() as broker:
        port = broker.port
        assert port is not None
        broker.kill()
        assert not _answers(port)
        broker.start()
        assert broker.port == port
        assert _answers(port)


def test_a_missing_binary_says_what_to_do(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("REDIS_SERVER", "/nonexistent/redis-server")
    with pytest.raises(BrokerError, match="apt-get install redis-server"):
        LocalBroker().start()
