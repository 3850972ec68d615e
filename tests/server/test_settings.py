"""Settings: each default defined once, and the rules a configuration must meet."""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest
from pydantic import ValidationError

from resolvers.auth import TokenRules
from schema import SchemaOptions
from server import settings as settings_groups
from server import shutdown
from server.cli import build_parser, main, storage_settings, token_settings, uvicorn_options
from server.dev.demo import DEMO_PRODUCTS
from server.runtime import DEV_TOKEN_LIFETIME
from server.settings import Settings
from storage.engine.client import ClientSettings
from storage.reads.planner import DEFAULT_TUNING, Tuning
from storage.writes import DEFAULT_LIMITS
from tests.api_helpers import SECRET

ROOT = Path(__file__).resolve().parents[2]
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
    assert settings.client_settings() == replace(client, endpoint_url=None)
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


def test_the_drain_timeout_is_uvicorns_graceful_shutdown(environment: pytest.MonkeyPatch) -> None:
    assert uvicorn_options(Settings())["timeout_graceful_shutdown"] == shutdown.TIMEOUT_SECONDS
    options = uvicorn_options(Settings(shutdown_timeout_seconds=2.5))
    assert options["timeout_graceful_shutdown"] == 2.5
    environment.setenv("SHUTDOWN_TIMEOUT_SECONDS", "-1")
    with pytest.raises(ValidationError, match="shutdown_timeout_seconds"):
        Settings()


def test_a_webhook_lease_outlasts_a_delivery_lookup_included(
    environment: pytest.MonkeyPatch,
) -> None:
    # A delivery: the host's lookup and the connection (each up to the connect timeout),
    # then two reads. A lease no longer than that lets another process deliver it again.
    with pytest.raises(ValidationError, match="a lease must outlast one delivery"):
        Settings(webhook_lease_seconds=10.0, webhook_connect_seconds=2, webhook_read_seconds=3)
    fits = Settings(webhook_lease_seconds=10.5, webhook_connect_seconds=2, webhook_read_seconds=3)
    assert fits.webhook_lease_seconds == 10.5


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
        # Each of these used to start (or die with a traceback once started).
        ({"METRICS": "port", "METRICS_HOST": "not a host!"}, "error: METRICS_HOST is neither"),
        ({"METRICS": "port", "METRICS_HOST": "192.0.2.1"}, "error: METRICS_HOST is not an"),
        ({"AWS_REGION": ""}, "error: AWS_REGION must be a region name"),
        ({"CORS_ORIGINS": "*"}, "error: CORS_ORIGINS: * would let every website"),
        ({"CORS_ORIGINS": "https://shop.example/"}, "error: CORS_ORIGINS must be origins"),
        (
            {"SHUTDOWN_TIMEOUT_SECONDS": "0"},
            "error: SHUTDOWN_TIMEOUT_SECONDS: Input should be greater than 0\n",
        ),
    ],
    ids=[
        "endpoint-without-secret",
        "short-secret",
        "metrics-host-no-name",
        "metrics-host-elsewhere",
        "empty-region",
        "cors-any-origin",
        "cors-not-an-origin",
        "no-drain-timeout",
    ],
)
def test_serve_refuses_a_bad_configuration_before_it_starts(
    variables: dict[str, str], expected: str
) -> None:
    # A real process: were the configuration accepted, it would serve until the timeout.
    env = {k: v for k, v in os.environ.items() if k.lower() not in Settings.model_fields}
    env |= {"PORT": "0", "AUTHOR_ID_KEY": "author-key-never-printed-" + "x" * 16, **variables}
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


@pytest.mark.parametrize("host", ["127.0.0.1", "0.0.0.0", "localhost"])
def test_metrics_listen_where_this_machine_can(environment: pytest.MonkeyPatch, host: str) -> None:
    assert Settings(metrics="port", metrics_host=host).metrics_host == host


def test_a_metrics_host_matters_only_to_a_listener_of_its_own(
    environment: pytest.MonkeyPatch,
) -> None:
    # METRICS=on serves them on the server's port: METRICS_HOST is not listened on.
    assert Settings(metrics="on", metrics_host="192.0.2.1").metrics_mode == "on"


@pytest.mark.parametrize("region", ["eu-west-1", "us-gov-west-1", "cn-north-1", "local"])
def test_regions_are_names(environment: pytest.MonkeyPatch, region: str) -> None:
    assert Settings(aws_region=region).aws_region == region


@pytest.mark.parametrize("region", ["", " ", "eu west 1", "EU-WEST-1", "eu-west-1/"])
def test_a_region_that_is_no_name_is_refused(environment: pytest.MonkeyPatch, region: str) -> None:
    with pytest.raises(ValidationError, match="AWS_REGION must be a region name"):
        Settings(aws_region=region)


@pytest.mark.parametrize(
    ("given", "origins"),
    [
        ("https://shop.example", ["https://shop.example"]),
        (
            "https://Shop.Example, http://localhost:3000,https://[::1]:8443",
            ["https://shop.example", "http://localhost:3000", "https://[::1]:8443"],
        ),
        ("", []),
    ],
)
def test_cors_origins_are_origins(
    environment: pytest.MonkeyPatch, given: str, origins: list[str]
) -> None:
    # As browsers send them in Origin: lower case, which is how they are compared.
    environment.setenv("CORS_ORIGINS", given)
    assert Settings().cors_origins == origins


@pytest.mark.parametrize(
    "given",
    [
        "https://shop.example/",
        "shop.example",
        "https://shop.example/app",
        "null",
        "ftp://x.example",
    ],
)
def test_what_no_browser_sends_as_an_origin_is_refused(
    environment: pytest.MonkeyPatch, given: str
) -> None:
    # It would never match, and browsers would be refused without a word.
    environment.setenv("CORS_ORIGINS", f"https://www.shop.example,{given}")
    with pytest.raises(ValidationError, match="CORS_ORIGINS must be origins"):
        Settings()


def test_every_origin_is_refused_in_development_too(environment: pytest.MonkeyPatch) -> None:
    # Not only in production: in development GraphiQL's page on loopback carries the dev
    # tokens, which any website could then read from a developer's browser.
    for given in ("*", "https://shop.example,*"):
        environment.setenv("CORS_ORIGINS", given)
        with pytest.raises(ValidationError, match="every website"):
            Settings()


def test_table_commands_read_the_storage_settings_and_options_win(
    environment: pytest.MonkeyPatch,
) -> None:
    environment.setenv("DYNAMODB_ENDPOINT_URL", "http://dynamodb.internal:8000")
    environment.setenv("DYNAMODB_TABLE", "from_environment")
    environment.setenv("AWS_REGION", "eu-west-1")
    environment.setenv("FAST_ATTRIBUTE_PARSING", "false")
    environment.setenv("STATIC_USER_AGENT", "false")
    environment.setenv("DIRECT_READS", "false")
    # No JWT_SECRET: reading or writing the table needs none, only serving does.
    from_environment = storage_settings(build_parser().parse_args(["verify-stats"]))
    assert from_environment.dynamodb_table == "from_environment"
    assert from_environment.client_settings() == ClientSettings(
        endpoint_url="http://dynamodb.internal:8000",
        region="eu-west-1",
        fast_attribute_parsing=False,
        static_user_agent=False,
        direct_reads=False,
    )
    options = ["--endpoint-url", "http://127.0.0.1:8001", "--table", "given", "--region", "x-1"]
    given = storage_settings(build_parser().parse_args(["explain", "p", *options]))
    assert (given.dynamodb_endpoint_url, given.dynamodb_table, given.aws_region) == (
        "http://127.0.0.1:8001",
        "given",
        "x-1",
    )


def test_the_command_lines_defaults_are_the_settings(environment: pytest.MonkeyPatch) -> None:
    parser = build_parser()
    storage = storage_settings(parser.parse_args(["create-table"]))
    fields = Settings.model_fields
    assert storage.dynamodb_endpoint_url is None
    assert storage.dynamodb_table == fields["dynamodb_table"].default
    assert storage.client_settings() == ClientSettings()
    assert parser.parse_args(["seed"]).products == fields["demo_products"].default == DEMO_PRODUCTS
    assert parser.parse_args(["token", "ann"]).hours * 3600 == DEV_TOKEN_LIFETIME


def test_the_token_command_reads_the_token_settings(environment: pytest.MonkeyPatch) -> None:
    environment.setenv("JWT_SECRET", SECRET)
    environment.setenv("JWT_ISSUER", "https://auth.shop.example")
    environment.setenv("JWT_MAX_LIFETIME", "3600")
    settings = token_settings(build_parser().parse_args(["token", "ann", "--audience", "api"]))
    assert (settings.jwt_secret, settings.jwt_issuer, settings.jwt_audience) == (
        SECRET,
        "https://auth.shop.example",
        "api",
    )
    assert settings.jwt_max_lifetime == 3600


def test_the_token_command_refuses_a_secret_the_server_would(
    environment: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["token", "ann", "--secret", "too-short-to-sign"]) == 2
    err = capsys.readouterr().err
    assert err == "error: JWT_SECRET must be at least 32 bytes\n"


def test_a_refused_setting_never_shows_its_value() -> None:
    secret = "not-a-number-but-a-secret-value-0123456789"
    with pytest.raises(ValidationError) as info:
        Settings(storage_timeout=secret)  # type: ignore[arg-type]
    assert secret not in str(info.value)


GROUPS = {
    "Storage": (settings_groups.StorageSettings, settings_groups.StorageUse),
    "Sign-in": (settings_groups.TokenSettings,),
    "HTTP and limits": (settings_groups.HttpSettings,),
    "Writes and moderation": (settings_groups.WriteSettings,),
    "Live updates": (settings_groups.LiveUpdateSettings,),
    "Webhooks": (settings_groups.WebhookSettings,),
    "Purging shared caches": (settings_groups.PurgeSettings,),
    "Observability": (settings_groups.ObservabilitySettings,),
    "Development": (settings_groups.DevelopmentSettings, settings_groups.EngineSettings),
}


def _documented() -> dict[str, set[str]]:
    """The variables of each section of docs/configuration.md."""
    sections: dict[str, set[str]] = {}
    current = None
    for line in (ROOT / "docs" / "configuration.md").read_text().splitlines():
        if line.startswith("## "):
            current = line[3:].strip()
        elif current is not None and line.startswith("| `"):
            sections.setdefault(current, set()).add(line.split("`")[1])
    return sections


def test_every_setting_is_documented_in_its_groups_table() -> None:
    documented = _documented()
    grouped = {
        name: {f.upper() for c in kinds for f in c.model_fields} for name, kinds in GROUPS.items()
    }
    assert {name: documented.get(name, set()) for name in GROUPS} == grouped
    assert set().union(*grouped.values()) == {f.upper() for f in Settings.model_fields}


def _environment_touches(path: Path) -> list[int]:
    """Lines of ``path`` that read or write the process environment."""
    lines = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Attribute) and node.attr in ("environ", "getenv", "putenv"):
            lines.append(node.lineno)
        elif isinstance(node, ast.ImportFrom) and node.module == "os":
            names = {a.name for a in node.names}
            lines += [node.lineno] if names & {"environ", "getenv", "putenv"} else []
    return lines


def test_only_the_settings_touch_the_environment() -> None:
    allowed = {ROOT / "server" / "environment.py", *(ROOT / "server" / "settings").rglob("*.py")}
    touching = {
        str(path.relative_to(ROOT)): found
        for package in ("storage", "resolvers", "schema", "server")
        for path in (ROOT / package).rglob("*.py")
        if path not in allowed and (found := _environment_touches(path))
    }
    assert touching == {}


def test_the_environment_check_sees_a_read(tmp_path: Path) -> None:
    probe = tmp_path / "probe.py"
    probe.write_text("import os\nfrom os import getenv\nvalue = os.environ.get('X')\n")
    assert _environment_touches(probe) == [2, 3]
