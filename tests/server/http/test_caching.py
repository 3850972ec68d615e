"""HTTP caching of reads: anonymous queries over GET are public with a strong ETag and a 304
on a matching If-None-Match; signed-in ones are private when their answer read nothing of
the viewer, else no-store; POST, mutations and errors are no-store; Vary names what
an answer depends on; the APQ round trip over GET ends in a 304. Compression: gzip above
GZIP_MIN_BYTES, with an ETag of its own."""

from __future__ import annotations

import gzip
import hashlib
import json
import re
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest

from server.http.caching import CachePolicy, none_match, strong_etag
from server.settings import Settings
from storage.engine.table import TableRef
from storage.model.comments import NewComment
from tests.api_helpers import Api, running_api, token
from tests.helpers import create_many, stamp

SHOP = "https://shop.example"
PUBLIC = Settings().cache_policy.cache_control()
PAGE = """query Page($pid: ID!) { product(productId: $pid) { comments(first: 20) {
  totalCount
  edges { cursor node { id commentId productId rating language title body author createdAt
    authorId authorSubject } }
  pageInfo { hasNextPage hasPreviousPage startCursor endCursor }
} } }"""


def test_the_defaults_are_short_and_public() -> None:
    assert PUBLIC == "public, max-age=30, stale-while-revalidate=60"
    assert CachePolicy(10, 0).cache_control() == "public, max-age=10"
    assert not CachePolicy(0, 60).on


TAG = '"abc"'


@pytest.mark.parametrize(
    ("if_none_match", "matches"),
    [
        ('"abc"', True),
        ('W/"abc"', True),  # weak comparison (RFC 9110 13.1.2)
        ('"x", "abc"', True),
        ('"x",W/"abc" ', True),
        ("*", True),
        (" * ", True),
        ('"abd"', False),
        ('"x", "y"', False),
        ("abc", False),  # not an entity-tag
        ('"ab,c", "abc"', True),  # a comma inside a tag does not split it
        ('"ab,c"', False),
        ("", False),
        ('"abc', False),
    ],
)
def test_if_none_match(if_none_match: str, matches: bool) -> None:
    assert none_match(if_none_match, TAG) is matches


def test_the_etag_is_strong_and_names_the_bytes() -> None:
    tag = strong_etag(b"{}")
    assert re.fullmatch(r'"[A-Za-z0-9_-]{43}"', tag)
    assert tag != strong_etag(b"{} ")


async def get(api: Api, params: dict[str, str], **headers: str) -> httpx.Response:
    """A GET whose body is the bytes sent (no content coding unless asked for)."""
    headers = {"accept-encoding": "identity", **headers}
    return await api.http.get("/graphql", params=params, headers=headers)


async def get_raw(api: Api, params: dict[str, str], **headers: str) -> tuple[httpx.Response, bytes]:
    """A GET, and its body as sent (compressed, if it was)."""
    request = api.http.build_request("GET", "/graphql", params=params, headers=headers)
    response = await api.http.send(request, stream=True)
    raw = b"".join([chunk async for chunk in response.aiter_raw()])
    await response.aclose()
    return response, raw


def vary(response: httpx.Response) -> set[str]:
    return {v.strip().lower() for v in response.headers.get("vary", "").split(",") if v.strip()}


def assert_public(response: httpx.Response) -> None:
    assert response.status_code == 200, response.text
    assert response.headers["cache-control"] == PUBLIC
    assert response.headers["etag"] == strong_etag(response.content)
    assert {"accept", "authorization"} <= vary(response)


def assert_not_stored(response: httpx.Response) -> None:
    assert response.headers["cache-control"] == "no-store"
    assert "etag" not in response.headers


TYPENAME = {"query": "{ __typename }"}


async def test_an_anonymous_get_is_public_with_an_etag_and_a_304(api: Api) -> None:
    first = await get(api, TYPENAME)
    assert_public(first)
    # Equal answers are equal bytes: the request id is in the header, not the body.
    assert "requestId" not in first.json().get("extensions", {})
    assert re.fullmatch(r"[0-9a-f]{32}", first.headers["x-request-id"])
    etag = first.headers["etag"]
    again = await get(api, TYPENAME, **{"if-none-match": etag})
    assert again.status_code == 304
    assert again.content == b""
    assert again.headers["etag"] == etag
    assert again.headers["cache-control"] == PUBLIC
    assert vary(again) == vary(first)
    assert "content-type" not in again.headers
    assert again.headers["x-request-id"] != first.headers["x-request-id"]


@pytest.mark.parametrize(
    "condition",
    ["{etag}", "W/{etag}", '"other", {etag}', "*"],
    ids=["strong", "weak", "list", "star"],
)
async def test_if_none_match_forms_get_a_304(api: Api, condition: str) -> None:
    etag = (await get(api, TYPENAME)).headers["etag"]
    response = await get(api, TYPENAME, **{"if-none-match": condition.format(etag=etag)})
    assert response.status_code == 304


async def test_another_etag_gets_the_answer(api: Api) -> None:
    response = await get(api, TYPENAME, **{"if-none-match": '"something-else"'})
    assert_public(response)
    assert response.json()["data"] == {"__typename": "Query"}


async def test_the_media_type_is_part_of_the_answer(api: Api) -> None:
    legacy = await get(api, TYPENAME, accept="application/json")
    modern = await get(api, TYPENAME, accept="application/graphql-response+json")
    assert_public(legacy)
    assert_public(modern)
    assert "accept" in vary(modern)


PRIVATE = f"private, max-age={Settings().cache_max_age}"
STATS_AND_PAGE = """query($pid: ID!) { product(productId: $pid) { stats { total }
  comments(first: 5) { totalCount edges { cursor node { commentId title rating author } } } } }"""


async def test_a_signed_in_answer_that_read_no_viewer_is_the_callers_to_keep(
    api: Api, table: TableRef, product_id: str
) -> None:
    # A product page asked for with a token: its answer is every shopper's, so the
    # shopper's browser may keep it and revalidate it; no shared cache may (private).
    await create_many(table, [NewComment(product_id, "en", 4, "kept", "ann")])
    params = {"query": STATS_AND_PAGE, "variables": json.dumps({"pid": product_id})}
    signed_in = f"Bearer {token()}"
    first = await get(api, params, authorization=signed_in)
    assert first.status_code == 200
    assert first.json()["data"]["product"]["stats"]["total"] == 1
    assert first.headers["cache-control"] == PRIVATE
    assert first.headers["etag"] == strong_etag(first.content)
    assert "authorization" in vary(first)
    assert "requestId" not in first.json().get("extensions", {})
    condition = {"if-none-match": first.headers["etag"]}
    again = await get(api, params, authorization=signed_in, **condition)
    assert again.status_code == 304
    assert again.headers["cache-control"] == PRIVATE
    # Whatever the header holds: a token never read is never checked, and the answer is
    # the same as anyone's (still the caller's to keep, never a shared cache's).
    nonsense = await get(api, params, authorization="Bearer nonsense")
    assert nonsense.headers["cache-control"] == PRIVATE


@pytest.mark.parametrize(
    "query",
    [
        "{ viewer { authorId } }",
        """query($pid: ID!) { product(productId: $pid) {
          comments(first: 5) { nodes { commentId viewerVote } } } }""",
        """query($pid: ID!) { product(productId: $pid) {
          comments(first: 5) { nodes { commentId authorSubject } } } }""",
    ],
    ids=["viewer", "viewerVote", "authorSubject"],
)
async def test_a_signed_in_answer_that_read_the_viewer_is_no_store(
    api: Api, table: TableRef, product_id: str, query: str
) -> None:
    await create_many(table, [NewComment(product_id, "en", 4, "voted", "ann")])
    params = {"query": query, "variables": json.dumps({"pid": product_id})}
    response = await get(api, params, authorization=f"Bearer {token('bob')}")
    assert response.status_code == 200
    assert "errors" not in response.json(), response.json()
    assert_not_stored(response)
    assert response.json()["extensions"]["requestId"] == response.headers["x-request-id"]


async def test_post_is_no_store(api: Api) -> None:
    response = await api.http.post("/graphql", json=TYPENAME)
    assert response.status_code == 200
    assert_not_stored(response)


async def test_a_mutation_is_no_store(api: Api, product_id: str) -> None:
    mutation = """mutation($pid: ID!) { createComment(input: {productId: $pid, rating: 4,
      language: "en", title: "t", body: "b"}) { created } }"""
    response = await api.http.post(
        "/graphql",
        json={"query": mutation, "variables": {"pid": product_id}},
        headers={"authorization": f"Bearer {token()}"},
    )
    assert response.json()["data"]["createComment"]["created"] is True
    assert_not_stored(response)
    over_get = await get(api, {"query": mutation, "variables": json.dumps({"pid": product_id})})
    assert over_get.status_code == 405
    assert_not_stored(over_get)


@pytest.mark.parametrize(
    ("params", "status"),
    [
        ({"query": '{ product(productId: "a/b") { productId } }'}, 200),  # a field error
        ({"query": "{ noSuchField }"}, 400),  # a request error
        ({"query": "{ __typename }", "variables": "{"}, 400),  # not well-formed
    ],
    ids=["field-error", "request-error", "malformed"],
)
async def test_answers_with_errors_are_no_store(
    api: Api, params: dict[str, str], status: int
) -> None:
    response = await get(api, params, accept="application/graphql-response+json")
    assert response.status_code == status
    assert response.json()["errors"]
    assert_not_stored(response)


async def test_a_partial_result_is_no_store(api: Api, product_id: str) -> None:
    # The product's stats stand, its listing fails on a bad cursor: not for a cache.
    query = """query($pid: ID!) { product(productId: $pid) { stats { total }
      comments(first: 2, after: "nonsense") { totalCount } } }"""
    response = await get(api, {"query": query, "variables": json.dumps({"pid": product_id})})
    body = response.json()
    assert body["data"]["product"]["stats"] == {"total": 0}
    assert body["errors"]
    assert_not_stored(response)


async def test_a_moderators_plans_are_no_store(table: TableRef, product_id: str) -> None:
    # Where plans are shown to moderators only (EXPLAIN off), an answer with one read the
    # caller's role.
    query = """query($pid: ID!) { product(productId: $pid) {
      comments(first: 2) { plan { strategy } } } }"""
    params = {"query": query, "variables": json.dumps({"pid": product_id})}
    async with running_api(table.client, table.name, explain=False) as production:
        moderated = await get(production, params, authorization=f"Bearer {token(moderator=True)}")
    assert moderated.json()["data"]["product"]["comments"]["plan"] is not None
    assert_not_stored(moderated)


async def test_the_ide_page_is_no_store(api: Api) -> None:
    page = await api.http.get("/graphql", headers={"accept": "text/html"})
    assert page.status_code == 200
    assert_not_stored(page)
    assert "accept" in vary(page)


async def test_max_age_zero_turns_caching_off(table: TableRef) -> None:
    async with running_api(table.client, table.name, cache_max_age=0) as off:
        response = await get(off, TYPENAME)
        assert response.status_code == 200
        assert_not_stored(response)
        assert "requestId" in response.json()["extensions"]


async def test_the_policy_is_settings(table: TableRef) -> None:
    async with running_api(
        table.client, table.name, cache_max_age=5, cache_stale_while_revalidate=0
    ) as short:
        response = await get(short, TYPENAME)
        assert response.headers["cache-control"] == "public, max-age=5"


@pytest.fixture(scope="module")
async def cors(table: TableRef) -> AsyncIterator[Api]:
    async with running_api(table.client, table.name, cors_origins=[SHOP]) as running:
        yield running


@pytest.mark.parametrize("origin", [None, SHOP, "https://evil.example"])
async def test_with_cors_the_origin_is_part_of_the_answer(cors: Api, origin: str | None) -> None:
    # Also without an Origin: a cache must not give that answer (without CORS headers) to
    # a browser's request, nor one origin's to another.
    headers = {"origin": origin} if origin else {}
    response = await get(cors, TYPENAME, **headers)
    assert_public(response)
    assert "origin" in vary(response)
    if origin == SHOP:
        revalidated = await get(cors, TYPENAME, origin=SHOP, **{"if-none-match": "*"})
        assert revalidated.status_code == 304
        assert revalidated.headers["access-control-allow-origin"] == SHOP
        assert "origin" in vary(revalidated)


async def test_without_cors_the_origin_is_not_varied_on(api: Api) -> None:
    assert "origin" not in vary(await get(api, TYPENAME, origin=SHOP))


async def test_a_page_of_comments_revalidates_to_a_304(
    api: Api, table: TableRef, product_id: str
) -> None:
    await create_many(
        table,
        [
            NewComment(product_id, "en", 1 + n % 5, f"body {n}", f"user{n}", created_at=stamp(n))
            for n in range(25)
        ],
    )
    params = {"query": PAGE, "variables": json.dumps({"pid": product_id})}
    first = await get(api, params)
    assert_public(first)
    assert len(first.json()["data"]["product"]["comments"]["edges"]) == 20
    # Read again: the same bytes (storage metering included), so the same tag.
    assert (await get(api, params)).headers["etag"] == first.headers["etag"]
    assert (await get(api, params, **{"if-none-match": first.headers["etag"]})).status_code == 304
    # A new comment changes the answer, and the old tag no longer matches.
    await create_many(
        table, [NewComment(product_id, "en", 5, "newest", "late", created_at=stamp(99))]
    )
    changed = await get(api, params, **{"if-none-match": first.headers["etag"]})
    assert_public(changed)
    assert changed.headers["etag"] != first.headers["etag"]


# The APQ round trip as Apollo's link does it with useGETForHashedQueries.
def persisted(document: str) -> dict[str, Any]:
    digest = hashlib.sha256(document.encode()).hexdigest()
    return {"persistedQuery": {"version": 1, "sha256Hash": digest}}


async def test_the_apq_round_trip_ends_in_a_304(api: Api) -> None:
    document = "query CachedTop { topProducts(first: 3) { rank fiveStarCount } }"
    by_hash = {"extensions": json.dumps(persisted(document))}
    miss = await get(api, by_hash)
    assert miss.status_code == 200
    assert miss.json()["errors"][0]["extensions"]["code"] == "PERSISTED_QUERY_NOT_FOUND"
    assert_not_stored(miss)
    registered = await api.http.post(
        "/graphql", json={"query": document, "extensions": persisted(document)}
    )
    assert registered.status_code == 200
    assert "errors" not in registered.json()
    assert_not_stored(registered)
    hit = await get(api, by_hash)
    assert_public(hit)
    assert "topProducts" in hit.json()["data"]
    again = await get(api, by_hash, **{"if-none-match": hit.headers["etag"]})
    assert again.status_code == 304
    assert again.headers["etag"] == hit.headers["etag"]
    assert again.headers["cache-control"] == PUBLIC


async def seed_page(table: TableRef, product_id: str, count: int = 25) -> dict[str, str]:
    """A product with ``count`` comments; the GET parameters of its first page of 20."""
    await create_many(
        table,
        [
            NewComment(
                product_id,
                ["en", "de", "fr"][n % 3],
                1 + n % 5,
                f"Body of comment {n}: it does what it says, and the delivery was quick.",
                f"user{n}",
                title=f"Comment {n}",
                created_at=stamp(n),
            )
            for n in range(count)
        ],
    )
    return {"query": PAGE, "variables": json.dumps({"pid": product_id})}


async def test_large_answers_are_gzipped_with_an_etag_of_their_own(
    api: Api, table: TableRef, product_id: str
) -> None:
    params = await seed_page(table, product_id)
    plain = await get(api, params)
    assert_public(plain)
    assert "content-encoding" not in plain.headers
    assert len(plain.content) > Settings().gzip_min_bytes
    zipped, raw = await get_raw(api, params, **{"accept-encoding": "gzip"})
    assert zipped.status_code == 200
    assert zipped.headers["content-encoding"] == "gzip"
    assert gzip.decompress(raw) == plain.content
    assert len(raw) < len(plain.content) / 2
    assert "accept-encoding" in vary(zipped)
    assert "accept-encoding" in vary(plain)  # a cache must not give this one to gzip clients
    assert zipped.headers["cache-control"] == PUBLIC
    # Strong: the tag names the compressed bytes, not the identity ones.
    assert zipped.headers["etag"] == strong_etag(raw)
    assert zipped.headers["etag"] != plain.headers["etag"]
    # The same answer compresses to the same bytes: the tag holds from one request to the next.
    again, _ = await get_raw(
        api, params, **{"accept-encoding": "gzip", "if-none-match": zipped.headers["etag"]}
    )
    assert again.status_code == 304
    assert again.headers["etag"] == zipped.headers["etag"]
    assert "content-encoding" not in again.headers
    assert "accept-encoding" in vary(again)
    # The identity tag is another representation's: the gzip client gets the whole answer.
    other, _ = await get_raw(
        api, params, **{"accept-encoding": "gzip", "if-none-match": plain.headers["etag"]}
    )
    assert other.status_code == 200
    assert other.headers["etag"] == zipped.headers["etag"]


async def test_small_answers_are_not_compressed(api: Api) -> None:
    response, raw = await get_raw(api, TYPENAME, **{"accept-encoding": "gzip"})
    assert "content-encoding" not in response.headers
    assert "accept-encoding" not in vary(response)
    assert response.headers["etag"] == strong_etag(raw)


async def test_post_answers_are_compressed_too(api: Api, table: TableRef, product_id: str) -> None:
    params = await seed_page(table, product_id)
    response = await api.http.post(
        "/graphql",
        json={"query": params["query"], "variables": json.loads(params["variables"])},
        headers={"accept-encoding": "gzip"},
    )
    assert response.headers["content-encoding"] == "gzip"
    assert_not_stored(response)


async def test_gzip_min_bytes_zero_turns_compression_off(table: TableRef, product_id: str) -> None:
    params = await seed_page(table, product_id)
    async with running_api(table.client, table.name, gzip_min_bytes=0) as plain:
        response, raw = await get_raw(plain, params, **{"accept-encoding": "gzip"})
        assert "content-encoding" not in response.headers
        assert len(raw) > 1024
        assert response.headers["etag"] == strong_etag(raw)
