"""The process's own map of public answers: a repeated anonymous GET is answered without
executing (no storage call); a change of something it read, fed as the stream gives it,
drops it; an answer whose execution overlapped such a change is not kept; a lost stream
empties the map; its bytes stay bounded; concurrent misses of one key execute once."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest

from server.http.answer_changes import tags_of, tags_of_batch, telling
from server.http.answers import Answer, AnswerCache, AnswerKey
from server.http.app import create_app
from server.settings import Settings
from storage.base.types import Response
from storage.engine.table import TableRef
from storage.engine.wrapping import ClientWrapper
from storage.live.claimed import lease_key
from storage.live.stream import Change
from storage.model.comments import NewComment
from storage.model.items import comment_key
from tests.api_helpers import SECRET, token
from tests.helpers import create_many

STATS = "query($pid: ID!) { product(productId: $pid) { stats { total } } }"
WAIT = 10.0  # seconds any await in these tests may take at most


class Reads(ClientWrapper):
    """Counts the storage calls made, and holds them at a gate when one is set."""

    def __init__(self, inner: Any) -> None:
        super().__init__(inner)
        self.calls = 0
        self.gate: asyncio.Event | None = None
        self.waiting = asyncio.Event()

    async def _call(self, operation: str, kwargs: dict[str, Any]) -> Response:
        self.calls += 1
        if self.gate is not None:
            self.waiting.set()
            await asyncio.wait_for(self.gate.wait(), WAIT)
        return await super()._call(operation, kwargs)


class Served:
    def __init__(self, http: httpx.AsyncClient, answers: AnswerCache, reads: Reads) -> None:
        self.http, self.answers, self.reads = http, answers, reads

    async def get(self, query: str, variables: dict[str, Any], **headers: str) -> httpx.Response:
        params = {"query": query, "variables": json.dumps(variables)}
        response = await asyncio.wait_for(
            self.http.get("/graphql", params=params, headers=headers), WAIT
        )
        assert response.status_code == 200, response.text
        return response


async def served(table: TableRef, **overrides: Any) -> AsyncIterator[Served]:
    reads = Reads(table.client)
    settings = Settings(
        dynamodb_endpoint_url="http://unused.invalid",
        dynamodb_table=table.name,
        gc_freeze=False,
        jwt_secret=SECRET,
        author_id_key=SECRET,
        metrics="off",
        **overrides,
    )
    app = create_app(settings, client=reads)
    async with (
        app.router.lifespan_context(app),
        httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://t") as http,
    ):
        answers: AnswerCache = app.state.answers
        # Tests supply storage, so no stream is followed here: the tests stand in for it.
        answers.following()
        yield Served(http, answers, reads)


@pytest.fixture
async def api(table: TableRef) -> AsyncIterator[Served]:
    async for running in served(table):
        yield running


async def test_a_repeated_get_executes_once(api: Served, product_id: str) -> None:
    first = await api.get(STATS, {"pid": product_id})
    calls = api.reads.calls
    assert calls > 0
    for _ in range(5):
        again = await api.get(STATS, {"pid": product_id})
        assert again.content == first.content
        assert again.headers["etag"] == first.headers["etag"]
        assert again.headers["surrogate-key"] == f"p:{product_id}"
        assert again.headers["cache-control"] == first.headers["cache-control"]
    assert api.reads.calls == calls  # five answers, no storage call
    assert api.answers.hits == 5
    # The same variables written otherwise are the same key; another product is not.
    await api.get(STATS.replace("query(", "query ("), {"pid": product_id})
    assert api.reads.calls > calls


async def test_signed_in_and_post_requests_are_never_served_from_the_map(
    api: Served, product_id: str
) -> None:
    await api.get(STATS, {"pid": product_id})
    calls = api.reads.calls

    await api.get(STATS, {"pid": product_id}, authorization=f"Bearer {token()}")
    response = await api.http.post(
        "/graphql", json={"query": STATS, "variables": {"pid": product_id}}
    )
    assert response.status_code == 200
    assert api.reads.calls == calls + 2


async def test_a_change_fed_from_the_stream_drops_the_answer(
    api: Served, table: TableRef, product_id: str
) -> None:
    before = await api.get(STATS, {"pid": product_id})
    assert before.json()["data"]["product"]["stats"]["total"] == 0
    (made,) = await create_many(table, [NewComment(product_id, "en", 5, "new", "ann")])
    # The map was not told yet: still the answer it keeps (what a follower 120 ms behind
    # would serve); then the stream's change of the comment item reaches it.
    assert (await api.get(STATS, {"pid": product_id})).content == before.content
    item = (await table.client.get_item(TableName=table.name, Key=comment_key(made.comment_id)))[
        "Item"
    ]
    change = Change("INSERT", comment_key(made.comment_id), None, item, "1", "shard")
    assert f"p:{product_id}" in tags_of(change)

    async def one_batch() -> AsyncIterator[list[Change]]:
        yield [change]

    async for _ in telling(api.answers, one_batch()):
        pass
    after = await api.get(STATS, {"pid": product_id})
    assert after.json()["data"]["product"]["stats"]["total"] == 1


async def test_an_answer_whose_execution_saw_a_change_is_not_kept(
    api: Served, product_id: str
) -> None:
    api.reads.gate = asyncio.Event()
    pending = asyncio.create_task(api.get(STATS, {"pid": product_id}))
    await asyncio.wait_for(api.reads.waiting.wait(), WAIT)
    # The change arrives while the execution reads: what it read may predate it.
    api.answers.changed({f"p:{product_id}"})
    api.reads.gate.set()
    await pending
    assert len(api.answers) == 0
    assert api.answers.not_stored == 1
    calls = api.reads.calls
    await api.get(STATS, {"pid": product_id})  # executed again, and kept this time
    assert api.reads.calls > calls
    assert len(api.answers) == 1


async def test_a_change_of_something_else_during_execution_does_not_stop_it(
    api: Served, product_id: str
) -> None:
    api.reads.gate = asyncio.Event()
    pending = asyncio.create_task(api.get(STATS, {"pid": product_id}))
    await asyncio.wait_for(api.reads.waiting.wait(), WAIT)
    api.answers.changed({"p:some-other-product"})
    api.reads.gate.set()
    await pending
    assert len(api.answers) == 1


async def test_a_lost_stream_empties_the_map_until_it_is_followed_again(
    api: Served, product_id: str
) -> None:
    await api.get(STATS, {"pid": product_id})
    assert len(api.answers) == 1
    api.answers.lost()
    assert len(api.answers) == 0
    calls = api.reads.calls
    await api.get(STATS, {"pid": product_id})
    await api.get(STATS, {"pid": product_id})
    assert api.reads.calls == calls + 2  # nothing kept nor served while not following
    api.answers.following()
    await api.get(STATS, {"pid": product_id})
    await api.get(STATS, {"pid": product_id})
    assert api.reads.calls == calls + 3


async def test_concurrent_misses_execute_once(api: Served, product_id: str) -> None:
    api.reads.gate = asyncio.Event()
    many = [asyncio.create_task(api.get(STATS, {"pid": product_id})) for _ in range(8)]
    await asyncio.wait_for(api.reads.waiting.wait(), WAIT)
    await asyncio.sleep(0)  # let the others reach the flight
    api.reads.gate.set()
    answers = await asyncio.gather(*many)
    assert len({a.content for a in answers}) == 1
    assert api.reads.calls == 1
    # Counted once each: the one that executed a miss, the seven that waited for it hits.
    assert (api.answers.hits, api.answers.misses) == (7, 1)


async def test_the_map_stays_within_its_bytes(table: TableRef) -> None:
    async for api in served(table, answer_cache_bytes=16 * 1024):
        for n in range(120):
            await api.get(f"{{ a{n}: __typename }}", {})
            assert api.answers.bytes <= 16 * 1024
        assert api.answers.evictions > 0
        assert 0 < len(api.answers) < 120


async def test_off_keeps_nothing(table: TableRef, product_id: str) -> None:
    async for api in served(table, answer_cache_bytes=0):
        await api.get(STATS, {"pid": product_id})
        await api.get(STATS, {"pid": product_id})
        assert api.reads.calls == 2
        assert len(api.answers) == 0


def test_tags_of_the_items_the_stream_carries() -> None:
    def change(pk: str, sk: str, **images: Any) -> Change:
        keys = {"PK": {"S": pk}, "SK": {"S": sk}}
        return Change("MODIFY", keys, images.get("old"), images.get("new"), "1", "s")

    assert tags_of(change("AUTHOR#x", "RATE#comments")) == set()
    assert tags_of(change("LAYOUT#PROCESS", "h1")) == set()
    # The claimed stream readers move their leases on every batch they take (webhooks).
    for reader in ("webhooks", "fanout"):
        lease = lease_key(reader, "shardId-1")
        assert tags_of(change(lease["PK"]["S"], lease["SK"]["S"])) == set()
    assert tags_of(change("GROUP#g1", "MEMBER#p1")) == {"g:g1", "membership"}
    assert tags_of(change("PRODUCT#p1", "HELD#g1")) == {"p:p1", "membership", "g:g1"}
    assert tags_of(change("COMMENT#c1", "VOTE#v")) == {"c:c1"}
    assert tags_of(change("SOMETHING#new", "x")) == {"all"}
    assert tags_of_batch([change("AUTHOR#x", "y"), change("SOMETHING", "x")]) == {"all"}


def test_the_map_drops_what_a_change_names_and_coarse_answers_on_any() -> None:
    answers = AnswerCache(1 << 20)
    answers.following()
    keys = [AnswerKey.of(str(n), None, None, None, "application/json") for n in range(3)]
    a, b, coarse = (k for k in keys if k is not None)
    started = answers.start()
    assert answers.store(a, Answer(b"a", (), frozenset({"p:1"})), started)
    assert answers.store(b, Answer(b"b", (), frozenset({"p:2", "leaders"})), started)
    assert answers.store(coarse, Answer(b"c", (), frozenset({"all"})), started)
    answers.changed({"p:9"})
    assert answers.get(a) is not None
    assert answers.get(b) is not None
    assert answers.get(coarse) is None
    answers.changed({"leaders"})
    assert answers.get(b) is None
    assert answers.get(a) is not None
    assert AnswerKey.of("q", None, '{"a": 1, "b": 2}', None, "x") == AnswerKey.of(
        "q", None, '{"b":2,"a":1}', None, "x"
    )
    assert AnswerKey.of("q", None, "{not json", None, "x") is None


def test_the_map_is_in_the_metrics() -> None:
    from server.observability.metrics import Metrics

    metrics = Metrics(max_operations=4)
    answers = AnswerCache(1 << 20)
    metrics.watch_lookups("answers", lambda: (answers.hits, answers.misses))
    metrics.watch_answers(
        lambda: (answers.evictions, answers.invalidations, answers.not_stored, answers.bytes)
    )
    answers.following()
    key = AnswerKey.of("q", None, None, None, "application/json")
    assert key is not None
    answers.store(key, Answer(b"x" * 100, (), frozenset({"p:1"})), answers.start())
    answers.get(key)
    answers.changed({"p:1"})
    answers.get(key)
    metrics.observe_request("Q", "ok", 0.01, None)
    text = metrics.exposition().decode()
    assert 'comments_cache_lookups_total{cache="answers",result="hit"} 1.0' in text
    assert 'comments_cache_lookups_total{cache="answers",result="miss"} 1.0' in text
    assert 'comments_answer_cache_events_total{event="invalidated"} 1.0' in text
    assert "comments_answer_cache_bytes 0.0" in text
