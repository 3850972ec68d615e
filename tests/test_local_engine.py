"""The DynamoDB Local launcher: clear messages when something is missing, clean stops."""

from __future__ import annotations

import os
import socket
from pathlib import Path

import pytest

from storage import local_engine
from storage.client import is_local_endpoint
from storage.local_engine import EngineError, LocalEngine


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


def test_relative_data_dir_is_taken_from_the_callers_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    with LocalEngine(data_dir=Path(".data")) as engine:
        assert engine.port is not None
    assert (tmp_path / ".data").is_dir()
