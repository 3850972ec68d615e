"""Purging CDNs through their APIs: what Fastly and Cloudflare are sent (method, path,
headers, body, split at each API's documented limit), what counts as a failure (a refusal,
the rate limit with its Retry-After, a fault, Cloudflare's ``success: false``), everything,
the settings that name them and their tokens, and that the token shows nowhere but in the
header it is sent in. No network: the APIs are httpx.MockTransport."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime
from pathlib import Path

import httpx
import pytest
from pydantic import ValidationError

from resolvers.read_set import ALL
from server.purging.cdn import (
    CLOUDFLARE_MAX_TAG_CHARS,
    CLOUDFLARE_MAX_TAGS,
    FASTLY_MAX_KEYS,
    CloudflareTarget,
    FastlyTarget,
    cdn_entry,
    retry_after,
)
from server.purging.purger import Purger, PurgeTuning
from server.purging.service import target
from server.purging.targets import PurgeFailed, VarnishTarget
from server.settings import Settings

TOKEN = "tok-3f9a0c1d7e5b4a2f8c6d0e1f2a3b4c5d"
SERVICE = "SU1Z0isxPaozGVKXdv0eY"
ZONE = "023e105f4ecef8ad9ca31a8372d0c353"
# Retries at once, whatever the API's Retry-After asks (the bound is tested on its own).
QUICK = PurgeTuning(
    repeat_seconds=0,
    retry_base_seconds=0.001,
    retry_max_seconds=0.001,
    retry_after_max_seconds=0.001,
)


class Api:
    """A CDN's API that records each request and answers as it is told."""

    def __init__(self) -> None:
        self.asked: list[httpx.Request] = []
        self.answer: Callable[[httpx.Request], httpx.Response] = self.ok

    @staticmethod
    def ok(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, json={"success": True, "errors": [], "result": {"id": "x"}})

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.asked.append(request)
        return self.answer(request)

    def body(self, n: int) -> object:
        return json.loads(self.asked[n].content)


@pytest.fixture
def api() -> Api:
    return Api()


@pytest.fixture
async def client(api: Api) -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(transport=httpx.MockTransport(api)) as client:
        yield client


def fastly(*, soft: bool = False) -> FastlyTarget:
    return FastlyTarget(SERVICE, TOKEN, soft=soft)


def cloudflare() -> CloudflareTarget:
    return CloudflareTarget(ZONE, TOKEN)


# --- Fastly --------------------------------------------------------------------------------


async def test_fastly_purges_the_keys_of_a_change_in_one_post(
    api: Api, client: httpx.AsyncClient
) -> None:
    one = Purger(fastly(), QUICK)
    one.changed({"p:a", "c:x"})
    assert await one.send_due(client)
    [request] = api.asked
    assert request.method == "POST"
    assert str(request.url) == f"https://api.fastly.com/service/{SERVICE}/purge"
    assert request.headers["surrogate-key"] == f"{ALL} c:x p:a"
    assert request.headers["fastly-key"] == TOKEN
    assert "fastly-soft-purge" not in request.headers
    assert request.content == b""


async def test_fastly_takes_at_most_its_limit_of_keys_a_request(
    api: Api, client: httpx.AsyncClient
) -> None:
    assert FASTLY_MAX_KEYS == 256  # Fastly's documented limit of a bulk purge
    tags = {f"p:product-{n:05d}" for n in range(522)}
    await fastly().purge(client, tags)
    sent = [request.headers["surrogate-key"].split(" ") for request in api.asked]
    assert [len(keys) for keys in sent] == [256, 256, 10]
    assert {key for keys in sent for key in keys} == tags


async def test_fastly_soft_purges_by_key_but_never_everything(
    api: Api, client: httpx.AsyncClient
) -> None:
    soft = fastly(soft=True)
    await soft.purge(client, {"p:a"})
    await soft.purge_everything(client)
    by_key, everything = api.asked
    assert by_key.headers["fastly-soft-purge"] == "1"
    assert everything.method == "POST"
    assert str(everything.url) == f"https://api.fastly.com/service/{SERVICE}/purge_all"
    assert everything.headers["fastly-key"] == TOKEN
    assert "fastly-soft-purge" not in everything.headers
    assert "surrogate-key" not in everything.headers


async def test_a_loss_purges_all_of_the_fastly_service(api: Api, client: httpx.AsyncClient) -> None:
    one = Purger(fastly(), QUICK)
    one.changed({"p:a"})
    one.lost()
    assert await one.send_due(client)
    assert [request.url.path for request in api.asked] == [f"/service/{SERVICE}/purge_all"]


# --- Cloudflare ----------------------------------------------------------------------------


async def test_cloudflare_purges_the_tags_of_a_change_in_one_post(
    api: Api, client: httpx.AsyncClient
) -> None:
    one = Purger(cloudflare(), QUICK)
    one.changed({"p:a", "g:b"})
    assert await one.send_due(client)
    [request] = api.asked
    assert request.method == "POST"
    assert str(request.url) == f"https://api.cloudflare.com/client/v4/zones/{ZONE}/purge_cache"
    assert request.headers["authorization"] == f"Bearer {TOKEN}"
    assert request.headers["content-type"] == "application/json"
    assert api.body(0) == {"tags": [ALL, "g:b", "p:a"]}


async def test_cloudflare_takes_at_most_its_limit_of_tags_a_request(
    api: Api, client: httpx.AsyncClient
) -> None:
    assert CLOUDFLARE_MAX_TAGS == 100  # Cloudflare's documented operations a request
    tags = {f"p:product-{n:05d}" for n in range(207)}
    await cloudflare().purge(client, tags)
    sent = [api.body(n) for n in range(len(api.asked))]
    assert [len(body["tags"]) for body in sent] == [100, 100, 7]  # type: ignore[index]
    assert {tag for body in sent for tag in body["tags"]} == tags  # type: ignore[index]


async def test_cloudflare_purges_everything_with_its_flag(
    api: Api, client: httpx.AsyncClient
) -> None:
    one = Purger(cloudflare(), PurgeTuning(repeat_seconds=0, max_tags=5))
    for n in range(10):
        one.changed({f"p:{n}"})
    assert await one.send_due(client)
    assert [api.body(n) for n in range(len(api.asked))] == [{"purge_everything": True}]


async def test_a_tag_longer_than_cloudflare_purges_is_everything(
    api: Api, client: httpx.AsyncClient
) -> None:
    # Refused by tag, it would be refused at every retry and hold the others back.
    await cloudflare().purge(client, {"p:a", "p:" + "x" * CLOUDFLARE_MAX_TAG_CHARS})
    assert [api.body(n) for n in range(len(api.asked))] == [{"purge_everything": True}]


# --- failures ------------------------------------------------------------------------------


def answering(status: int, body: object = None, **headers: str) -> Callable[..., httpx.Response]:
    headers = {name.replace("_", "-"): value for name, value in headers.items()}

    def answer(request: httpx.Request) -> httpx.Response:
        if body is None:
            return httpx.Response(status, headers=headers)
        return httpx.Response(status, json=body, headers=headers)

    return answer


REFUSED = {"success": False, "errors": [{"code": 10000, "message": "Authentication error"}]}


@pytest.mark.parametrize(
    ("kind", "answer", "said"),
    [
        ("fastly", answering(401, {"msg": "Provided credentials are missing or invalid"}), "401"),
        ("fastly", answering(429, retry_after="7"), "429"),
        ("fastly", answering(503), "503"),
        ("cloudflare", answering(429, REFUSED, retry_after="12"), "429"),
        ("cloudflare", answering(502), "502"),
        ("cloudflare", answering(200, REFUSED), "10000 Authentication error"),
        ("cloudflare", answering(200, {"result": None}), "without success"),
        ("cloudflare", lambda request: httpx.Response(200, text="<html>"), "without success"),
    ],
    ids=[
        "fastly-401",
        "fastly-429",
        "fastly-503",
        "cloudflare-429",
        "cloudflare-502",
        "cloudflare-success-false",
        "cloudflare-no-success",
        "cloudflare-not-json",
    ],
)
async def test_an_api_that_does_not_confirm_is_a_failure_kept_for_the_retry(
    api: Api,
    client: httpx.AsyncClient,
    kind: str,
    answer: Callable[[httpx.Request], httpx.Response],
    said: str,
) -> None:
    one = Purger(fastly() if kind == "fastly" else cloudflare(), QUICK)
    api.answer = answer
    one.changed({"p:a"})
    with pytest.raises(PurgeFailed, match=said) as failed:
        await one.target.purge(client, {"p:a"})
    assert TOKEN not in str(failed.value)
    assert not await one.send_due(client)
    assert one.failures == 1
    assert one.pending == 2  # kept: p:a and all
    api.answer = api.ok
    assert await one.send_due(client)
    assert one.pending == 0


@pytest.mark.parametrize("kind", ["fastly", "cloudflare"])
async def test_an_api_out_of_reach_is_a_failure_that_names_no_token(kind: str) -> None:
    def down(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError(f"cannot connect with {request.headers}")

    cdn = fastly() if kind == "fastly" else cloudflare()
    async with httpx.AsyncClient(transport=httpx.MockTransport(down)) as unreachable:
        with pytest.raises(PurgeFailed, match="ConnectError") as failed:
            await cdn.purge_everything(unreachable)
    assert TOKEN not in str(failed.value)


async def test_cloudflare_quoting_the_token_is_blotted_out(
    api: Api, client: httpx.AsyncClient
) -> None:
    api.answer = answering(
        400, {"success": False, "errors": [{"code": 9106, "message": f"bad {TOKEN}"}]}
    )
    with pytest.raises(PurgeFailed, match=r"9106 bad \[token\]") as failed:
        await cloudflare().purge(client, {"p:a"})
    assert TOKEN not in str(failed.value)


async def test_a_rate_limited_purge_waits_at_least_the_retry_after(
    api: Api, client: httpx.AsyncClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    one = Purger(cloudflare(), QUICK)
    asked: list[float | None] = []

    def recorded(wanted: float | None = None) -> float:
        asked.append(wanted)
        return 0.0

    monkeypatch.setattr(one, "_backoff", recorded)
    api.answer = answering(429, REFUSED, retry_after="12")
    one.changed({"p:a"})
    assert not await one.send_due(client)
    api.answer = answering(503)
    assert not await one.send_due(client)
    assert asked == [12.0, None]


def test_the_wait_a_retry_after_asks_is_the_least_one_and_bounded() -> None:
    tuning = PurgeTuning(retry_base_seconds=0.001, retry_max_seconds=0.001)
    one = Purger(cloudflare(), tuning)
    one.failures = 1
    assert one._backoff(12.0) == 12.0  # the jitter is far below
    assert one._backoff(10**6) == tuning.retry_after_max_seconds == 60
    assert one._backoff(None) <= tuning.retry_max_seconds


def test_retry_after_is_read_as_seconds_or_a_date() -> None:
    def said(value: str) -> float | None:
        return retry_after(httpx.Response(429, headers={"retry-after": value}))

    assert said("12") == 12.0
    later = format_datetime(datetime.now(UTC) + timedelta(seconds=90), usegmt=True)
    assert 60 < (said(later) or 0) <= 90
    assert said("soon") is None
    assert retry_after(httpx.Response(429)) is None


# --- names and settings --------------------------------------------------------------------


def test_a_cdn_target_names_its_service_or_zone_and_never_the_token() -> None:
    for cdn in (fastly(soft=True), cloudflare()):
        assert TOKEN not in cdn.name
        assert TOKEN not in repr(cdn)
    assert fastly().name == f"fastly://{SERVICE}"
    assert cloudflare().name == f"cloudflare://{ZONE}"


@pytest.fixture
def environment(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    """No setting comes from the environment the tests run in."""
    for name in Settings.model_fields:
        monkeypatch.delenv(name.upper(), raising=False)
    return monkeypatch


def test_each_entry_of_purge_urls_is_its_cache(environment: pytest.MonkeyPatch) -> None:
    environment.setenv(
        "PURGE_URLS", f"http://varnish:6091/, fastly://{SERVICE}, cloudflare://{ZONE}/"
    )
    environment.setenv("FASTLY_API_TOKEN", TOKEN)
    environment.setenv("CLOUDFLARE_API_TOKEN", TOKEN + "cf")
    environment.setenv("FASTLY_SOFT_PURGE", "true")
    environment.setenv("CLOUDFLARE_API_URL", "http://127.0.0.1:8787")
    settings = Settings()
    varnish, fast, flare = (target(url, settings) for url in settings.purge_urls)
    assert varnish == VarnishTarget("http://varnish:6091/")
    assert fast == FastlyTarget(SERVICE, TOKEN, "https://api.fastly.com", soft=True)
    assert flare == CloudflareTarget(ZONE, TOKEN + "cf", "http://127.0.0.1:8787")
    assert "s-maxage" in settings.cache_policy.cache_control()
    assert TOKEN not in repr(settings)


def test_a_token_may_be_kept_in_a_file(environment: pytest.MonkeyPatch, tmp_path: Path) -> None:
    path = tmp_path / "fastly-token"
    path.write_text(f"{TOKEN}\n")
    environment.setenv("PURGE_URLS", f"fastly://{SERVICE}")
    environment.setenv("FASTLY_API_TOKEN_FILE", str(path))
    settings = Settings()
    assert settings.fastly_api_token == TOKEN
    assert TOKEN not in repr(settings)


@pytest.mark.parametrize(
    ("variables", "said"),
    [
        ({"PURGE_URLS": f"fastly://{SERVICE}"}, "needs FASTLY_API_TOKEN"),
        ({"PURGE_URLS": f"cloudflare://{ZONE}"}, "needs CLOUDFLARE_API_TOKEN"),
        (
            {"PURGE_URLS": f"cloudflare://{ZONE}", "FASTLY_API_TOKEN": TOKEN},
            "needs CLOUDFLARE_API_TOKEN",
        ),
        ({"PURGE_URLS": "fastly://", "FASTLY_API_TOKEN": TOKEN}, "takes the service id alone"),
        (
            {"PURGE_URLS": f"fastly://{SERVICE}/purge", "FASTLY_API_TOKEN": TOKEN},
            "takes the service id alone",
        ),
        (
            {"PURGE_URLS": f"cloudflare://user@{ZONE}", "CLOUDFLARE_API_TOKEN": TOKEN},
            "takes the zone id alone",
        ),
        ({"PURGE_URLS": f"akamai://{ZONE}"}, "PURGE_URLS must be http"),
        (
            {"PURGE_URLS": f"fastly://{SERVICE}", "FASTLY_API_TOKEN": "two words"},
            "FASTLY_API_TOKEN must be printable ASCII",
        ),
        ({"FASTLY_API_URL": "http://api.fastly.com"}, "FASTLY_API_URL must be an https"),
        (
            {"CLOUDFLARE_API_URL": f"https://{TOKEN}@api.cloudflare.com"},
            "CLOUDFLARE_API_URL must not carry a user",
        ),
    ],
    ids=[
        "fastly-without-token",
        "cloudflare-without-token",
        "cloudflare-with-fastlys-token",
        "fastly-without-id",
        "fastly-with-path",
        "cloudflare-with-user",
        "unknown-scheme",
        "token-with-space",
        "plain-http-api",
        "api-with-user",
    ],
)
def test_purge_settings_that_cannot_work_are_refused_at_start(
    environment: pytest.MonkeyPatch, variables: dict[str, str], said: str
) -> None:
    for name, value in variables.items():
        environment.setenv(name, value)
    with pytest.raises(ValidationError, match=said) as refused:
        Settings()
    assert TOKEN not in str(refused.value)


@pytest.mark.parametrize(
    ("content", "said"),
    [(None, "does not exist"), (b"\n", "is empty"), (b"\xff\xfe", "not UTF-8 text")],
    ids=["missing", "empty", "not-text"],
)
def test_a_token_file_that_cannot_serve_is_refused_naming_it(
    environment: pytest.MonkeyPatch, tmp_path: Path, content: bytes | None, said: str
) -> None:
    path = tmp_path / "cloudflare-token"
    if content is not None:
        path.write_bytes(content)
    environment.setenv("PURGE_URLS", f"cloudflare://{ZONE}")
    environment.setenv("CLOUDFLARE_API_TOKEN_FILE", str(path))
    with pytest.raises(ValidationError, match=f"CLOUDFLARE_API_TOKEN_FILE: .*{said}"):
        Settings()
    assert not path.exists() or content is not None  # never made


def test_a_token_and_its_file_at_once_are_refused(
    environment: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    path = tmp_path / "fastly-token"
    path.write_text(TOKEN)
    environment.setenv("FASTLY_API_TOKEN", TOKEN)
    environment.setenv("FASTLY_API_TOKEN_FILE", str(path))
    with pytest.raises(ValidationError, match="FASTLY_API_TOKEN and FASTLY_API_TOKEN_FILE"):
        Settings()


def test_cdn_entries_are_told_from_proxies() -> None:
    assert cdn_entry("http://varnish:6091/") is None
    assert cdn_entry(f"FASTLY://{SERVICE}") == ("fastly", SERVICE)
    assert cdn_entry(f"cloudflare://{ZONE}/") == ("cloudflare", ZONE)
    with pytest.raises(ValueError, match="zone id"):
        cdn_entry("cloudflare://zone?x=1")
