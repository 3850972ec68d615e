"""deploy/nginx.conf in front of a live server: anonymous persisted-query GETs are kept and
served from the cache, revalidated with their ETag and refreshed within the API's max-age;
anything with a token, and every POST, goes to the API and is never kept; subscriptions
pass through over WebSocket, and the API counts them by the client's address, not nginx's.
nginx is Debian's (installed by scripts/setup as root); without it these tests fail, never
skip."""

from __future__ import annotations

import asyncio
import contextlib
import gzip
import json
import re
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from websockets.exceptions import ConnectionClosed

from server.cli import WS_PING_SECONDS
from server.dev.local_engine import LocalEngine
from server.http.persisted import sha256_hex
from server.http.sockets import ADDRESS_FULL
from server.settings import Settings
from testing import nginx
from testing.live_server import LiveServer, live_server
from testing.nginx import CONFIG, LiveNginx, NginxError, live_nginx, render
from testing.subscriber import Closed, Subscriber, subscriber
from tests.api_helpers import SECRET, token

# Short, so that expiry, stale-while-revalidate and revalidation happen within a test.
MAX_AGE = 2
STALE_WHILE_REVALIDATE = 1
# nginx keeps time in whole seconds: an answer kept at 10.9 s with max-age 2 is fresh until
# the clock reads 13, so a kept answer may be served up to a second past its max-age.
CLOCK = 1
# A product page: its counters and the first page of its comments. The plan is shown to
# moderators only here (EXPLAIN=false), so it tells a token's answer from an anonymous one.
PAGE = """query ProductPage($pid: ID!) { product(productId: $pid) {
  stats { total average histogram { rating count } }
  comments(first: 20) { totalCount
    edges { cursor node { id commentId rating language title body author createdAt } }
    pageInfo { hasNextPage endCursor }
    plan { strategy }
  }
} }"""
CREATE = """mutation Create($input: CreateCommentInput!) {
  createComment(input: $input) { created comment { commentId } }
}"""
ACCEPT = "application/graphql-response+json, application/json;q=0.9"
SETTINGS = Settings.model_fields
# Answers served from a kept copy without waiting for the API.
KEPT = ("HIT", "STALE", "UPDATING")
EVENTS = """subscription($pid: ID!) { commentEvents(productId: $pid) { kind commentId } }"""
# WebSocket connections one client address may hold on the API (MAX_WEBSOCKETS_PER_ADDRESS).
PER_ADDRESS = 2


def require_nginx() -> None:
    """Missing nginx is a failure, never a skip, so CI cannot pass without the proxy."""
    if nginx.find_nginx() is None:
        pytest.fail(f"nginx is not installed, so the proxy tests cannot run: {nginx.INSTALL_HINT}")


@pytest.fixture(scope="module")
def server(engine: LocalEngine) -> Iterator[LiveServer]:
    with live_server(
        engine.endpoint_url,
        f"proxy_{uuid.uuid4().hex[:8]}",
        SECRET,
        CREATE_TABLE="true",
        SEED_DEMO="false",
        EXPLAIN="false",
        CACHE_MAX_AGE=str(MAX_AGE),
        CACHE_STALE_WHILE_REVALIDATE=str(STALE_WHILE_REVALIDATE),
        MAX_WEBSOCKETS_PER_ADDRESS=str(PER_ADDRESS),
    ) as running:
        # Registered once (Apollo's link sends the document after a miss, over POST).
        registered = httpx.post(running.graphql_url, json=registration(PAGE))
        assert "errors" not in registered.json(), registered.text
        yield running


@pytest.fixture(scope="module")
def proxy(server: LiveServer) -> Iterator[LiveNginx]:
    require_nginx()
    with live_nginx(server.port) as running:
        yield running


@pytest.fixture
def http(proxy: LiveNginx) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=proxy.base_url, headers={"accept": ACCEPT}) as client:
        yield client


def persisted(document: str) -> dict[str, Any]:
    return {"persistedQuery": {"version": 1, "sha256Hash": sha256_hex(document)}}


def registration(document: str) -> dict[str, Any]:
    """A POST that runs ``document`` with its hash, and so registers it (the variables must
    be valid: a request error registers nothing)."""
    variables = {"pid": "p-none"}
    return {"query": document, "variables": variables, "extensions": persisted(document)}


def by_hash(product_id: str, document: str = PAGE) -> dict[str, str]:
    """A persisted query's GET parameters: the hash and the variables, no document."""
    return {
        "extensions": json.dumps(persisted(document), separators=(",", ":")),
        "variables": json.dumps({"pid": product_id}, separators=(",", ":")),
    }


def write(http: httpx.Client, product_id: str, n: int) -> None:
    """A comment by an author of its own, through the proxy."""
    comment = {
        "productId": product_id,
        "rating": 1 + n % 5,
        "language": "en",
        "title": f"Comment {n}",
        "body": "Long enough that a page of a few is worth compressing. " * 6,
    }
    response = http.post(
        "/graphql",
        json={"query": CREATE, "variables": {"input": comment}},
        headers={"authorization": f"Bearer {token(f'author-{uuid.uuid4().hex[:8]}')}"},
    )
    assert response.json()["data"]["createComment"]["created"] is True, response.text


@pytest.fixture
def product(http: httpx.Client) -> str:
    """A product of its own with three comments, so that its page is a cache entry of its own
    and over GZIP_MIN_BYTES."""
    product_id = f"p-{uuid.uuid4().hex[:12]}"
    for n in range(3):
        write(http, product_id, n)
    return product_id


def status(response: httpx.Response) -> str | None:
    found: str | None = response.headers.get("x-cache-status")
    return found


def total(response: httpx.Response) -> int:
    count: int = response.json()["data"]["product"]["comments"]["totalCount"]
    return count


def plan(response: httpx.Response) -> object:
    return response.json()["data"]["product"]["comments"]["plan"]


# The file and its rendering, without nginx.


def test_the_committed_file_is_the_production_config() -> None:
    text = CONFIG.read_text()
    for line in (
        "user www-data;",
        "pid /run/nginx.pid;",
        "listen 80;",
        "server 127.0.0.1:8000;",
        "proxy_cache_path /var/cache/nginx/comments ",
        "access_log /var/log/nginx/",
    ):
        assert line in text


def test_rendering_changes_addresses_and_paths_only(tmp_path: Path) -> None:
    text = CONFIG.read_text()
    rendered = render(text, port=1234, upstream="127.0.0.1:5678", root=tmp_path, workers=1)
    assert "listen 127.0.0.1:1234;" in rendered
    assert "server 127.0.0.1:5678;" in rendered
    assert f"proxy_cache_path {tmp_path}/cache " in rendered
    assert f"proxy_temp_path {tmp_path}/proxy_temp;" in rendered
    assert not re.search(r"^\s*(user|pid)\s", rendered, re.MULTILINE)
    assert "/var/" not in rendered
    assert "/run/" not in rendered

    def rules(config: str) -> list[str]:
        # Everything that decides what is kept and served: unchanged by rendering.
        names = ("proxy_", "add_header", "map ", "gzip", "client_", "large_client", "keepalive")
        lines = [line.strip() for line in config.splitlines()]
        return [line for line in lines if line.startswith(names) and "_path " not in line]

    assert rules(rendered) == rules(text)
    assert len(rules(text)) > 20


def test_rendering_refuses_a_file_it_does_not_recognise(tmp_path: Path) -> None:
    reshaped = CONFIG.read_text().replace("listen 80;", "listen 80;\n        listen [::]:80;")
    with pytest.raises(NginxError, match="expected one listen line, found 2"):
        render(reshaped, port=1, upstream="127.0.0.1:2", root=tmp_path)


def _directive(name: str) -> list[str]:
    found = re.findall(rf"^\s*{name}\s+([^;]+);", CONFIG.read_text(), re.MULTILINE)
    assert len(found) == 1, found
    return str(found[0]).split()


def test_the_limits_are_the_servers() -> None:
    assert _directive("client_max_body_size") == ["1m"]
    assert SETTINGS["max_body_bytes"].default == 1024 * 1024
    count, size = _directive("large_client_header_buffers")
    assert int(count) * int(size.removesuffix("k")) * 1024 == SETTINGS["max_header_bytes"].default
    assert _directive("client_header_timeout") == [f"{SETTINGS['header_timeout'].default:g}s"]
    assert _directive("client_body_timeout") == [f"{SETTINGS['body_timeout'].default:g}s"]
    # Upstream connections are dropped before the API would close them under a request.
    (idle,) = _directive("keepalive_timeout")
    assert int(idle.removesuffix("s")) < SETTINGS["keep_alive_timeout"].default


def _socket_location() -> dict[str, list[str]]:
    """The directives of the location WebSocket upgrades go to."""
    text = CONFIG.read_text()
    found = re.search(r"location = /\.websocket/graphql \{(.*?)\n        \}", text, re.DOTALL)
    assert found, "no WebSocket location"
    pairs = re.findall(r"^\s*(\w+)\s+([^;]*);", found.group(1), re.MULTILINE)
    return {name: value.split() for name, value in pairs}


def test_sockets_are_passed_on_and_kept_open_longer_than_the_api_would() -> None:
    socket = _socket_location()
    assert socket["proxy_http_version"] == ["1.1"]
    text = CONFIG.read_text()
    location = text[text.index("location = /.websocket/graphql") :]
    for header in (
        "Upgrade $http_upgrade",
        'Connection "upgrade"',
        "X-Forwarded-For $proxy_add_x_forwarded_for",
    ):
        assert f"proxy_set_header {header};" in location
    assert "rewrite ^/graphql$ /.websocket/graphql last;" in text
    assert socket["proxy_buffering"] == ["off"]
    assert "proxy_cache" not in socket
    # nginx cuts a socket quiet for proxy_read_timeout: the API's pings, and its own idle
    # close of a socket without subscriptions, come first.
    (read,) = socket["proxy_read_timeout"]
    seconds = int(read.removesuffix("s"))
    assert seconds > WS_PING_SECONDS
    assert seconds > SETTINGS["subscription_idle_seconds"].default
    # The cap per client address is the API's default one.
    assert socket["limit_conn"] == [
        "websockets",
        str(SETTINGS["max_websockets_per_address"].default),
    ]


def test_nginx_is_installed() -> None:
    require_nginx()


def test_a_missing_nginx_fails_the_suite_with_a_clear_message(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(nginx, "find_nginx", lambda: None)
    with pytest.raises(pytest.fail.Exception, match="nginx is not installed"):
        require_nginx()


# A live server behind a live nginx.


def test_an_anonymous_persisted_query_is_a_miss_then_a_hit(
    http: httpx.Client, product: str
) -> None:
    # A document of its own, so that its hash is unknown until registered here.
    document = PAGE + f"\n# {uuid.uuid4().hex}"
    params = by_hash(product, document)
    unknown = http.get("/graphql", params=params)
    assert unknown.json()["errors"][0]["extensions"]["code"] == "PERSISTED_QUERY_NOT_FOUND"
    assert unknown.headers["cache-control"] == "no-store"
    assert "errors" not in http.post("/graphql", json=registration(document)).json()

    first = http.get("/graphql", params=params)
    second = http.get("/graphql", params=params)
    # The miss was not kept: the registered document runs at once.
    assert (first.status_code, status(first)) == (200, "MISS")
    assert total(first) == 3
    assert (second.status_code, status(second)) == (200, "HIT")
    assert second.content == first.content
    assert second.headers["etag"] == first.headers["etag"]
    assert second.headers["cache-control"] == first.headers["cache-control"]
    assert second.headers["cache-control"].startswith(f"public, max-age={MAX_AGE}")
    # Every answer has an id of its own: the API's for the miss, nginx's for the hit.
    ids = [first.headers["x-request-id"], second.headers["x-request-id"]]
    assert all(re.fullmatch(r"[0-9a-f]{32}", i) for i in ids)
    assert ids[0] != ids[1]


def test_a_token_is_never_answered_from_the_cache_nor_kept(
    http: httpx.Client, product: str
) -> None:
    params = by_hash(product)
    moderator = {"authorization": f"Bearer {token('mod', moderator=True)}"}
    author = {"authorization": f"Bearer {token('someone')}"}

    kept = http.get("/graphql", params=params, headers=moderator)
    assert status(kept) == "BYPASS"
    assert kept.headers["cache-control"] == "no-store"
    assert plan(kept) is not None  # what only a moderator sees
    anonymous = http.get("/graphql", params=params)
    assert status(anonymous) == "MISS"  # the moderator's answer was not kept
    assert plan(anonymous) is None
    assert status(http.get("/graphql", params=params)) == "HIT"

    for headers in (moderator, author):
        answer = http.get("/graphql", params=params, headers=headers)
        assert status(answer) == "BYPASS"
        assert answer.headers["cache-control"] == "no-store"
    assert plan(http.get("/graphql", params=params, headers=moderator)) is not None
    again = http.get("/graphql", params=params)
    # The anonymous copy (possibly stale by now, if the token's requests were slow).
    assert status(again) in KEPT
    assert plan(again) is None


def test_if_none_match_is_a_304_through_the_proxy(http: httpx.Client, product: str) -> None:
    params = by_hash(product)
    first = http.get("/graphql", params=params)
    etag = first.headers["etag"]
    assert etag.startswith('"')  # strong: nginx passes it through unchanged

    matched = http.get("/graphql", params=params, headers={"if-none-match": etag})
    assert matched.status_code == 304
    assert matched.content == b""
    assert matched.headers["etag"] == etag
    assert status(matched) == "HIT"
    weak = http.get("/graphql", params=params, headers={"if-none-match": f"W/{etag}"})
    assert weak.status_code == 304
    other = http.get("/graphql", params=params, headers={"if-none-match": '"another"'})
    assert other.status_code == 200
    assert other.content == first.content


def test_an_expired_answer_is_revalidated_with_its_etag(http: httpx.Client, product: str) -> None:
    params = by_hash(product)
    first = http.get("/graphql", params=params)
    assert status(first) == "MISS"
    # Past max-age and the stale-while-revalidate window (whole seconds): nginx asks the API
    # with If-None-Match, and its 304 renews the kept answer.
    time.sleep(MAX_AGE + STALE_WHILE_REVALIDATE + CLOCK + 0.1)
    renewed = http.get("/graphql", params=params)
    assert status(renewed) == "REVALIDATED"
    assert renewed.content == first.content
    assert renewed.headers["etag"] == first.headers["etag"]
    assert status(http.get("/graphql", params=params)) == "HIT"


def test_post_is_never_cached(http: httpx.Client, product: str) -> None:
    query = {"query": PAGE, "variables": {"pid": product}}
    answers = [http.post("/graphql", json=query) for _ in range(2)]
    for answer in answers:
        assert answer.status_code == 200
        assert status(answer) is None  # not even looked up
        assert answer.headers["cache-control"] == "no-store"
    # Both ran at the API: each has the API's request id in its body.
    ids = [a.json()["extensions"]["requestId"] for a in answers]
    assert ids[0] != ids[1]
    assert [a.headers["x-request-id"] for a in answers] == ids

    write(http, product, 3)
    write(http, product, 4)
    assert total(http.post("/graphql", json=query)) == 5


def test_each_content_coding_is_a_variant_of_its_own(http: httpx.Client, product: str) -> None:
    params = by_hash(product)
    compressed = [
        http.get("/graphql", params=params, headers={"accept-encoding": "gzip"}) for _ in range(2)
    ]
    plain = [
        http.get("/graphql", params=params, headers={"accept-encoding": "identity"})
        for _ in range(2)
    ]
    assert [status(r) for r in compressed + plain] == ["MISS", "HIT", "MISS", "HIT"]
    for response in compressed:
        assert response.headers["content-encoding"] == "gzip"
        assert "accept-encoding" in response.headers["vary"].lower()
    for response in plain:
        assert "content-encoding" not in response.headers
    assert compressed[1].headers["etag"] != plain[1].headers["etag"]
    # The kept bytes are the API's gzip stream, the same JSON as the plain variant.
    with http.stream("GET", "/graphql", params=params, headers={"accept-encoding": "gzip"}) as raw:
        assert status(raw) in KEPT
        body = b"".join(raw.iter_raw())
    assert json.loads(gzip.decompress(body)) == plain[1].json()


def test_a_new_comment_shows_within_max_age(http: httpx.Client, product: str) -> None:
    params = by_hash(product)
    assert status(http.get("/graphql", params=params)) == "MISS"
    write(http, product, 3)
    written = time.monotonic()
    # The kept page, without the new comment, until it expires.
    stale = http.get("/graphql", params=params)
    assert status(stale) in KEPT
    assert total(stale) == 3
    # Expiry (whole seconds), then one request to the API to refresh it, and the next poll.
    deadline = written + MAX_AGE + CLOCK + 2
    seen = []
    while time.monotonic() < deadline:
        response = http.get("/graphql", params=params)
        seen.append(status(response))
        if total(response) == 4:
            break
        time.sleep(0.05)
    else:
        pytest.fail(f"the new comment did not show within max-age (statuses: {seen})")


def test_a_body_over_the_apis_limit_is_refused_as_the_api_would(http: httpx.Client) -> None:
    limit = SETTINGS["max_body_bytes"].default
    body = b'{"query": "' + b" " * limit + b'{ __typename }"}'
    refused = http.post("/graphql", content=body, headers={"content-type": "application/json"})
    assert refused.status_code == 413
    assert refused.json()["errors"][0]["extensions"]["code"] == "BAD_USER_INPUT"
    assert str(limit) in refused.json()["errors"][0]["message"]


# Subscriptions through the proxy.


async def _event_after_writes(client: Subscriber, proxy: LiveNginx, product_id: str) -> str:
    """Write comments over HTTP through the proxy until the subscription receives one
    (it is registered within moments of its message); the id of the comment received."""
    with httpx.Client(base_url=proxy.base_url, headers={"accept": ACCEPT}) as http:
        for n in range(5):
            # The synchronous writer in a thread, so that the loop keeps reading the socket.
            await asyncio.to_thread(write, http, product_id, n)
            try:
                message = await client.next("live", seconds=5)
            except TimeoutError:
                continue
            assert message["type"] == "next", message
            event = message["payload"]["data"]["commentEvents"]
            assert event["kind"] == "PUBLISHED"
            found: str = event["commentId"]
            return found
    raise AssertionError("no event came through the proxy")


async def test_a_subscription_through_the_proxy_receives_a_comment_written_over_http(
    proxy: LiveNginx,
) -> None:
    product_id = f"p-{uuid.uuid4().hex[:12]}"
    async with subscriber(proxy.graphql_url) as client:
        assert client.acknowledged == {"type": "connection_ack"}
        await client.subscribe("live", EVENTS, {"pid": product_id})
        assert await _event_after_writes(client, proxy, product_id)
        assert client.binary_frames == 0
    # The upgrade went through nginx (101), past its cache.
    upgrades = [line for line in proxy.access_log.read_text().splitlines() if '" 101 ' in line]
    assert upgrades
    assert all("cache=-" in line for line in upgrades)


async def test_the_api_counts_sockets_by_the_client_behind_the_proxy(proxy: LiveNginx) -> None:
    # 127.0.0.2 and 127.0.0.3 are two clients to nginx on 127.0.0.1; the API sees nginx's
    # connections only (from 127.0.0.1, a trusted proxy) and the client in X-Forwarded-For.
    held: list[Subscriber] = []
    async with contextlib.AsyncExitStack() as stack:
        for _ in range(PER_ADDRESS):
            held.append(
                await stack.enter_async_context(subscriber(proxy.graphql_url, source="127.0.0.2"))
            )
        async with subscriber(proxy.graphql_url, source="127.0.0.2", init=False) as over:
            closed = await over.closed(seconds=10)
        assert (closed.code, closed.reason) == (1013, ADDRESS_FULL)
        # Another client is not held back by the first one's sockets.
        async with subscriber(proxy.graphql_url, source="127.0.0.3") as other:
            assert other.acknowledged == {"type": "connection_ack"}
        # A header the client sends itself is not believed: nginx appends the address it
        # sees, and the API reads the list from the right.
        spoofed = {"x-forwarded-for": "203.0.113.9"}
        async with subscriber(
            proxy.graphql_url, source="127.0.0.2", init=False, headers=spoofed
        ) as disguised:
            closed = await disguised.closed(seconds=10)
        assert closed.code == 1013
    # Places are given back when the sockets close.
    for _ in range(20):
        try:
            async with subscriber(proxy.graphql_url, source="127.0.0.2") as again:
                assert again.acknowledged == {"type": "connection_ack"}
                return
        except (RuntimeError, Closed, ConnectionClosed):
            await asyncio.sleep(0.1)
    raise AssertionError("the places were not given back")
