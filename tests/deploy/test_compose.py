"""Local development: `docker compose up` starts the API once DynamoDB Local and Redis (the
fan-out broker) are healthy and lets a local frontend call it; every variable the API is
given is a setting the code reads; the server prints a URL a person can open, also when it
listens on every interface."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx
import pytest
import yaml

from server.dev.local_engine import LocalEngine
from server.runtime import local_url
from server.settings import DEV_CORS_ORIGINS, Settings
from storage.engine.table import TableRef
from testing.live_server import live_server
from tests.api_helpers import SECRET
from tests.deploy.dockerfile import image_environment

ROOT = Path(__file__).resolve().parents[2]


def compose() -> dict[str, Any]:
    loaded: dict[str, Any] = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
    return loaded


def test_the_engine_has_a_healthcheck_that_asks_it_something() -> None:
    check = compose()["services"]["dynamodb"]["healthcheck"]
    assert check["test"][0] == "CMD"
    assert "DynamoDB_20120810.ListTables" in " ".join(check["test"])
    assert check["retries"] >= 3


def test_the_api_waits_for_a_healthy_engine_and_broker() -> None:
    api = compose()["services"]["api"]
    assert api["depends_on"] == {
        "dynamodb": {"condition": "service_healthy"},
        "redis": {"condition": "service_healthy"},
    }
    assert "/healthz" in " ".join(api["healthcheck"]["test"])


def _api_settings() -> Settings:
    """The settings the api service's environment makes (CORS_ORIGINS at its default)."""
    environment = dict(compose()["services"]["api"]["environment"])
    cors = environment["CORS_ORIGINS"]
    environment["CORS_ORIGINS"] = cors.removeprefix("${CORS_ORIGINS:-").removesuffix("}")
    # The secret's file is made on the volume at the first start: a secret stands for it.
    environment.pop("JWT_SECRET_FILE")
    environment["JWT_SECRET"] = SECRET
    return Settings.model_validate({k.lower(): v for k, v in environment.items()})


def test_every_variable_of_the_api_is_a_setting_the_code_reads() -> None:
    # A misspelt variable would be ignored (the settings ignore unknown ones) and its
    # default used instead, silently.
    named = set(compose()["services"]["api"]["environment"])
    assert named - {name.upper() for name in Settings.model_fields} == set()
    assert not _api_settings().production


def test_the_api_takes_the_tables_changes_through_the_compose_broker() -> None:
    services = compose()["services"]
    url = _api_settings().fanout_url
    assert url is not None
    parts = urlsplit(url)
    # The broker's service by name, on the compose network, at Redis's port.
    assert (parts.scheme, parts.hostname, parts.port) == ("redis", "redis", 6379)
    broker = services["redis"]
    assert broker["image"].startswith("redis:")
    # Pub/sub keeps nothing: no snapshots, no append-only file, no volume; and nothing
    # outside the compose network reaches it.
    command = broker["command"]
    assert command[0] == "redis-server"
    assert command[command.index("--save") + 1] == ""
    assert command[command.index("--appendonly") + 1] == "no"
    assert "volumes" not in broker
    assert "ports" not in broker
    check = broker["healthcheck"]
    assert "redis-cli ping" in " ".join(check["test"])
    assert check["retries"] >= 3


def test_the_api_purges_the_compose_varnish_which_runs_the_shipped_configuration() -> None:
    services = compose()["services"]
    varnish, api = services["varnish"], services["api"]
    command = varnish["command"]
    listeners = [command[i + 1] for i, arg in enumerate(command) if arg == "-a"]
    (purge,) = [a.split("=", 1)[1] for a in listeners if a.startswith("purge=")]
    purge_port = purge.rsplit(":", 1)[1]
    assert api["environment"]["PURGE_URLS"] == f"http://varnish:{purge_port}/"
    vcl = command[command.index("-f") + 1]
    assert f"./deploy/varnish/default.vcl:{vcl}:ro" in varnish["volumes"]
    # The shipped file's backend is the api service, on the port the API listens on.
    shipped = (ROOT / "deploy" / "varnish" / "default.vcl").read_text()
    api_port = api["ports"][0].rsplit(":", 1)[1]
    assert '.host = "api";' in shipped
    assert f'.port = "{api_port}";' in shipped
    # Purges reach it from the compose network only: no host port for that listener.
    assert all(not p.endswith(f":{purge_port}") for p in varnish["ports"])
    assert varnish["depends_on"]["api"]["condition"] == "service_healthy"


def test_docker_waits_for_the_api_to_drain_before_it_kills_it() -> None:
    grace = compose()["services"]["api"]["stop_grace_period"]
    assert grace.endswith("s")
    # The compose file sets no drain settings: the defaults, and the closing after them.
    settings = Settings(jwt_secret=SECRET)
    drain = settings.shutdown_delay_seconds + settings.shutdown_timeout_seconds
    assert float(grace.removesuffix("s")) >= drain + settings.storage_timeout


def test_a_local_frontend_may_call_the_api() -> None:
    value = compose()["services"]["api"]["environment"]["CORS_ORIGINS"]
    # ${CORS_ORIGINS:-default}: overridable, with the usual dev servers as the default.
    assert value.startswith("${CORS_ORIGINS:-")
    assert value.endswith("}")
    default = value.removeprefix("${CORS_ORIGINS:-").removesuffix("}")
    parsed = Settings(cors_origins=default, jwt_secret=SECRET)
    # The same as `comments serve` allows in development, by either loopback name.
    assert parsed.cors_origins == list(DEV_CORS_ORIGINS)
    assert {"http://127.0.0.1:5173", "http://localhost:5173"} <= set(parsed.cors_origins)


def test_compose_runs_the_production_image_in_development_by_choice() -> None:
    # The image defaults to production; compose, for a developer's machine, says otherwise
    # (its environment wins over the image's ENV), and so keeps GraphiQL and the dev token.
    assert image_environment()["PRODUCTION"] == "true"
    assert compose()["services"]["api"]["environment"]["PRODUCTION"] == "false"


def test_compose_carries_no_secret_and_makes_one_per_volume() -> None:
    # A secret written in the repository would let anyone who read it mint moderator
    # tokens for a deployment that never set its own.
    loaded = compose()
    for service in loaded["services"].values():
        environment = service.get("environment") or {}
        assert "JWT_SECRET" not in environment
        assert "JWT_SECRET" not in " ".join(map(str, environment.values()))
    api = loaded["services"]["api"]
    path = Path(api["environment"]["JWT_SECRET_FILE"])
    mounts = dict(volume.split(":", 1)[::-1] for volume in api["volumes"])
    (folder,) = (Path(m) for m in mounts if path.is_relative_to(m))
    assert mounts[str(folder)] in loaded["volumes"]  # a named volume, kept across restarts
    # The image makes the folder the server's own, which a new volume takes on.
    dockerfile = (ROOT / "Dockerfile").read_text()
    assert f"install -d -o app -m 700 {folder}" in dockerfile
    assert api["environment"]["DEV_TOKEN"] == "true"


@pytest.mark.parametrize(
    ("host", "url"),
    [
        ("0.0.0.0", "http://127.0.0.1:8000"),
        ("::", "http://[::1]:8000"),
        ("127.0.0.1", "http://127.0.0.1:8000"),
        ("localhost", "http://localhost:8000"),
        ("::1", "http://[::1]:8000"),
        ("192.0.2.7", "http://192.0.2.7:8000"),
    ],
)
def test_the_printed_url_can_be_opened(host: str, url: str) -> None:
    assert local_url(Settings(host=host, port=8000)) == url


def test_a_server_on_every_interface_prints_a_loopback_url(
    engine: LocalEngine, table: TableRef
) -> None:
    with (
        tempfile.TemporaryFile() as log,
        live_server(engine.endpoint_url, table.name, SECRET, log=log, HOST="0.0.0.0") as server,
    ):
        log.seek(0)
        output = log.read().decode()
    assert f"GraphiQL: http://127.0.0.1:{server.port}/graphql\n" in output
    assert "0.0.0.0" not in output.split("Uvicorn running")[0]


def test_serve_lets_the_usual_frontend_dev_servers_call_it(
    engine: LocalEngine, table: TableRef
) -> None:
    # Development without CORS_ORIGINS: the same origins as docker compose, by either
    # loopback name; any other origin gets no CORS headers.
    preflight = {"access-control-request-method": "POST"}
    with live_server(engine.endpoint_url, table.name, SECRET) as server:
        for origin in ("http://127.0.0.1:5173", "http://localhost:3000"):
            answer = httpx.options(server.graphql_url, headers={**preflight, "origin": origin})
            assert answer.headers.get("access-control-allow-origin") == origin
        foreign = httpx.options(
            server.graphql_url, headers={**preflight, "origin": "http://shop.example"}
        )
        assert "access-control-allow-origin" not in foreign.headers
