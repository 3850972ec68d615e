"""Purging the caches in front: what one cache is sent for the table's changes (coalesced,
with ``all``, split under the header bound, repeated once, kept and retried on failure,
everything past the bound or after a loss), and the settings that turn it on. The whole
path through the shipped Varnish is tested live in tests/server/test_fanout.py."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Sequence

import httpx
import pytest
from pydantic import ValidationError

from resolvers.read_set import ALL
from server.purging.purger import Purger, PurgeTuning
from server.purging.service import Purging, purged
from server.purging.targets import MAX_HEADER_BYTES, VarnishTarget, chunks
from server.settings import Settings
from storage.live.stream import Change

URL = "http://varnish.test:6091/"
QUICK = PurgeTuning(repeat_seconds=0, retry_base_seconds=0.001, retry_max_seconds=0.001)


class Cache:
    """A purge listener that records what it is asked, failing while told to."""

    def __init__(self) -> None:
        self.asked: list[dict[str, str]] = []
        self.failing = False

    def __call__(self, request: httpx.Request) -> httpx.Response:
        assert request.method == "PURGE"
        self.asked.append({k: v for k, v in request.headers.items() if k.startswith("xkey-purge")})
        return httpx.Response(503 if self.failing else 200)

    def tags(self, n: int) -> set[str]:
        return set(self.asked[n]["xkey-purge"].split(" "))


@pytest.fixture
def cache() -> Cache:
    return Cache()


@pytest.fixture
async def client(cache: Cache) -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(transport=httpx.MockTransport(cache)) as client:
        yield client


def purger(tuning: PurgeTuning = QUICK) -> Purger:
    return Purger(VarnishTarget(URL), tuning)


async def test_a_burst_of_changes_is_one_purge_with_the_coarse_tag(
    cache: Cache, client: httpx.AsyncClient
) -> None:
    one = purger()
    one.changed({"p:a"})
    one.changed({"p:a", "c:x"})
    one.changed(set())  # a change no answer reads: nothing
    one.changed({"p:b"})
    assert await one.send_due(client)
    assert len(cache.asked) == 1
    assert cache.tags(0) == {"p:a", "c:x", "p:b", ALL}
    assert await one.send_due(client)  # nothing more to send
    assert len(cache.asked) == 1


async def test_a_change_that_touches_nothing_is_never_sent(
    cache: Cache, client: httpx.AsyncClient
) -> None:
    one = purger()
    one.changed(set())
    assert await one.send_due(client)
    assert cache.asked == []


async def test_a_failed_purge_is_kept_and_sent_with_what_came_meanwhile(
    cache: Cache, client: httpx.AsyncClient
) -> None:
    one = purger()
    cache.failing = True
    one.changed({"p:a"})
    assert not await one.send_due(client)
    assert one.pending == 2
    one.changed({"p:b"})
    cache.failing = False
    assert await one.send_due(client)
    assert cache.tags(1) == {"p:a", "p:b", ALL}
    assert one.pending == 0


async def test_each_purge_is_sent_again_once_after_the_repeat_delay(
    cache: Cache, client: httpx.AsyncClient
) -> None:
    one = purger(PurgeTuning(repeat_seconds=0.05))
    one.changed({"p:a"})
    assert await one.send_due(client)
    assert await one.send_due(client)  # not due yet
    assert len(cache.asked) == 1
    assert one.pending == 2  # the repeat waits
    await asyncio.sleep(0.1)
    assert await one.send_due(client)
    assert len(cache.asked) == 2
    assert cache.tags(1) == {"p:a", ALL}
    await asyncio.sleep(0.1)
    assert await one.send_due(client)  # a repeat is not repeated
    assert len(cache.asked) == 2
    assert one.pending == 0


async def test_more_tags_than_the_bound_purge_everything(
    cache: Cache, client: httpx.AsyncClient
) -> None:
    one = purger(PurgeTuning(repeat_seconds=0, max_tags=10))
    for n in range(20):
        one.changed({f"p:{n}"})
    assert one.pending == 10  # everything counts as the bound, never more
    assert await one.send_due(client)
    assert cache.asked == [{"xkey-purge-all": "yes"}]


async def test_a_loss_purges_everything_and_swallows_what_waits(
    cache: Cache, client: httpx.AsyncClient
) -> None:
    one = purger()
    one.changed({"p:a"})
    one.lost()
    one.changed({"p:b"})
    assert await one.send_due(client)
    assert cache.asked == [{"xkey-purge-all": "yes"}]


async def test_many_tags_go_in_requests_under_the_header_bound(
    cache: Cache, client: httpx.AsyncClient
) -> None:
    tags = {f"p:product-{n:05d}" for n in range(2000)}
    one = purger()
    one.changed(tags)
    assert await one.send_due(client)
    assert len(cache.asked) > 1
    assert all(len(a["xkey-purge"]) <= MAX_HEADER_BYTES for a in cache.asked)
    assert set().union(*(cache.tags(n) for n in range(len(cache.asked)))) == tags | {ALL}


def test_chunks_keep_every_tag_once_in_order() -> None:
    tags = [f"t{n}" * (n % 7 + 1) for n in range(500)]
    split = list(chunks(tags, max_bytes=64))
    assert [t for chunk in split for t in chunk] == tags
    assert all(len(" ".join(chunk)) <= 64 for chunk in split)


async def test_a_cache_that_answers_no_is_a_failure(client: httpx.AsyncClient) -> None:
    def refusing(request: httpx.Request) -> httpx.Response:
        return httpx.Response(403)

    async with httpx.AsyncClient(transport=httpx.MockTransport(refusing)) as refused:
        one = purger()
        one.changed({"p:a"})
        assert not await one.send_due(refused)
        assert one.failures == 1


def change(product_id: str) -> Change:
    keys = {"PK": {"S": f"PRODUCT#{product_id}"}, "SK": {"S": "STATS"}}
    return Change("MODIFY", keys, None, None, "1", "shard")


class Told(Purger):
    def __init__(self) -> None:
        super().__init__(VarnishTarget(URL), QUICK)
        self.told: list[object] = []

    def changed(self, tags: Sequence[str] | set[str]) -> None:  # type: ignore[override]
        self.told.append(set(tags))

    def lost(self) -> None:
        self.told.append("everything")


async def test_a_followers_start_purges_everything_then_each_batch_its_tags() -> None:
    told = Told()

    async def follower() -> AsyncIterator[list[Change]]:
        yield []  # the follower has taken its place, at the stream's end
        yield [change("a")]
        yield [change("b"), change("c")]

    seen = [batch async for batch in purged(Purging([told]), follower())]
    assert len(seen) == 3
    assert told.told == ["everything", set(), {"p:a"}, {"p:b", "p:c"}]


def test_purge_urls_turn_on_a_long_s_maxage_for_shared_caches_only(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for name in Settings.model_fields:
        monkeypatch.delenv(name.upper(), raising=False)
    assert "s-maxage" not in Settings().cache_policy.cache_control()
    monkeypatch.setenv("PURGE_URLS", "http://varnish-a:6091/, http://varnish-b:6091/")
    purging = Settings()
    assert purging.purge_urls == ["http://varnish-a:6091/", "http://varnish-b:6091/"]
    assert purging.cache_policy.cache_control() == (
        "public, max-age=30, s-maxage=86400, stale-while-revalidate=60"
    )
    monkeypatch.setenv("CACHE_MAX_AGE", "0")  # nothing kept: no s-maxage either
    assert "s-maxage" not in Settings().cache_policy.cache_control()


@pytest.mark.parametrize(
    ("variables", "said"),
    [
        ({"PURGE_URLS": "varnish:6091"}, "PURGE_URLS must be http"),
        ({"PURGE_URLS": "ftp://varnish/"}, "PURGE_URLS must be http"),
        ({"PURGE_URLS": "http://varnish:6091/", "LIVE_UPDATES": "false"}, "needs LIVE_UPDATES"),
    ],
)
def test_purging_settings_that_cannot_work_are_refused(
    monkeypatch: pytest.MonkeyPatch, variables: dict[str, str], said: str
) -> None:
    for name in Settings.model_fields:
        monkeypatch.delenv(name.upper(), raising=False)
    for name, value in variables.items():
        monkeypatch.setenv(name, value)
    with pytest.raises(ValidationError, match=said):
        Settings()


class Broken:
    """A target with a fault of its own: it raises what no purge failure is."""

    name = "broken"

    async def purge(self, client: httpx.AsyncClient, tags: object) -> None:
        raise RuntimeError("a bug")

    async def purge_everything(self, client: httpx.AsyncClient) -> None:
        raise RuntimeError("a bug")


async def test_a_fault_in_a_target_is_a_failed_purge_kept_not_a_purger_gone(
    client: httpx.AsyncClient,
) -> None:
    one = Purger(Broken(), QUICK)
    one.changed({"p:a"})
    assert not await one.send_due(client)  # raised nothing: the purger lives on
    assert one.failures == 1
    assert one.pending == 2  # p:a and all, kept for the next attempt
