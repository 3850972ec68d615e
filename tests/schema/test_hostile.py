"""A catalogue of hostile input. Each gets a clear error with a contract code, leaks nothing
internal and writes nothing; after each the verify command finds every counter exact.

The catalogue runs against a table of its own, seeded with known comments, so the
verification covers every item the attacks could have touched.
"""

from __future__ import annotations

import base64
import json
import time
from collections.abc import AsyncIterator
from typing import Any

import jwt
import pytest

from resolvers.auth import ALGORITHM
from storage.engine.table import TableRef
from storage.model.comments import NewComment
from storage.ops.verify import verify
from storage.reads.cursor import encode_cursor
from tests.api_helpers import SECRET, Api, running_api, token
from tests.helpers import create_many, own_table, stamp

PRODUCT = "hostile-1"
SEEDED = 30
# What no client-facing message may contain.
INTERNALS = (
    "Traceback",
    'File "',
    "botocore",
    "aiobotocore",
    "ClientError",
    "dynamodb",
    "DynamoDB",
    "GSI",
    "GSISK",
    "PRODUCT#",
    "COMMENT#",
    "byLangAndRating",
    "byRating",
    "byLang",
    "Exception",
)
PAGE = """query($pid: ID!, $lang: String, $ratings: [Int!], $first: Int, $after: String,
                 $last: Int, $before: String) {
  product(productId: $pid) {
    comments(language: $lang, ratings: $ratings, first: $first, after: $after,
             last: $last, before: $before) { totalCount nodes { commentId } }
  }
}"""
CREATE = """mutation($input: CreateCommentInput!) {
  createComment(input: $input) {
    created comment { commentId } commentEdge { cursor } userErrors { field message code }
  }
}"""
STATS = """query($pid: ID!, $lang: String) {
  product(productId: $pid) { stats(language: $lang) { total } }
}"""


@pytest.fixture(scope="module")
async def hostile_table(table: TableRef) -> TableRef:
    own = await own_table(table, "hostile")
    await create_many(
        own,
        [
            NewComment(
                PRODUCT,
                ["en", "de"][n % 2],
                [5, 1, 4][n % 3],
                f"b{n}",
                f"u{n}",
                created_at=stamp(n),
            )
            for n in range(SEEDED)
        ],
    )
    return own


@pytest.fixture(scope="module")
async def hostile_api(hostile_table: TableRef) -> AsyncIterator[Api]:
    async with running_api(hostile_table.client, hostile_table.name) as running:
        yield running


@pytest.fixture(autouse=True)
async def nothing_written(hostile_table: TableRef) -> AsyncIterator[None]:
    """After every test, whatever order they run in: the table holds the seeded comments
    and nothing else, and the verify command finds every counter exact."""
    yield
    report = await verify(hostile_table)
    assert report.describe() == []
    assert report.comments == SEEDED


def refused(body: dict[str, Any], code: str = "BAD_USER_INPUT") -> str:
    """The first error's message, after checking the error is clear, coded and clean."""
    assert body.get("errors"), body
    error = body["errors"][0]
    assert error["extensions"]["code"] == code, error
    message: str = error["message"]
    assert 0 < len(message) <= 500, message
    text = json.dumps(body)
    for secret in INTERNALS:
        assert secret not in text, (secret, text[:300])
    return message


def form_refused(body: dict[str, Any], field: str) -> str:
    """A mutation refused through its payload: nothing created, the problem listed under the
    input field with a contract code, and a clear, clean message."""
    assert "errors" not in body, body
    payload = body["data"]["createComment"]
    assert (payload["created"], payload["comment"], payload["commentEdge"]) == (False, None, None)
    problems = [e for e in payload["userErrors"] if e["field"] == ["input", field]]
    assert problems, payload
    assert problems[0]["code"] in ("INVALID", "REQUIRED", "TOO_LONG"), problems
    message: str = problems[0]["message"]
    assert 0 < len(message) <= 500, message
    text = json.dumps(body)
    for secret in INTERNALS:
        assert secret not in text, (secret, text[:300])
    return message


ODD_IDS = [
    "/",
    "a/b",
    "#",
    "a#b",
    "PRODUCT#x",
    "~",
    "a~b",
    "\x00",
    "a\x00b",
    "a\nb",
    "a\tb",
    "\x1b[31mred",
    "a b",
    " a",
    "a ",
    "",
    "é",
    "produit-é",
    "日本語",
    "🙂",
    "a\u202eb",
    "a%2Fb",
    "../etc/passwd",
    "a'b",
    'a"b',
    "a;b",
    "$where",
    "x" * 129,
    "x" * 10_000,
]
ODD_LANGUAGES = [
    "/",
    "en/5",
    "en#",
    "#en",
    "en~",
    "~",
    "\x00",
    "en\x00",
    "en\n",
    "",
    " ",
    "e",
    "en_US",
    "en--us",
    "日本語",
    "ën",
    "x" * 36,
    "x" * 10_000,
]


@pytest.mark.parametrize("pid", ODD_IDS)
async def test_odd_product_ids(hostile_api: Api, pid: str) -> None:
    refused(await hostile_api.gql(PAGE, {"pid": pid}))
    refused(await hostile_api.gql(STATS, {"pid": pid}))
    form_refused(
        await hostile_api.gql(
            CREATE,
            {"input": {"productId": pid, "rating": 5, "language": "en", "body": "x"}},
            token(),
        ),
        "productId",
    )


@pytest.mark.parametrize("lang", ODD_LANGUAGES)
async def test_odd_languages(hostile_api: Api, lang: str) -> None:
    refused(await hostile_api.gql(PAGE, {"pid": PRODUCT, "lang": lang}))
    refused(await hostile_api.gql(STATS, {"pid": PRODUCT, "lang": lang}))
    form_refused(
        await hostile_api.gql(
            CREATE,
            {"input": {"productId": PRODUCT, "rating": 5, "language": lang, "body": "x"}},
            token(),
        ),
        "language",
    )


@pytest.mark.parametrize(
    "args",
    [
        {"first": -1},
        {"first": 101},
        {"first": 2**31 - 1},
        {"last": -1},
        {"last": 101},
        {"last": -(2**31)},
        {"first": 1, "last": 1},
        {"first": 0, "last": 0},
        {"ratings": [0]},
        {"ratings": [6]},
        {"ratings": [-1, 5]},
        {"ratings": [2**31 - 1]},
    ],
    ids=repr,
)
async def test_out_of_range_arguments(hostile_api: Api, args: dict[str, Any]) -> None:
    refused(await hostile_api.gql(PAGE, {"pid": PRODUCT, **args}))


@pytest.mark.parametrize(
    "variables",
    [{"first": 2**31}, {"first": 10**30}, {"first": 1.5}, {"first": "5"}, {"ratings": "5"}],
    ids=repr,
)
async def test_values_of_the_wrong_type(hostile_api: Api, variables: dict[str, Any]) -> None:
    refused(await hostile_api.gql(PAGE, {"pid": PRODUCT, **variables}))


@pytest.mark.parametrize("first", [-5, 0, 101, 2**31 - 1])
async def test_leaderboard_size(hostile_api: Api, first: int) -> None:
    refused(
        await hostile_api.gql("query($n: Int!) { topProducts(first: $n) { rank } }", {"n": first})
    )


def _b64(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


def _cursors() -> dict[str, str]:
    good = encode_cursor("2024-01-01T00:00:00.000Z#0123456789abcdef0123456789abcdef")
    flipped = good[:-3] + ("A" if good[-3] != "A" else "B") + good[-2:]
    return {
        "tampered": flipped,
        "truncated": good[:-5],
        "one-char-short": good[:-1],
        "padded": good + "==",
        "foreign-version": _b64(b"c9:2024-01-01T00:00:00.000Z#abc"),
        "no-version": _b64(b"2024-01-01T00:00:00.000Z#0123456789abcdef0123456789abcdef"),
        "short-id": _b64(b"c1:2024-01-01T00:00:00.000Z#0123456789abcdef0123456789abcde"),
        "key-format": _b64(b"c1:PRODUCT#p/en/5"),
        "delimiter-smuggle": _b64(b"c1:2024-01-01T00:00:00.000Z#a#b"),
        "control-chars": _b64(b"c1:2024-01-01T00:00:00.000Z#a\x00"),
        "not-utf8": _b64(b"c1:\xff\xfe"),
        "random": _b64(bytes(range(7, 60))),
        "standard-alphabet": base64.b64encode(b"c1:2024-01-01T00:00:00.000Z#ab?>").decode(),
        "empty": "",
        "space": " ",
        "unicode": "日本語",
        "huge": "A" * 10_000,
        "json": '{"offset": 20}',
        "offset": "20",
    }


@pytest.mark.parametrize(("name", "cursor"), list(_cursors().items()), ids=list(_cursors()))
async def test_bad_cursors(hostile_api: Api, name: str, cursor: str) -> None:
    assert (
        "cursor" in refused(await hostile_api.gql(PAGE, {"pid": PRODUCT, "after": cursor})).lower()
    )
    refused(await hostile_api.gql(PAGE, {"pid": PRODUCT, "last": 3, "before": cursor}))


def _nested(depth: int) -> str:
    inner = "commentId"
    for _ in range(depth):
        inner = f"product {{ comments(first: 1) {{ nodes {{ {inner} }} }} }}"
    return (
        f'{{ product(productId: "{PRODUCT}") {{ comments(first: 1) {{ nodes {{ {inner} }} }} }} }}'
    )


SHAPES = {
    "deep": _nested(6),
    "wide": "{ " + " ".join(f"f{n}: __typename" for n in range(3000)) + " }",
    "aliases": "{ "
    + " ".join(f'a{n}: product(productId: "{PRODUCT}") {{ productId }}' for n in range(31))
    + " }",
    "costly": "{ topProducts(first: 100) { product { comments(ratings: [1, 2, 3, 4], first: 100) "
    "{ nodes { commentId } } } } }",
    "costly-nested": _nested(2).replace("first: 1", "first: 100"),
    "many-nodes": "{ nodes(ids: [" + ", ".join(f'"id{n}"' for n in range(600)) + "]) { id } }",
    "fragment-cycle": '{ product(productId: "p") { ...A } } '
    "fragment A on Product { ...B } fragment B on Product { ...A }",
    "directive-flood": "{ __typename " + "@skip(if: false) " * 400 + "}",
    "unknown-field": "{ secrets }",
    "syntax": "{ product(productId: ",
    "empty-document": " ",
    "only-comment": "# nothing",
    "subscription": "subscription { anything }",
    "two-anonymous": "{ __typename } { __typename }",
    "huge-string": '{ product(productId: "' + "x" * 400_000 + '") { productId } }',
}
TOO_COMPLEX = {
    "deep",
    "wide",
    "aliases",
    "costly",
    "costly-nested",
    "many-nodes",
    "directive-flood",
}


@pytest.mark.parametrize("name", list(SHAPES))
async def test_query_shapes(hostile_api: Api, name: str) -> None:
    response = await hostile_api.http.post("/graphql", json={"query": SHAPES[name]})
    assert response.status_code in (200, 400), response.text[:200]
    refused(response.json(), "QUERY_TOO_COMPLEX" if name in TOO_COMPLEX else "BAD_USER_INPUT")


JSON = {"content-type": "application/json"}
TRANSPORT: dict[str, dict[str, Any]] = {
    "invalid-json": {"content": b'{"query": ', "headers": JSON},
    "json-string": {"content": b'"{ __typename }"', "headers": JSON},
    "json-number": {"content": b"42", "headers": JSON},
    "json-null": {"content": b"null", "headers": JSON},
    "not-utf8": {"content": b'{"query": "\xff\xfe"}', "headers": JSON},
    "nan": {"content": b'{"query": "{ __typename }", "variables": NaN}', "headers": JSON},
    "deeply-nested-json": {
        "content": b'{"query": "{ __typename }", "variables": {"a": '
        + b"[" * 50_000
        + b"]" * 50_000
        + b"}}",
        "headers": JSON,
    },
    "no-query": {"json": {"variables": {}}},
    "query-not-string": {"json": {"query": ["{ __typename }"]}},
    "variables-not-object": {"json": {"query": "{ __typename }", "variables": [1]}},
    "text-plain": {
        "content": b'{"query": "{ __typename }"}',
        "headers": {"content-type": "text/plain"},
    },
    "form": {"data": {"query": "{ __typename }"}},
    "multipart": {"files": {"f": ("a.txt", b"x")}, "data": {"operations": "{}", "map": "{}"}},
    "no-content-type": {"content": b'{"query": "{ __typename }"}'},
    "batched": {"json": [{"query": "{ __typename }"}, {"query": "{ __typename }"}]},
    "empty-batch": {"json": []},
}


@pytest.mark.parametrize("name", list(TRANSPORT))
async def test_transport(hostile_api: Api, name: str) -> None:
    response = await hostile_api.http.post("/graphql", **TRANSPORT[name])
    assert 400 <= response.status_code < 500, (response.status_code, response.text[:200])
    refused(response.json())


@pytest.mark.parametrize(
    ("method", "params"),
    [
        ("GET", {"query": 'mutation { deleteComment(input: {id: "x"}) { deletedId } }'}),
        ("PUT", None),
        ("DELETE", None),
        ("PATCH", None),
    ],
)
async def test_methods(hostile_api: Api, method: str, params: dict[str, str] | None) -> None:
    response = await hostile_api.http.request(method, "/graphql", params=params, headers=JSON)
    assert response.status_code in (400, 405), response.text[:200]
    refused(response.json())


def _token(claims: dict[str, Any], key: str = SECRET, algorithm: str = ALGORITHM) -> str:
    return jwt.encode(claims, key, algorithm=algorithm)


def _unsigned(header: dict[str, Any], claims: dict[str, Any]) -> str:
    return f"{_b64(json.dumps(header).encode())}.{_b64(json.dumps(claims).encode())}."


SOON = int(time.time()) + 600
AUTH = {
    "empty": "",
    "bearer-only": "Bearer",
    "bearer-space": "Bearer ",
    "basic": "Basic YW5uOnB3",
    "lowercase-scheme-garbage": "bearer x.y.z",
    "two-tokens": f"Bearer {token()} {token()}",
    "expired": "Bearer " + _token({"sub": "ann", "exp": int(time.time()) - 5}),
    "not-yet-valid": "Bearer " + _token({"sub": "ann", "exp": SOON, "nbf": SOON}),
    "other-secret": "Bearer " + _token({"sub": "ann", "exp": SOON}, key="z" * 40),
    "alg-none": "Bearer " + _unsigned({"alg": "none", "typ": "JWT"}, {"sub": "ann", "exp": SOON}),
    "alg-None": "Bearer " + _unsigned({"alg": "None"}, {"sub": "ann", "exp": SOON}),
    "hs384": "Bearer " + _token({"sub": "ann", "exp": SOON}, algorithm="HS384"),
    "hs512": "Bearer " + _token({"sub": "ann", "exp": SOON}, algorithm="HS512"),
    "signature-stripped": "Bearer " + token().rsplit(".", 1)[0] + ".",
    "payload-swapped": "Bearer "
    + ".".join(
        [
            token().split(".")[0],
            _b64(json.dumps({"sub": "mallory", "roles": ["moderator"], "exp": SOON}).encode()),
            token().split(".")[2],
        ]
    ),
    "sub-not-string": "Bearer " + _token({"sub": 7, "exp": SOON}),
    "sub-empty": "Bearer " + _token({"sub": "", "exp": SOON}),
    "huge": "Bearer " + "a" * 20_000,
}


@pytest.mark.parametrize("name", list(AUTH))
async def test_bad_authorization(hostile_api: Api, name: str) -> None:
    body = (
        await hostile_api.http.post(
            "/graphql",
            json={
                "query": CREATE,
                "variables": {
                    "input": {"productId": PRODUCT, "rating": 5, "language": "en", "body": "x"}
                },
            },
            headers={"authorization": AUTH[name]},
        )
    ).json()
    refused(body, "UNAUTHENTICATED")


async def test_nothing_hostile_changed_the_counters(
    hostile_api: Api, hostile_table: TableRef
) -> None:
    # The same check as after every test, and the count as clients see it.
    report = await verify(hostile_table)
    assert report.describe() == []
    assert report.comments == SEEDED
    data = await hostile_api.data(STATS, {"pid": PRODUCT})
    assert data["product"]["stats"]["total"] == SEEDED
