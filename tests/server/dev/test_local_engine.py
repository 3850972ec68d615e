"""The DynamoDB Local launcher: clear messages when something is missing, clean stops, and
an engine that only loopback can reach."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
from ipaddress import ip_address
from pathlib import Path

import httpx
import pytest

from server.dev import local_engine
from server.dev.local_engine import EngineError, LocalEngine
from server.dev.loopback import listening_sockets, parse_listening
from storage.engine.client import is_local_endpoint
from tests import netns_probe


def test_missing_java_says_what_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", "/nonexistent")
    with pytest.raises(EngineError, match="Java 17"):
        local_engine.find_java()


def test_missing_package_says_to_run_npm_ci(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.delenv("DYNAMODB_LOCAL_JAR", raising=False)
    monkeypatch.setattr(local_engine, "PACKAGE_DIR", tmp_path)
    with pytest.raises(EngineError, match="npm ci"):
        local_engine.find_jar()
    monkeypatch.setenv("PATH", "/nonexistent")
    with pytest.raises(EngineError, match="npm is missing"):
        local_engine.find_jar()


def test_jar_override_must_exist(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("DYNAMODB_LOCAL_JAR", str(tmp_path / "nope.jar"))
    with pytest.raises(EngineError, match="does not exist"):
        local_engine.find_jar()


@pytest.mark.engine
def test_persistent_engine_starts_answers_and_stops(tmp_path: Path) -> None:
    engine = LocalEngine(data_dir=tmp_path / "data")
    with engine:
        assert engine.pid is not None
        pid = engine.pid
        port = engine.port
        assert port is not None
        with socket.create_connection(("127.0.0.1", port), timeout=2):
            pass
    assert engine.pid is None
    engine.stop()  # safe twice
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)
    assert (tmp_path / "data").is_dir()


@pytest.mark.parametrize(
    ("endpoint", "local"),
    [
        (None, False),
        ("http://127.0.0.1:8000", True),
        ("http://dynamodb:8000", True),
        ("https://dynamodb.eu-west-1.amazonaws.com", False),
        ("https://dynamodb.cn-north-1.amazonaws.com.cn", False),
    ],
)
def test_placeholder_credentials_only_for_local_endpoints(
    endpoint: str | None, local: bool
) -> None:
    assert is_local_endpoint(endpoint) is local


@pytest.mark.engine
def test_relative_data_dir_is_taken_from_the_callers_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    with LocalEngine(data_dir=Path(".data")) as engine:
        assert engine.port is not None
    assert (tmp_path / ".data").is_dir()


def _private_network(scenario: str) -> dict[str, str]:
    """Run tests/netns_probe.py in a network namespace of its own (see there)."""
    if shutil.which("unshare") is None or shutil.which("ip") is None:
        pytest.skip("needs unshare and ip (util-linux, iproute2) for a private network namespace")
    # As root a network namespace alone; otherwise inside a user namespace, where allowed.
    for prefix in (["unshare", "--net"], ["unshare", "--map-root-user", "--net"]):
        if subprocess.run([*prefix, "true"], capture_output=True, check=False).returncode == 0:
            break
    else:
        pytest.skip("cannot create a private network namespace (needs root or user namespaces)")
    # The probe is about the protected engine, whatever the caller's shell asks for.
    env = {k: v for k, v in os.environ.items() if k != "DYNAMODB_LOCAL_UNPROTECTED"}
    probe = subprocess.run(
        [*prefix, sys.executable, "-m", "tests.netns_probe", scenario],
        cwd=local_engine.PROJECT_ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )
    if probe.returncode == netns_probe.SKIP:
        pytest.skip(probe.stderr.strip())
    assert probe.returncode == 0, probe.stderr
    outcome: dict[str, str] = json.loads(probe.stdout.splitlines()[-1])
    return outcome


@pytest.mark.engine
def test_engine_answers_on_loopback_and_refuses_other_addresses_of_the_machine() -> None:
    assert _private_network("loopback") == {"127.0.0.1": "connected", "10.231.0.1": "refused"}


@pytest.mark.engine
def test_engine_that_listens_beyond_loopback_is_stopped_at_start() -> None:
    outcome = _private_network("unloaded")
    assert outcome["error"].startswith("DynamoDB Local listens beyond loopback ([::]:")
    assert outcome["pid"] == "None"
    assert (outcome["127.0.0.1"], outcome["10.231.0.1"]) == ("refused", "refused")


def test_missing_loopback_library_refuses_to_start(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.delenv("DYNAMODB_LOCAL_UNPROTECTED", raising=False)
    monkeypatch.setattr(local_engine, "LOOPBACK_SHIM", tmp_path / "bind_loopback.so")
    engine = LocalEngine()
    with pytest.raises(EngineError, match=r"scripts/setup.*DYNAMODB_LOCAL_UNPROTECTED=1"):
        engine.start()
    assert engine.pid is None
    assert engine.port is None


@pytest.mark.parametrize("value", ["1", "true", "YES", "on"])
def test_unprotected_setting_runs_without_the_library(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, value: str
) -> None:
    monkeypatch.setenv("DYNAMODB_LOCAL_UNPROTECTED", value)
    monkeypatch.setattr(local_engine, "LOOPBACK_SHIM", tmp_path / "bind_loopback.so")
    assert local_engine.loopback_environment() == {}


@pytest.mark.parametrize("value", ["", "0", "false", "No", "off"])
def test_protection_is_the_default(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, value: str
) -> None:
    shim = tmp_path / "bind_loopback.so"
    shim.touch()
    monkeypatch.setenv("DYNAMODB_LOCAL_UNPROTECTED", value)
    monkeypatch.delenv("LD_PRELOAD", raising=False)
    monkeypatch.setattr(local_engine, "LOOPBACK_SHIM", shim)
    assert local_engine.loopback_environment() == {"LD_PRELOAD": str(shim)}
    monkeypatch.setenv("LD_PRELOAD", "/opt/other.so")
    assert local_engine.loopback_environment() == {"LD_PRELOAD": f"{shim} /opt/other.so"}


def test_unclear_unprotected_setting_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DYNAMODB_LOCAL_UNPROTECTED", "maybe")
    with pytest.raises(EngineError, match="use 1 or 0"):
        local_engine.loopback_environment()


def test_library_path_that_ld_so_would_split_is_refused(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    shim = tmp_path / "my checkout" / "bind_loopback.so"
    shim.parent.mkdir()
    shim.touch()
    monkeypatch.delenv("DYNAMODB_LOCAL_UNPROTECTED", raising=False)
    monkeypatch.setattr(local_engine, "LOOPBACK_SHIM", shim)
    with pytest.raises(EngineError, match="space or colon"):
        local_engine.loopback_environment()


def _proc_table(*rows: tuple[str, str, int]) -> str:
    """A /proc/net/tcp or tcp6 table in the kernel's format: (local, state, inode) per row."""
    header = "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid"
    lines = [f"{header}  timeout inode"]
    for n, (local, state, inode) in enumerate(rows):
        remote = "0" * local.index(":") + ":0000"
        lines.append(
            f"{n:4}: {local} {remote} {state} 00000000:00000000 00:00000000 00000000 0 0 {inode}"
        )
    return "\n".join(lines) + "\n"


# Addresses as a little-endian kernel prints them: 32-bit words in host byte order.
TCP = _proc_table(
    ("0100007F:1F40", "0A", 101),  # 127.0.0.1:8000
    ("00000000:1F41", "0A", 102),  # 0.0.0.0:8001
    ("0100007F:1F40", "01", 103),  # an established connection: not listening
)
TCP6 = _proc_table(
    ("00000000000000000000000000000000:1F42", "0A", 201),  # [::]:8002
    ("00000000000000000000000001000000:1F43", "0A", 202),  # [::1]:8003
    ("0000000000000000FFFF00000100007F:1F44", "0A", 203),  # [::ffff:127.0.0.1]:8004
    ("0000000000000000FFFF00000100000A:1F45", "0A", 204),  # [::ffff:10.0.0.1]:8005
)


@pytest.mark.skipif(sys.byteorder != "little", reason="the sample tables are little-endian")
def test_proc_tables_are_read_as_addresses_and_only_loopback_counts_as_loopback() -> None:
    sockets = [*parse_listening(TCP), *parse_listening(TCP6)]
    assert [(str(s), s.is_loopback) for s in sockets] == [
        ("127.0.0.1:8000", True),
        ("0.0.0.0:8001", False),
        ("[::]:8002", False),
        ("[::1]:8003", True),
        ("[::ffff:127.0.0.1]:8004", True),
        ("[::ffff:10.0.0.1]:8005", False),
    ]
    assert [s.inode for s in sockets] == [101, 102, 201, 202, 203, 204]


def test_listening_sockets_finds_this_process_socket() -> None:
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        port = listener.getsockname()[1]
        found = listening_sockets(os.getpid(), port)
    assert [(s.address, s.port, s.is_loopback) for s in found] == [
        (ip_address("127.0.0.1"), port, True)
    ]


def test_no_web_page_may_call_the_engine_from_a_browser(engine: LocalEngine) -> None:
    # A page on any origin could otherwise reach the engine on 127.0.0.1 from a developer's
    # browser. Its preflight for DynamoDB's signed headers must not be allowed.
    preflight = httpx.options(
        engine.endpoint_url,
        headers={
            "Origin": "http://attacker.example",
            "Access-Control-Request-Method": "POST",
            "Access-Control-Request-Headers": "authorization,x-amz-target,content-type",
        },
    )
    assert "access-control-allow-origin" not in preflight.headers
