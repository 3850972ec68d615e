"""Settings: each default defined once, and the rules a configuration must meet."""

from __future__ import annotations

import pytest

from resolvers.auth import TokenRules
from schema import SchemaOptions
from server.cli import uvicorn_options
from server.settings import Settings
from storage.client import ClientSettings
from storage.planner import DEFAULT_TUNING, Tuning
from storage.writes import DEFAULT_LIMITS


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
