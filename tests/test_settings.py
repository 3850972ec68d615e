"""Settings: each default defined once, and the rules a configuration must meet."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from pydantic import ValidationError

from resolvers.auth import TokenRules
from schema import SchemaOptions
from server.cli import uvicorn_options
from server.settings import Settings
from storage.client import ClientSettings
from storage.planner import DEFAULT_TUNING, Tuning
from storage.writes import DEFAULT_LIMITS
from tests.api_helpers import SECRET

ROOT = Path(__file__).resolve().parent.parent
NO_SECRET = "JWT_SECRET must be set when DYNAMODB_ENDPOINT_URL is"


@pytest.fixture
def environment(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    """No setting comes from the environment the tests run in."""
    for name in Settings.model_fields:
        monkeypatch.delenv(name.upper(), raising=False)
    return monkeypatch


def test_defaults_are_those_of_the_layers_they_configure(environment: pytest.MonkeyPatch) -> None:
    settings = Settings()
    client = ClientSettings()
    assert (settings.aws_region, settings.fast_attribute_parsing) == (
        client.region,
        client.fast_attribute_parsing,
    )
    schema = SchemaOptions()
    assert (settings.max_query_cost, settings.max_response_nodes, settings.graphql_caches) == (
        schema.max_cost,
        schema.max_nodes,
        schema.caches,
    )
    assert Tuning(z=settings.read_headroom) == DEFAULT_TUNING
    assert settings.write_limits == DEFAULT_LIMITS
    assert settings.jwt_max_lifetime == TokenRules("s").max_lifetime


def test_head_limits_come_from_the_settings(environment: pytest.MonkeyPatch) -> None:
    options = uvicorn_options(Settings(max_header_bytes=4096, max_headers=20, header_timeout=3))
    limits = options["http"].limits
    assert (limits.max_bytes, limits.max_headers, limits.timeout) == (4096, 20, 3)
    assert options["h11_max_incomplete_event_size"] == 4096


def test_an_endpoint_needs_a_jwt_secret(environment: pytest.MonkeyPatch) -> None:
    with pytest.raises(ValidationError, match=NO_SECRET):
        Settings(dynamodb_endpoint_url="https://dynamodb.eu-west-1.amazonaws.com")
    environment.setenv("DYNAMODB_ENDPOINT_URL", "http://dynamodb:8000")
    with pytest.raises(ValidationError, match=NO_SECRET):
        Settings()
    environment.setenv("JWT_SECRET", SECRET)
    assert Settings().jwt_secret == SECRET


def test_the_embedded_engine_runs_without_a_secret(environment: pytest.MonkeyPatch) -> None:
    settings = Settings()
    assert settings.embedded
    assert settings.jwt_secret is None


@pytest.mark.parametrize(
    ("variables", "expected"),
    [
        ({"DYNAMODB_ENDPOINT_URL": "http://127.0.0.1:9"}, f"error: {NO_SECRET} "),
        ({"JWT_SECRET": "short-but-secret"}, "error: JWT_SECRET must be at least 32 bytes"),
    ],
    ids=["endpoint-without-secret", "short-secret"],
)
def test_serve_refuses_a_bad_configuration_before_it_starts(
    variables: dict[str, str], expected: str
) -> None:
    # A real process: were the configuration accepted, it would serve until the timeout.
    env = {k: v for k, v in os.environ.items() if k.lower() not in Settings.model_fields}
    env |= {"PORT": "0", "AUTHOR_ID_KEY": "author-key-never-printed", **variables}
    done = subprocess.run(
        [sys.executable, "-m", "server", "serve"],
        cwd=ROOT,
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2, done.stderr
    assert done.stderr.startswith(expected), done.stderr
    assert "author-key-never-printed" not in done.stderr
    assert "short-but-secret" not in done.stderr
