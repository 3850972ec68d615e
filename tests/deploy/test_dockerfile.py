"""The image: production unless told otherwise, base images pinned, and a health check that
asks the live process (and needs no curl, which the slim image lacks)."""

from __future__ import annotations

import os
import re
import subprocess
import sys

import httpx
import pytest
from pydantic import ValidationError

from server.dev.local_engine import LocalEngine
from server.settings import Settings
from storage.engine.table import TableRef
from testing.live_server import ROOT, live_server
from tests.api_helpers import SECRET
from tests.deploy.dockerfile import base_images, healthcheck, image_environment, instructions


@pytest.fixture
def environment(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    """No setting comes from the environment the tests run in."""
    for name in Settings.model_fields:
        monkeypatch.delenv(name.upper(), raising=False)
    return monkeypatch


def test_the_reader_joins_continued_lines_and_drops_comments() -> None:
    text = "# a comment\nFROM x AS y\nRUN a \\\n  # inside\n  && b\nENV A=1 B='two words'\n"
    assert instructions(text) == [
        ("FROM", "x AS y"),
        ("RUN", "a && b"),
        ("ENV", "A=1 B='two words'"),
    ]


def test_the_image_runs_in_production_unless_told_otherwise(
    environment: pytest.MonkeyPatch,
) -> None:
    image = image_environment()
    assert image["PRODUCTION"] == "true"
    for name, value in image.items():
        environment.setenv(name, value)
    # Started without what production needs, it refuses rather than serve GraphiQL,
    # introspection and /metrics on every interface.
    with pytest.raises(ValidationError, match="PRODUCTION needs DYNAMODB_ENDPOINT_URL"):
        Settings()
    environment.setenv("DYNAMODB_ENDPOINT_URL", "https://dynamodb.eu-west-1.amazonaws.com")
    environment.setenv("JWT_SECRET", SECRET)
    with pytest.raises(ValidationError, match="PRODUCTION needs AUTHOR_ID_KEY"):
        Settings()
    environment.setenv("AUTHOR_ID_KEY", SECRET)
    settings = Settings()
    assert settings.host == "0.0.0.0"
    assert (settings.graphiql_on, settings.introspection_on, settings.suggestions_on) == (
        False,
        False,
        False,
    )
    assert settings.metrics_mode == "port"


def test_the_base_images_are_pinned_by_digest_or_tagged() -> None:
    images = base_images()
    assert all(":" in image.split("@")[0] for image in images)  # never "latest" by default
    (runtime,) = [image for image in images if image.startswith("python:")]
    assert re.fullmatch(r"python:3\.11-slim@sha256:[0-9a-f]{64}", runtime)


def _check(command: list[str], port: int) -> subprocess.CompletedProcess[str]:
    # The image's WORKDIR is the checkout's root: .venv/bin/python is at the same place.
    env = {**os.environ, "PORT": str(port)}
    return subprocess.run(
        command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=30, check=False
    )


def test_the_health_check_asks_the_process_and_not_storage(table: TableRef) -> None:
    options, command = healthcheck()
    assert command[0] == ".venv/bin/python"  # the slim image has no curl
    assert float(options["timeout"].removesuffix("s")) > 4  # urlopen's own timeout
    with LocalEngine() as own:
        # A table of its own engine, which the test then stops: a storage outage.
        done = subprocess.run(
            [sys.executable, "-m", "server", "create-table", "--endpoint-url", own.endpoint_url],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        assert done.returncode == 0, done.stderr
        with live_server(own.endpoint_url, "comments", SECRET, STORAGE_TIMEOUT="1") as server:
            assert _check(command, server.port).returncode == 0
            own.stop()
            # Storage is gone: not ready, yet alive; restarting the container cannot help.
            assert httpx.get(f"{server.base_url}/readyz", timeout=10).status_code == 503
            assert _check(command, server.port).returncode == 0
    # The process is gone: the check fails, and the engine restarts the container.
    failed = _check(command, server.port)
    assert failed.returncode != 0
