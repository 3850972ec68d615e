"""The GraphiQL page and its assets: served from the project's own pinned npm packages (an
allow-list, never an arbitrary path), nothing from another host, a CSP of 'self' without
'unsafe-inline', and the dev token in its headers only in development."""

from __future__ import annotations

import base64
import hashlib
import json
import re
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any
from urllib.parse import unquote

import httpx
import pytest
from starlette.types import Message

from server.http.app import create_app
from server.http.graphiql import ASSETS, GraphiQLPage
from server.runtime import DevTokens
from server.settings import Settings
from storage.engine.table import TableRef
from tests.api_helpers import SECRET, Api, running_api

ROOT = Path(__file__).resolve().parents[3]


def config_of(page: str) -> dict[str, Any]:
    found = re.search(
        r'<script type="application/json" id="graphiql-config">(.*?)</script>', page, re.DOTALL
    )
    assert found, page
    config: dict[str, Any] = json.loads(found.group(1))
    return config


def directives(csp: str) -> dict[str, list[str]]:
    return {part.split()[0]: part.split()[1:] for part in csp.split("; ")}


def digest(text: str) -> str:
    return "'sha256-" + base64.b64encode(hashlib.sha256(text.encode()).digest()).decode() + "'"


@pytest.fixture(scope="module")
async def dev(table: TableRef) -> AsyncIterator[Api]:
    """Development with a dev token printed at start-up."""
    async with running_api(table.client, table.name, dev_token=True) as running:
        yield running


async def test_the_page_loads_only_this_servers_assets(api: Api) -> None:
    page = await api.http.get("/graphql", headers={"accept": "text/html"})
    assert page.status_code == 200
    assert page.headers["content-type"].startswith("text/html")
    assert "unpkg" not in page.text
    assert "jsdelivr" not in page.text
    assert "//" not in re.sub(r"<script>.*?</script>", "", page.text, flags=re.DOTALL)
    urls = re.findall(r'(?:src|href)="([^"]*)"', page.text)
    # The empty icon keeps browsers from asking for /favicon.ico.
    assert urls.count("data:,") == 1
    urls.remove("data:,")
    assert len(urls) == len(ASSETS)
    for url in urls:
        assert url.startswith("/graphiql/assets/"), url
        asset = await api.http.get(url)
        assert asset.status_code == 200, url
        assert asset.headers["cache-control"] == "public, max-age=31536000, immutable"
        kind = "text/css" if url.split("?")[0].endswith(".css") else "text/javascript"
        assert asset.headers["content-type"].startswith(kind)
        assert asset.headers["x-content-type-options"] == "nosniff"
        name = url.split("?")[0].rsplit("/", 1)[1]
        assert asset.content == (ROOT / "node_modules" / ASSETS[name][0]).read_bytes()


async def test_an_asset_without_its_current_version_is_not_cached_for_long(api: Api) -> None:
    stale = await api.http.get("/graphiql/assets/graphiql.min.js?v=0000")
    assert stale.status_code == 200
    assert stale.headers["cache-control"] == "no-cache"


async def test_the_csp_allows_this_origin_and_the_pages_own_inline_code_only(api: Api) -> None:
    page = await api.http.get("/graphql", headers={"accept": "text/html"})
    csp = directives(page.headers["content-security-policy"])
    scripts = re.findall(r"<script>(.*?)</script>", page.text, re.DOTALL)
    styles = re.findall(r"<style>(.*?)</style>", page.text, re.DOTALL)
    assert len(scripts) == 1
    assert csp["default-src"] == ["'none'"]
    assert csp["script-src"] == ["'self'", digest(scripts[0])]
    assert csp["style-src"] == ["'self'", *(digest(style) for style in styles)]
    assert csp["connect-src"] == ["'self'"]
    for sources in csp.values():
        assert "'unsafe-inline'" not in sources
        assert "'unsafe-eval'" not in sources
        assert not any("http" in source or "*" in source for source in sources)


@pytest.mark.parametrize(
    "path",
    [
        "/graphiql/assets/../../pyproject.toml",
        "/graphiql/assets/..%2F..%2Fpyproject.toml",
        "/graphiql/assets/%2e%2e%2f%2e%2e%2fpyproject.toml",
        "/graphiql/assets/..",
        "/graphiql/assets/package.json",
        "/graphiql/assets/react/umd/react.production.min.js",
        "/graphiql/assets/react%2Fumd%2Freact.production.min.js",
        "/graphiql/assets/graphiql.min.js.map",
        "/graphiql/assets/graphiql.js",
        "/graphiql/assets/%2Fetc%2Fpasswd",
        "/graphiql/assets/",
        "/graphiql/assets",
    ],
)
async def test_only_allow_listed_files_are_served(path: str) -> None:
    # Sent as they are, past any client-side normalisation of the path.
    status, body = await raw_get(path)
    assert status == 404, body[:200]
    assert b"[tool" not in body
    assert b"root:" not in body


async def raw_get(path: str) -> tuple[int, bytes]:
    app = create_app(Settings(dynamodb_endpoint_url="http://unused.invalid", jwt_secret=SECRET))
    raw, _, query = path.partition("?")
    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "GET",
        "scheme": "http",
        "path": unquote(raw),
        "raw_path": raw.encode(),
        "query_string": query.encode(),
        "root_path": "",
        "headers": [(b"host", b"api.test")],
        "client": ("127.0.0.1", 1),
        "server": ("127.0.0.1", 80),
    }
    sent: list[Message] = []

    async def receive() -> Message:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: Message) -> None:
        sent.append(message)

    await app(scope, receive, send)
    body = b"".join(m.get("body", b"") for m in sent if m["type"] == "http.response.body")
    return sent[0]["status"], body


async def test_no_dev_token_without_one_printed(api: Api) -> None:
    page = await api.http.get("/graphql", headers={"accept": "text/html"})
    config = config_of(page.text)
    assert "headers" not in config
    assert "Bearer" not in page.text


VIEWER = "{ viewer { authorId roles } }"


async def test_development_opens_as_a_shopper_with_a_moderator_a_tab_away(dev: Api) -> None:
    page = await dev.http.get("http://127.0.0.1:8000/graphql", headers={"accept": "text/html"})
    config = config_of(page.text)
    assert config["url"] == "/graphql"
    for part in ("product(", "stats", "comments(first:", "pageInfo", "hasNextPage", "endCursor"):
        assert part in config["query"]
    example = await dev.data(config["query"])
    assert example["product"]["productId"] == "sku-hot"
    # The page opens as a shopper: what shoppers see.
    shopper = json.loads(config["headers"])["Authorization"].removeprefix("Bearer ")
    assert (await dev.data(VIEWER, token=shopper))["viewer"] == {
        "authorId": "dev-shopper",
        "roles": [],
    }
    first, second = config["tabs"]
    assert (first["query"], first["headers"]) == (config["query"], config["headers"])
    # The second tab is a moderator's, on the moderation queue.
    moderator = json.loads(second["headers"])["Authorization"].removeprefix("Bearer ")
    assert (await dev.data(VIEWER, token=moderator))["viewer"]["roles"] == ["moderator"]
    queue = await dev.data(second["query"], token=moderator)
    assert isinstance(queue["moderationQueue"]["totalCount"], int)
    assert page.headers["cache-control"] == "no-store"


@pytest.mark.parametrize("host", ["evil.example", "evil.example:8000", "10.0.0.7"])
async def test_a_page_asked_for_under_another_host_name_gets_no_token(dev: Api, host: str) -> None:
    # A DNS-rebinding page reaches this loopback server under its own name: no token.
    page = await dev.http.get(
        "http://127.0.0.1:8000/graphql", headers={"accept": "text/html", "host": host}
    )
    assert page.status_code == 200
    assert "headers" not in config_of(page.text)
    assert "Bearer" not in page.text
    for name in ("localhost:8000", "[::1]:8000"):
        trusted = await dev.http.get(
            "http://127.0.0.1:8000/graphql", headers={"accept": "text/html", "host": name}
        )
        assert "Bearer" in trusted.text, name


@pytest.mark.parametrize(
    ("peer", "forwarded", "token"),
    [
        (("127.0.0.1", 50000), None, True),
        (("::1", 50000), None, True),
        # Host: localhost from elsewhere (a tunnel, a port forwarded to the world).
        (("10.1.2.3", 50000), None, False),
        # Through a proxy on this machine (trusted by default) for a client elsewhere.
        (("127.0.0.1", 50000), "10.1.2.3", False),
        # A client elsewhere saying it is on loopback is not a trusted proxy.
        (("10.1.2.3", 50000), "127.0.0.1", False),
        # Through the proxy for a browser on this machine.
        (("127.0.0.1", 50000), "127.0.0.1", True),
    ],
)
async def test_the_dev_token_goes_only_to_a_client_on_this_machine(
    table: TableRef, peer: tuple[str, int], forwarded: str | None, token: bool
) -> None:
    settings = Settings(
        dynamodb_endpoint_url="http://unused.invalid",
        dynamodb_table=table.name,
        jwt_secret=SECRET,
        gc_freeze=False,
        dev_token=True,
    )
    app = create_app(settings, client=table.client)
    headers = {"accept": "text/html", "host": "localhost:8000"}
    if forwarded is not None:
        headers["x-forwarded-for"] = forwarded
    async with (
        app.router.lifespan_context(app),
        httpx.AsyncClient(transport=httpx.ASGITransport(app=app, client=peer)) as http,
    ):
        page = await http.get("http://localhost:8000/graphql", headers=headers)
    assert page.status_code == 200
    assert ("Bearer" in page.text) is token
    assert ("headers" in config_of(page.text)) is token


async def test_production_never_puts_a_token_in_the_page(table: TableRef) -> None:
    async with running_api(
        table.client, table.name, production=True, graphiql=True, dev_token=True
    ) as prod:
        page = await prod.http.get("/graphql", headers={"accept": "text/html"})
        assert page.status_code == 200
        assert "headers" not in config_of(page.text)
        assert "Bearer" not in page.text


async def test_assets_are_not_served_when_graphiql_is_off(table: TableRef) -> None:
    async with running_api(table.client, table.name, graphiql=False) as off:
        page = await off.http.get("/graphql", headers={"accept": "text/html"})
        asset = await off.http.get("/graphiql/assets/graphiql.min.js")
        assert page.status_code == 404
        assert asset.status_code == 404


async def test_the_config_cannot_close_its_script_element() -> None:
    page = GraphiQLPage.load().render(
        "/graphql", DevTokens("</script><script>alert(1)", "</script>")
    )
    text = bytes(page.body).decode()
    assert "</script><script>alert(1)" not in text
    assert json.loads(config_of(text)["headers"])["Authorization"].endswith(
        "</script><script>alert(1)"
    )


async def test_missing_packages_say_how_to_install_them(tmp_path: Path) -> None:
    ide = GraphiQLPage.load(tmp_path)
    page = ide.render("/graphql", None)
    assert page.status_code == 503
    assert b"scripts/setup" in bytes(page.body)


def test_the_image_carries_every_asset() -> None:
    dockerfile = (ROOT / "Dockerfile").read_text()
    for relative, _ in ASSETS.values():
        folder, name = relative.rsplit("/", 1)
        assert f"/build/node_modules/{folder}/{name}" in dockerfile, relative
        assert f"./node_modules/{folder}/" in dockerfile, relative
