"""Production posture and the HTTP guards: IDE, introspection and suggestions off when asked,
CORS limited to the configured origins, security headers, body limit, GraphQL-shaped refusals."""

from __future__ import annotations

import base64
import hashlib
import re
from collections.abc import AsyncIterator

import pytest
from pydantic import ValidationError

from server.settings import Settings
from storage.table import TableRef
from tests.api_helpers import SECRET, Api, running_api

INTROSPECT = "{ __schema { queryType { name } } }"
TYPO = '{ product(productId: "p") { productld } }'
SHOP = "https://shop.example"


@pytest.fixture(scope="module")
async def prod(table: TableRef) -> AsyncIterator[Api]:
    async with running_api(
        table.client, table.name, production=True, cors_origins=[SHOP]
    ) as running:
        yield running


def test_production_refuses_an_unsafe_configuration() -> None:
    with pytest.raises(ValidationError, match="DYNAMODB_ENDPOINT_URL"):
        Settings(production=True, jwt_secret=SECRET)
    with pytest.raises(ValidationError, match="JWT_SECRET"):
        Settings(production=True, dynamodb_endpoint_url="http://db.internal:8000")


def test_production_defaults_and_explicit_overrides() -> None:
    base = Settings(production=True, dynamodb_endpoint_url="http://db:8000", jwt_secret=SECRET)
    assert (base.graphiql_on, base.introspection_on, base.suggestions_on) == (False,) * 3
    dev = Settings()
    assert (dev.graphiql_on, dev.introspection_on, dev.suggestions_on) == (True,) * 3
    chosen = Settings(
        production=True, dynamodb_endpoint_url="http://db:8000", jwt_secret=SECRET, graphiql=True
    )
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
