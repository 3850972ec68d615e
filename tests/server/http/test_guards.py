"""Production posture and the HTTP guards: IDE, introspection and suggestions off when asked,
CORS limited to the configured origins, security headers, body limit, GraphQL-shaped refusals;
and, against a real server process, the limits on request heads, slow clients, clients
that leave mid-request and the connection limit, and the metrics' count of the refusals the
application never sees."""

from __future__ import annotations

import asyncio
import base64
import hashlib
import re
import select
import socket
import tempfile
from collections.abc import AsyncIterator, Iterator
from contextlib import ExitStack
from dataclasses import dataclass
from typing import IO, Any

import httpx
import pytest
from pydantic import ValidationError

from server.dev.local_engine import LocalEngine
from server.settings import Settings
from storage.engine.table import TableRef
from testing.live_server import LiveServer, live_server
from testing.scrape import parse_scrape, sample
from tests.api_helpers import SECRET, Api, running_api

INTROSPECT = "{ __schema { queryType { name } } }"
TYPO = '{ product(productId: "p") { productld } }'
SHOP = "https://shop.example"


@pytest.fixture(scope="module")
async def prod(table: TableRef) -> AsyncIterator[Api]:
    async with running_api(
        table.client, table.name, production=True, cors_origins=[SHOP], body_timeout=0.5
    ) as running:
        yield running


def test_production_refuses_an_unsafe_configuration() -> None:
    with pytest.raises(ValidationError, match="DYNAMODB_ENDPOINT_URL"):
        Settings(production=True, jwt_secret=SECRET, author_id_key=SECRET)
    with pytest.raises(ValidationError, match="JWT_SECRET"):
        Settings(production=True, dynamodb_endpoint_url="http://db.internal:8000")
    with pytest.raises(ValidationError, match="AUTHOR_ID_KEY"):
        Settings(production=True, dynamodb_endpoint_url="http://db:8000", jwt_secret=SECRET)


def test_production_defaults_and_explicit_overrides() -> None:
    production: dict[str, Any] = {
        "production": True,
        "dynamodb_endpoint_url": "http://db:8000",
        "jwt_secret": SECRET,
        "author_id_key": SECRET,
    }
    base = Settings(**production)
    assert (base.graphiql_on, base.introspection_on, base.suggestions_on) == (False,) * 3
    dev = Settings()
    assert (dev.graphiql_on, dev.introspection_on, dev.suggestions_on) == (True,) * 3
    chosen = Settings(**production, graphiql=True)
    assert chosen.graphiql_on
    assert not chosen.introspection_on


async def test_production_hides_the_ide_introspection_and_suggestions(prod: Api) -> None:
    page = await prod.http.get("/graphql", headers={"accept": "text/html"})
    assert page.status_code == 404
    assert page.json()["errors"][0]["extensions"]["code"] == "BAD_USER_INPUT"
    body = await prod.gql(INTROSPECT)
    assert body["data"] is None
    assert "introspection" in body["errors"][0]["message"].lower()
    typo = await prod.gql(TYPO)
    message = typo["errors"][0]["message"]
    assert "productld" in message
    assert "productId" not in message
    assert "Did you mean" not in message


async def test_development_keeps_them(api: Api) -> None:
    assert (await api.gql(INTROSPECT))["data"]["__schema"]["queryType"]["name"] == "Query"
    assert "Did you mean 'productId'" in (await api.gql(TYPO))["errors"][0]["message"]


async def test_cors_only_for_configured_origins(prod: Api) -> None:
    preflight = {"access-control-request-method": "POST"}
    allowed = await prod.http.options("/graphql", headers={"origin": SHOP, **preflight})
    assert allowed.status_code == 200
    assert allowed.headers["access-control-allow-origin"] == SHOP
    foreign = await prod.http.options(
        "/graphql", headers={"origin": "https://evil.example", **preflight}
    )
    assert foreign.status_code == 400
    assert "access-control-allow-origin" not in foreign.headers
    simple = await prod.http.post(
        "/graphql", json={"query": "{ __typename }"}, headers={"origin": "https://evil.example"}
    )
    assert "access-control-allow-origin" not in simple.headers


# What browsers send through real clients: tracing (W3C, Sentry, Datadog, B3, New Relic),
# Apollo's headers, a request id of the caller's own.
CLIENT_HEADERS = (
    "content-type, authorization, traceparent, tracestate, baggage, sentry-trace, "
    "apollographql-client-name, apollographql-client-version, apollo-require-preflight, "
    "x-apollo-operation-name, x-request-id, x-datadog-trace-id, x-datadog-parent-id, "
    "x-datadog-origin, x-datadog-sampling-priority, b3, x-b3-traceid, x-b3-spanid, "
    "x-b3-parentspanid, x-b3-sampled, x-b3-flags, newrelic"
)


@pytest.mark.parametrize("method", ["GET", "POST"])
async def test_a_preflight_allows_what_real_clients_send_and_is_cached(
    prod: Api, method: str
) -> None:
    response = await prod.http.options(
        "/graphql",
        headers={
            "origin": SHOP,
            "access-control-request-method": method,
            "access-control-request-headers": CLIENT_HEADERS.upper(),
        },
    )
    assert response.status_code == 200, response.text
    assert response.headers["access-control-allow-origin"] == SHOP
    allowed = {
        h.strip().lower() for h in response.headers["access-control-allow-headers"].split(",")
    }
    assert {h.strip() for h in CLIENT_HEADERS.split(",")} <= allowed
    assert response.headers["access-control-max-age"] == str(Settings().cors_max_age)
    assert "vary" in response.headers


async def test_a_preflight_for_other_headers_is_refused_with_a_request_id(prod: Api) -> None:
    response = await prod.http.options(
        "/graphql",
        headers={
            "origin": SHOP,
            "access-control-request-method": "POST",
            "access-control-request-headers": "content-type, x-unknown",
        },
    )
    assert response.status_code == 400
    assert re.fullmatch(r"[0-9a-f]{32}", response.headers["x-request-id"])
    # Shaped as every other refusal: JSON with a code, naming what was refused.
    assert response.headers["content-type"] == "application/json"
    error = response.json()["errors"][0]
    assert error["extensions"] == {"code": "BAD_USER_INPUT"}
    assert "x-unknown" in error["message"]
    assert "content-type" not in error["message"]


async def test_a_preflight_from_another_origin_is_refused_in_json(prod: Api) -> None:
    response = await prod.http.options(
        "/graphql",
        headers={"origin": "https://evil.example", "access-control-request-method": "PUT"},
    )
    assert response.status_code == 400
    assert "access-control-allow-origin" not in response.headers
    assert re.fullmatch(r"[0-9a-f]{32}", response.headers["x-request-id"])
    assert response.headers["cache-control"] == "no-store"
    body = response.json()
    assert body["data"] is None
    message = body["errors"][0]["message"]
    assert "origin" in message
    assert "method PUT" in message
    assert body["errors"][0]["extensions"]["code"] == "BAD_USER_INPUT"


async def test_allowed_headers_and_max_age_are_settings(table: TableRef) -> None:
    async with running_api(
        table.client,
        table.name,
        cors_origins=[SHOP],
        cors_allow_headers="Content-Type, X-Custom",
        cors_max_age=60,
    ) as custom:
        preflight = {"origin": SHOP, "access-control-request-method": "POST"}
        ok = await custom.http.options(
            "/graphql", headers={**preflight, "access-control-request-headers": "x-custom"}
        )
        assert ok.status_code == 200
        assert ok.headers["access-control-max-age"] == "60"
        tracing = await custom.http.options(
            "/graphql", headers={**preflight, "access-control-request-headers": "traceparent"}
        )
        assert tracing.status_code == 400


def test_allowed_headers_are_parsed_and_checked() -> None:
    # As the environment gives it: one comma-separated string.
    parsed = Settings.model_validate({"cors_allow_headers": " Content-Type ,X-Custom,, "})
    assert parsed.cors_allow_headers == ["content-type", "x-custom"]
    assert "traceparent" in Settings().cors_allow_headers
    for bad in ("x custom", "x-a:b", "caf\u00e9"):
        with pytest.raises(ValidationError, match="CORS_ALLOW_HEADERS"):
            Settings.model_validate({"cors_allow_headers": bad})
    with pytest.raises(ValidationError):
        Settings(cors_max_age=-1)


async def test_answers_to_a_browser_expose_the_request_id(prod: Api) -> None:
    response = await prod.http.get(
        "/graphql", params={"query": "{ __typename }"}, headers={"origin": SHOP}
    )
    assert response.status_code == 200
    assert response.headers["access-control-allow-origin"] == SHOP
    assert "x-request-id" in response.headers["access-control-expose-headers"].lower()


async def test_no_cors_headers_without_configured_origins(api: Api) -> None:
    response = await api.http.post(
        "/graphql", json={"query": "{ __typename }"}, headers={"origin": SHOP}
    )
    assert "access-control-allow-origin" not in response.headers


async def test_html_carries_security_headers_and_a_csp_that_admits_its_own_script(
    api: Api,
) -> None:
    page = await api.http.get("/graphql", headers={"accept": "text/html"})
    assert page.status_code == 200
    assert page.headers["x-frame-options"] == "DENY"
    assert page.headers["x-content-type-options"] == "nosniff"
    csp = page.headers["content-security-policy"]
    assert "frame-ancestors 'none'" in csp
    assert "'unsafe-inline'" not in csp.split("script-src", 1)[1].split(";", 1)[0]
    inline = re.findall(r"<script>(.*?)</script>", page.text, re.DOTALL)
    assert inline
    for script in inline:
        digest = base64.b64encode(hashlib.sha256(script.encode()).digest()).decode()
        assert f"'sha256-{digest}'" in csp


async def test_json_responses_are_not_sniffed_or_cached(api: Api) -> None:
    response = await api.http.post("/graphql", json={"query": "{ __typename }"})
    assert response.headers["x-content-type-options"] == "nosniff"
    assert response.headers["cache-control"] == "no-store"
    assert "content-security-policy" not in response.headers


async def test_a_body_over_the_limit_is_refused_unread(api: Api) -> None:
    big = b'{"query": "{ __typename }", "pad": "' + b"x" * 10_000_000 + b'"}'
    response = await api.http.post(
        "/graphql", content=big, headers={"content-type": "application/json"}
    )
    assert response.status_code == 413
    assert response.json()["errors"][0]["extensions"]["code"] == "BAD_USER_INPUT"

    async def chunks() -> AsyncIterator[bytes]:
        yield b'{"query": "{ __typename }", "pad": "'
        for _ in range(40):
            yield b"x" * 65536
        yield b'"}'

    streamed = await api.http.post(
        "/graphql", content=chunks(), headers={"content-type": "application/json"}
    )
    assert "content-length" not in streamed.request.headers
    assert streamed.status_code == 413


async def test_a_body_under_the_limit_is_served(api: Api) -> None:
    padded = b'{"query": "{ __typename }", "pad": "' + b"x" * 500_000 + b'"}'
    response = await api.http.post(
        "/graphql", content=padded, headers={"content-type": "application/json"}
    )
    assert response.status_code == 200
    assert response.json()["data"] == {"__typename": "Query"}


# Refusals made before GraphQL runs carry CORS and the request id too, so a browser page can
# read them. Each request comes from an allowed origin.
MANY_HEADERS = {f"x-filler-{n}": "1" for n in range(150)}
BIG_HEADER = {"x-big": "a" * 40_000}
JSON_TYPE = {"content-type": "application/json"}


@pytest.mark.parametrize(
    ("method", "path", "body", "headers", "status"),
    [
        pytest.param("POST", "/graphql", b"x" * 2_000_000, JSON_TYPE, 413, id="413-body"),
        pytest.param("POST", "/graphql", b"{", JSON_TYPE, 400, id="400-bad-json"),
        pytest.param("PUT", "/graphql", None, {}, 405, id="405-method"),
        pytest.param(
            "GET", "/graphql?query=mutation%7B__typename%7D", None, {}, 405, id="405-get-mutation"
        ),
        pytest.param(
            "POST",
            "/graphql",
            b'{"query": "{ __typename }"}',
            {"accept": "text/html"},
            406,
            id="406-accept",
        ),
        pytest.param(
            "POST",
            "/graphql",
            b'{"query": "{ __typename }"}',
            {"content-type": "text/plain"},
            415,
            id="415-content-type",
        ),
        pytest.param(
            "POST",
            "/graphql",
            b'{"query": "{"}',
            {**JSON_TYPE, "accept": "application/graphql-response+json"},
            400,
            id="400-parse-error",
        ),
        pytest.param("POST", "/graphql/", b"{}", JSON_TYPE, 404, id="404-trailing-slash"),
        pytest.param(
            "POST", "/graphql", b"{}", {**MANY_HEADERS, **JSON_TYPE}, 431, id="431-header-count"
        ),
        pytest.param(
            "POST", "/graphql", b"{}", {**BIG_HEADER, **JSON_TYPE}, 431, id="431-head-bytes"
        ),
    ],
)
async def test_refusals_carry_cors_and_a_request_id(
    prod: Api, method: str, path: str, body: bytes | None, headers: dict[str, str], status: int
) -> None:
    response = await prod.http.request(
        method, path, content=body, headers={"origin": SHOP, **headers}
    )
    assert response.status_code == status, response.text[:200]
    assert response.headers["access-control-allow-origin"] == SHOP
    assert "x-request-id" in response.headers["access-control-expose-headers"].lower()
    assert re.fullmatch(r"[0-9a-f]{32}", response.headers["x-request-id"])


async def test_a_body_that_stalls_gets_408_with_cors(prod: Api) -> None:
    async def stalling() -> AsyncIterator[bytes]:
        yield b'{"query": "{ __typ'
        await asyncio.sleep(30)  # far past BODY_TIMEOUT (0.5 s in this app)
        yield b'ename }"}'

    response = await prod.http.post(
        "/graphql", content=stalling(), headers={"origin": SHOP, **JSON_TYPE}
    )
    assert response.status_code == 408
    assert response.json()["errors"][0]["extensions"]["code"] == "BAD_USER_INPUT"
    assert response.headers["access-control-allow-origin"] == SHOP
    assert response.headers["connection"] == "close"


async def test_a_trailing_slash_never_redirects_to_the_host_header(api: Api) -> None:
    for method in ("GET", "POST"):
        response = await api.http.request(
            method, "/graphql/", json={"query": "{ __typename }"}, headers={"host": "evil.example"}
        )
        assert response.status_code == 404
        assert "location" not in response.headers
        assert "evil.example" not in response.text


# Against a real server process, once per HTTP implementation. Small limits keep the tests
# fast; the defaults are in server/settings.py.
LIVE_LIMITS = {
    "MAX_HEADER_BYTES": "16384",
    "MAX_HEADERS": "50",
    "HEADER_TIMEOUT": "1",
    "BODY_TIMEOUT": "1",
    # uvicorn's concurrency limit is their sum: ten open connections answer the next 503.
    "MAX_CONNECTIONS": "9",
    "MAX_WEBSOCKETS": "1",
}
CONNECTION_LIMIT = 10
# How long a test waits for the server before it calls a connection held open: far longer
# than any of the limits above.
PATIENCE = 20.0


@dataclass
class Live:
    server: LiveServer
    log: IO[bytes]

    def connect(self) -> socket.socket:
        return socket.create_connection(("127.0.0.1", self.server.port), timeout=PATIENCE)

    def healthy(self) -> bool:
        return httpx.get(f"{self.server.base_url}/healthz", timeout=PATIENCE).status_code == 200

    def logged(self) -> str:
        self.log.seek(0)
        return self.log.read().decode(errors="replace")


@pytest.fixture(scope="module", params=["httptools", "h11"])
def live(request: pytest.FixtureRequest, engine: LocalEngine, table: TableRef) -> Iterator[Live]:
    with (
        tempfile.TemporaryFile() as log,
        live_server(
            engine.endpoint_url,
            table.name,
            SECRET,
            log=log,
            UVICORN_HTTP=request.param,
            **LIVE_LIMITS,
        ) as server,
    ):
        yield Live(server, log)


def _answer(sock: socket.socket) -> bytes:
    """Everything the server sends until it closes; a reset counts as a close. Fails when
    the server keeps the connection open past PATIENCE."""
    received = b""
    while True:
        try:
            chunk = sock.recv(65536)
        except ConnectionResetError:
            return received
        except TimeoutError:
            pytest.fail(f"the server held the connection open; it sent {received[:200]!r}")
        if not chunk:
            return received
        received += chunk


def test_a_huge_request_head_is_cut_off_long_before_it_ends(live: Live) -> None:
    total = 64 * 1024 * 1024
    chunk = b"a" * 65536
    sent = 0
    answer = b""
    with live.connect() as sock:
        sock.sendall(b"GET /healthz HTTP/1.1\r\nhost: x\r\nx-huge: ")
        try:
            while sent < total:
                sock.sendall(chunk)
                sent += len(chunk)
                if select.select([sock], [], [], 0)[0]:
                    answer = _answer(sock)
                    break
        except (BrokenPipeError, ConnectionResetError):
            pass  # closed while we were still sending: refused without reading it all
    assert sent < total // 4, f"the server read {sent} bytes of one header"
    if answer:
        assert answer.startswith(b"HTTP/1.1 431 "), answer[:200]
    assert live.healthy()


def test_a_head_over_the_byte_cap_gets_431(live: Live) -> None:
    head = b"GET /healthz HTTP/1.1\r\nhost: x\r\nx-big: " + b"a" * 20_000 + b"\r\n\r\n"
    with live.connect() as sock:
        sock.sendall(head)
        answer = _answer(sock)
    assert answer.startswith(b"HTTP/1.1 431 "), answer[:200]
    assert b"server:" not in answer.lower()
    assert live.healthy()


def test_a_head_with_too_many_headers_gets_431(live: Live) -> None:
    fillers = b"".join(b"x-filler-%d: 1\r\n" % n for n in range(60))
    with live.connect() as sock:
        sock.sendall(b"GET /healthz HTTP/1.1\r\nhost: x\r\n" + fillers + b"\r\n")
        answer = _answer(sock)
    assert answer.startswith(b"HTTP/1.1 431 "), answer[:200]
    assert live.healthy()


def test_heads_under_the_caps_are_served_without_a_server_header(live: Live) -> None:
    fillers = b"".join(b"x-filler-%d: 1\r\n" % n for n in range(40))
    big = b"x-big: " + b"a" * 12_000 + b"\r\n"
    with live.connect() as sock:
        sock.sendall(
            b"GET /healthz HTTP/1.1\r\nhost: x\r\nconnection: close\r\n" + fillers + big + b"\r\n"
        )
        answer = _answer(sock)
    assert answer.startswith(b"HTTP/1.1 200 "), answer[:200]
    assert b"\r\nserver:" not in answer.lower()


def test_a_body_read_with_its_head_does_not_count_as_head(live: Live) -> None:
    body = b'{"query": "{ __typename }", "pad": "' + b"x" * 200_000 + b'"}'
    with live.connect() as sock:
        sock.sendall(
            b"POST /graphql HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\n"
            b"connection: close\r\ncontent-length: %d\r\n\r\n" % len(body) + body
        )
        answer = _answer(sock)
    assert answer.startswith(b"HTTP/1.1 200 "), answer[:200]
    assert b'"__typename":"Query"' in answer


def test_pipelined_heads_are_counted_one_by_one(live: Live) -> None:
    # 100 small requests in one write: together far over the head cap, each well under it.
    one = b"GET /healthz HTTP/1.1\r\nhost: x\r\nx-pad: " + b"p" * 200 + b"\r\n\r\n"
    last = b"GET /healthz HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n"
    with live.connect() as sock:
        sock.sendall(one * 99 + last)
        answer = _answer(sock)
    assert answer.count(b"HTTP/1.1 200 ") == 100, answer[-300:]


@pytest.mark.parametrize(
    "sent", [b"", b"GET /healthz HTTP/1.1\r\nhost: x\r\n"], ids=["nothing", "half-a-head"]
)
def test_a_head_that_never_completes_is_closed(live: Live, sent: bytes) -> None:
    with live.connect() as sock:
        sock.sendall(sent)
        answer = _answer(sock)
    assert answer == b"" or answer.startswith(b"HTTP/1.1 408 "), answer[:200]
    assert live.healthy()


def test_a_body_that_stalls_is_refused_and_closed(live: Live) -> None:
    with live.connect() as sock:
        sock.sendall(
            b"POST /graphql HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\n"
            b"content-length: 100\r\n\r\n" + b'{"query": "'
        )
        answer = _answer(sock)
    assert answer.startswith(b"HTTP/1.1 408 "), answer[:200]
    assert live.healthy()


def test_a_client_leaving_mid_body_is_a_quiet_end(live: Live) -> None:
    for _ in range(3):
        with live.connect() as sock:
            sock.sendall(
                b"POST /graphql HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\n"
                b"content-length: 1000\r\n\r\n" + b'{"query": "{ __typename'
            )
    # /healthz is answered after the server saw those connections close.
    assert live.healthy()
    logged = live.logged()
    assert "Traceback" not in logged
    assert not re.search(r"\bERROR\b", logged), logged[-3000:]


REFUSALS = ("max_connections", "head_too_large", "head_timeout")


def _get_healthz(live: Live) -> bytes:
    with live.connect() as sock:
        sock.sendall(b"GET /healthz HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n")
        return _answer(sock)


def _refusals(live: Live) -> tuple[dict[str, float], int]:
    """The server's counts of refusals made before the application, and the 503s its
    scrapes met first (connections of the test may still be closing)."""
    for turned_away in range(20):
        scraped = httpx.get(f"{live.server.base_url}/metrics", timeout=PATIENCE)
        if scraped.status_code == 200:
            samples = parse_scrape(scraped.text)
            name = "comments_http_refusals_total"
            return {r: sample(samples, name, reason=r) for r in REFUSALS}, turned_away
        assert scraped.status_code == 503, scraped.text
    pytest.fail("the server kept answering 503")


def test_refusals_before_the_application_are_counted(live: Live) -> None:
    before, _ = _refusals(live)
    with live.connect() as sock:
        sock.sendall(b"GET /healthz HTTP/1.1\r\nhost: x\r\nx-big: " + b"a" * 20_000 + b"\r\n\r\n")
        assert _answer(sock).startswith(b"HTTP/1.1 431 ")
    with live.connect() as sock:
        sock.sendall(b"GET /healthz HTTP/1.1\r\nhost: x\r\n")
        assert _answer(sock).startswith(b"HTTP/1.1 408 ")
    # Connections held open (idle: a second later the head timeout closes them) take
    # uvicorn's places; the next request is answered 503 without the application.
    refused = 0
    for _ in range(5):
        with ExitStack() as held:
            for _ in range(CONNECTION_LIMIT):
                held.enter_context(live.connect())
            answer = _get_healthz(live)
        if answer.startswith(b"HTTP/1.1 503 "):
            refused += 1
            break
        assert answer.startswith(b"HTTP/1.1 200 "), answer[:200]
    assert refused == 1
    after, more = _refusals(live)
    assert after["head_too_large"] == before["head_too_large"] + 1
    assert after["head_timeout"] == before["head_timeout"] + 1
    assert after["max_connections"] == before["max_connections"] + refused + more
    assert live.healthy()
