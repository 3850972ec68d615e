"""Probes DynamoDB Local from a non-loopback address; run only in a private network namespace.

``tests/server/dev/test_local_engine.py`` runs ``python -m tests.netns_probe SCENARIO`` under
``unshare --net``: the namespace starts with nothing but a loopback interface, so the
interface and its address (10.231.0.1/24) made here exist nowhere else, every connection
stays inside the namespace, and the host's network is never touched. The interface is a
dummy one, or a veth pair where the kernel has no dummy driver. Prints one JSON object;
exits with SKIP when the namespace allows neither.

Scenarios:
  loopback  the engine as started normally: who can connect to it
  unloaded  the loopback library named but not loadable: start must refuse and leave
            nothing listening
"""

from __future__ import annotations

import json
import socket
import subprocess
import sys
from pathlib import Path

from server.dev import local_engine
from server.dev.local_engine import EngineError, LocalEngine, free_port

SKIP = 77
INTERFACE = "probe0"
LINK_TYPES = (("type", "dummy"), ("type", "veth", "peer", "name", "probe1"))
OUTSIDE = "10.231.0.1"  # a non-loopback address of this namespace's own "machine"
Outcome = dict[str, str]


def _ip(*args: str) -> None:
    subprocess.run(["ip", *args], check=True, capture_output=True, text=True)


def _connect(host: str, port: int) -> str:
    try:
        with socket.create_connection((host, port), timeout=5):
            return "connected"
    except ConnectionRefusedError:
        return "refused"


def loopback() -> Outcome:
    with LocalEngine() as engine:
        assert engine.port is not None
        return {host: _connect(host, engine.port) for host in ("127.0.0.1", OUTSIDE)}


def unloaded() -> Outcome:
    # ld.so skips a preload it cannot load with no more than a warning, so the engine
    # binds the wildcard address: the launcher's own check must catch and stop it.
    local_engine.LOOPBACK_SHIM = Path(local_engine.__file__)
    port = free_port()
    engine = LocalEngine(port=port)
    try:
        engine.start()
    except EngineError as exc:
        error = str(exc).splitlines()[0]
    else:
        error = "none"
    outcome = {"error": error, "pid": str(engine.pid)}
    outcome |= {host: _connect(host, port) for host in ("127.0.0.1", OUTSIDE)}
    engine.stop()
    return outcome


def main(scenario: str) -> int:
    _ip("link", "set", "lo", "up")
    errors: list[str] = []
    for link_type in LINK_TYPES:
        try:
            _ip("link", "add", INTERFACE, *link_type)
            break
        except subprocess.CalledProcessError as exc:
            errors.append(f"{link_type[1]}: {exc.stderr.strip()}")
    else:
        print(f"cannot add a network interface here ({'; '.join(errors)})", file=sys.stderr)
        return SKIP
    try:
        _ip("addr", "add", f"{OUTSIDE}/24", "dev", INTERFACE)
        _ip("link", "set", INTERFACE, "up")
        outcome = {"loopback": loopback, "unloaded": unloaded}[scenario]()
    finally:
        _ip("link", "del", INTERFACE)
    print(json.dumps(outcome))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
