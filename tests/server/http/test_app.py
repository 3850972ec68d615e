"""The GraphQL API over HTTP: every contract field and argument, auth, errors, pagination."""

from __future__ import annotations

import asyncio
import base64
import time
from typing import Any

import jwt
import pytest

from resolvers.auth import ALGORITHM
from resolvers.authors import author_key, public_author_id
from storage.engine.table import TableRef
from storage.model.comments import Comment, ListingFilter, NewComment
from storage.model.rules import BODY_MAX, TITLE_MAX
from storage.reads.reader import get_counts
from tests.api_helpers import SECRET, Api, running_api, token
from tests.helpers import (
    FaultyClient,
    cancelled,
    client_error,
    create_many,
    oracle,
    own_product_id,
    own_table,
    seed_mixed,
    stamp,
)

CREATE = """
mutation($input: CreateCommentInput!) {
  createComment(input: $input) {
    created
    comment { id commentId productId rating language title body author authorId createdAt
              product { productId stats { total } } }
    commentEdge { cursor node { id } }
    userErrors { field message code }
  }
}"""
DELETE = """
mutation($id: ID!) {
  deleteComment(input: {id: $id}) {
    deletedId product { productId stats { total } } userErrors { field message code }
  }
}"""
PAGE = """
query($pid: ID!, $language: String, $ratings: [Int!], $first: Int, $after: String,
      $last: Int, $before: String) {
  product(productId: $pid) {
    comments(language: $language, ratings: $ratings, first: $first, after: $after,
             last: $last, before: $before) {
      totalCount
      edges { cursor node { commentId rating language createdAt } }
      nodes { commentId }
      pageInfo { hasNextPage hasPreviousPage startCursor endCursor }
      plan { strategy index skippedRatings itemsRead rounds explain
             queries { index partitionKey limit itemsRead round ranged } }
    }
  }
}"""


@pytest.fixture(scope="module")
def seeded_pid() -> str:
    """The id of the product `seeded` seeds, this module's own."""
    return own_product_id()


@pytest.fixture(scope="module")
async def seeded(table: TableRef, seeded_pid: str) -> list[Comment]:
    """Seeded once for the module: the tests that use it only read."""
    return await seed_mixed(table, seeded_pid, 45, authors=[f"user{n}" for n in range(4)], times=11)


def _input(pid: str, **overrides: Any) -> dict[str, Any]:
    return {"productId": pid, "rating": 4, "language": "en", "body": "Nice", **overrides}


async def test_product_resolves_any_valid_id_with_zero_counts(api: Api, product_id: str) -> None:
    data = await api.data(
        """query($pid: ID!) { product(productId: $pid) { id productId lastCommentedAt
             stats { language total average histogram { rating count } } } }""",
        {"pid": product_id},
    )
    product = data["product"]
    assert product["productId"] == product_id
    assert product["lastCommentedAt"] is None
    assert product["stats"] == {
        "language": None,
        "total": 0,
        "average": None,
        "histogram": [{"rating": r, "count": 0} for r in (5, 4, 3, 2, 1)],
    }
    assert base64.b64decode(product["id"]).decode() == f"Product:{product_id}"


async def test_stats_all_languages_and_one(
    api: Api, seeded: list[Comment], seeded_pid: str
) -> None:
    data = await api.data(
        """query($pid: ID!) { product(productId: $pid) {
             all: stats { total average histogram { rating count } }
             de: stats(language: "DE") { language total histogram { rating count } }
             lastCommentedAt } }""",
        {"pid": seeded_pid},
    )
    p = data["product"]
    assert p["all"]["total"] == len(seeded)
    expected = {r: sum(c.rating == r for c in seeded) for r in range(1, 6)}
    assert {h["rating"]: h["count"] for h in p["all"]["histogram"]} == expected
    assert p["all"]["average"] == pytest.approx(sum(c.rating for c in seeded) / len(seeded))
    assert p["de"]["language"] == "de"
    assert p["de"]["total"] == sum(c.language == "de" for c in seeded)
    assert p["lastCommentedAt"] == max(c.created_at for c in seeded)


@pytest.mark.parametrize(
    ("language", "ratings"),
    [(None, None), ("en", None), (None, [1, 2]), ("de", [5, 4, 1]), (None, [3]), (None, [])],
)
@pytest.mark.parametrize("size", [1, 6, 50])
async def test_pagination_both_ways_through_graphql(
    api: Api,
    seeded: list[Comment],
    seeded_pid: str,
    language: str | None,
    ratings: list[int] | None,
    size: int,
) -> None:
    expected = [
        c.comment_id
        for c in oracle(seeded, ListingFilter(seeded_pid, language, frozenset(ratings or [])))
    ]
    base = {"pid": seeded_pid, "language": language, "ratings": ratings}
    got: list[str] = []
    after = None
    while True:
        conn = (await api.data(PAGE, {**base, "first": size, "after": after}))["product"][
            "comments"
        ]
        assert conn["totalCount"] == len(expected)
        ids = [e["node"]["commentId"] for e in conn["edges"]]
        assert ids == [n["commentId"] for n in conn["nodes"]]
        got += ids
        info = conn["pageInfo"]
        assert info["hasPreviousPage"] == (after is not None)
        if ids:
            assert info["startCursor"] == conn["edges"][0]["cursor"]
            assert info["endCursor"] == conn["edges"][-1]["cursor"]
        if not info["hasNextPage"]:
            break
        assert len(ids) == size
        after = info["endCursor"]
    assert got == expected
    back: list[str] = []
    before = None
    while True:
        conn = (await api.data(PAGE, {**base, "last": size, "before": before}))["product"][
            "comments"
        ]
        back = [e["node"]["commentId"] for e in conn["edges"]] + back
        if not conn["pageInfo"]["hasPreviousPage"]:
            break
        before = conn["pageInfo"]["startCursor"]
    assert back == expected


async def test_plan_is_explained(api: Api, seeded: list[Comment], seeded_pid: str) -> None:
    conn = (await api.data(PAGE, {"pid": seeded_pid, "ratings": [1, 2, 3], "first": 5}))["product"][
        "comments"
    ]
    plan = conn["plan"]
    assert plan["strategy"] in {"FAN_OUT", "FILTERED_SCAN_OF_INDEX"}
    assert plan["skippedRatings"] == [3]
    assert plan["itemsRead"] == sum(q["itemsRead"] for q in plan["queries"])
    assert plan["itemsRead"] >= len(conn["edges"])
    assert all(q["partitionKey"].startswith(f"PRODUCT#{seeded_pid}") for q in plan["queries"])
    assert "skipped ratings [3]" in plan["explain"]
    empty = (await api.data(PAGE, {"pid": seeded_pid, "ratings": [3], "first": 5}))["product"][
        "comments"
    ]
    assert empty["plan"] == {**empty["plan"], "strategy": "EMPTY", "index": None, "queries": []}
    assert empty["totalCount"] == 0
    assert empty["edges"] == []


@pytest.mark.parametrize(
    "args",
    [
        {"first": -1},
        {"first": 101},
        {"last": 101},
        {"first": 1, "last": 1},
        {"after": "not-a-cursor"},
        {"before": "YzI6eA"},
        {"ratings": [0]},
        {"ratings": [6]},
        {"language": "en/5"},
        {"language": "x"},
    ],
)
async def test_bad_listing_arguments(api: Api, product_id: str, args: dict[str, Any]) -> None:
    assert await api.error_code(PAGE, {"pid": product_id, **args}) == "BAD_USER_INPUT"


@pytest.mark.parametrize("pid", ["a/b", "a#b", "", "x" * 200, "é"])
async def test_bad_product_ids(api: Api, pid: str) -> None:
    query = "query($pid: ID!) { product(productId: $pid) { productId } }"
    assert await api.error_code(query, {"pid": pid}) == "BAD_USER_INPUT"


async def test_comment_node_and_nodes(api: Api, seeded: list[Comment], seeded_pid: str) -> None:
    target = seeded[0]
    query = """query($cid: ID!, $ids: [ID!]!, $nid: ID!) {
      comment(commentId: $cid) { id commentId productId rating language title body author
                                 authorId createdAt product { productId } }
      missing: comment(commentId: "absent") { id }
      node(id: $nid) { id ... on Comment { commentId } }
      nodes(ids: $ids) { id ... on Product { productId } ... on Comment { commentId } }
    }"""
    comment_gid = base64.b64encode(f"Comment:{target.comment_id}".encode()).decode()
    product_gid = base64.b64encode(f"Product:{seeded_pid}".encode()).decode()
    unknown = base64.b64encode(b"Comment:doesnotexist").decode()
    other_type = base64.b64encode(b"Order:1").decode()
    data = await api.data(
        query,
        {
            "cid": target.comment_id,
            "nid": comment_gid,
            "ids": [product_gid, unknown, comment_gid, other_type],
        },
    )
    c = data["comment"]
    assert c["id"] == comment_gid
    assert (c["commentId"], c["productId"], c["rating"], c["language"]) == (
        target.comment_id,
        seeded_pid,
        target.rating,
        target.language,
    )
    assert (c["title"], c["body"], c["authorId"], c["createdAt"]) == (
        target.title,
        target.body,
        public_author_id(author_key(SECRET), target.author_id),
        target.created_at,
    )
    assert c["product"] == {"productId": seeded_pid}
    assert data["missing"] is None
    assert data["node"] == {"id": comment_gid, "commentId": target.comment_id}
    assert data["nodes"] == [
        {"id": product_gid, "productId": seeded_pid},
        None,
        {"id": comment_gid, "commentId": target.comment_id},
        None,
    ]
    assert await api.error_code('{ node(id: "%%%") { id } }') == "BAD_USER_INPUT"


async def test_create_and_delete_with_auth_rules(
    api: Api, table: TableRef, product_id: str
) -> None:
    ann = token("ann", name="Ann A.")
    made = await api.data(CREATE, {"input": _input(product_id, title="Hi", rating=5)}, ann)
    payload = made["createComment"]
    assert payload["created"] is True
    comment = payload["comment"]
    assert (comment["author"], comment["rating"]) == ("Ann A.", 5)
    assert comment["authorId"] == public_author_id(author_key(SECRET), "ann")
    assert comment["product"]["stats"]["total"] == 1

    assert payload["userErrors"] == []
    assert payload["commentEdge"]["node"] == {"id": comment["id"]}

    assert await api.error_code(DELETE, {"id": comment["id"]}) == "UNAUTHENTICATED"
    by_bob = (await api.data(DELETE, {"id": comment["id"]}, token("bob")))["deleteComment"]
    assert (by_bob["deletedId"], by_bob["product"]) == (None, None)
    assert [(e["field"], e["code"]) for e in by_bob["userErrors"]] == [(None, "FORBIDDEN")]
    deleted = await api.data(DELETE, {"id": comment["commentId"]}, ann)
    assert deleted["deleteComment"]["deletedId"] == comment["id"]
    assert deleted["deleteComment"]["product"]["stats"]["total"] == 0
    assert deleted["deleteComment"]["userErrors"] == []
    again = (await api.data(DELETE, {"id": comment["id"]}, ann))["deleteComment"]
    assert [(e["field"], e["code"]) for e in again["userErrors"]] == [
        (["input", "id"], "NOT_FOUND")
    ]

    other = await api.data(CREATE, {"input": _input(product_id)}, token("bob"))
    moderated = await api.data(
        DELETE, {"id": other["createComment"]["comment"]["id"]}, token("mod", moderator=True)
    )
    assert moderated["deleteComment"]["product"]["stats"]["total"] == 0
    assert (await get_counts(table, product_id, None)).total == 0


async def test_idempotency_key(api: Api, product_id: str) -> None:
    ann = token("ann")
    first = await api.data(CREATE, {"input": _input(product_id, idempotencyKey="k-1")}, ann)
    again = await api.data(CREATE, {"input": _input(product_id, idempotencyKey="k-1")}, ann)
    assert first["createComment"]["created"] is True
    assert again["createComment"]["created"] is False
    assert again["createComment"]["comment"]["id"] == first["createComment"]["comment"]["id"]
    assert again["createComment"]["comment"]["product"]["stats"]["total"] == 1


@pytest.mark.parametrize(
    ("overrides", "code"),
    [
        ({"rating": 0}, "INVALID"),
        ({"rating": 6}, "INVALID"),
        ({"language": "english"}, "INVALID"),
        ({"language": "en/5"}, "INVALID"),
        ({"body": ""}, "REQUIRED"),
        ({"body": "   "}, "REQUIRED"),
        ({"body": "x" * (BODY_MAX + 1)}, "TOO_LONG"),
        ({"title": "t" * (TITLE_MAX + 1)}, "TOO_LONG"),
        ({"productId": "a#b"}, "INVALID"),
        ({"productId": "x" * 129}, "INVALID"),
        ({"idempotencyKey": "k\x00"}, "INVALID"),
    ],
)
async def test_invalid_input_writes_nothing(
    api: Api, table: TableRef, product_id: str, overrides: dict[str, Any], code: str
) -> None:
    pid = overrides.get("productId", product_id)
    body = await api.gql(CREATE, {"input": _input(product_id, **overrides)}, token())
    assert "errors" not in body, body
    payload = body["data"]["createComment"]
    assert (payload["created"], payload["comment"], payload["commentEdge"]) == (False, None, None)
    (field,) = overrides
    assert [(e["field"], e["code"]) for e in payload["userErrors"]] == [(["input", field], code)]
    if pid == product_id:
        assert (await get_counts(table, product_id, None)).total == 0


async def test_every_problem_of_a_form_is_reported_at_once_with_its_limit(
    api: Api, table: TableRef, product_id: str
) -> None:
    bad = _input(product_id, rating=9, language="en/5", body=" ", title="t" * (TITLE_MAX + 1))
    payload = (await api.data(CREATE, {"input": bad}, token()))["createComment"]
    problems = {tuple(e["field"]): (e["code"], e["message"]) for e in payload["userErrors"]}
    assert {k: v[0] for k, v in problems.items()} == {
        ("input", "rating"): "INVALID",
        ("input", "language"): "INVALID",
        ("input", "body"): "REQUIRED",
        ("input", "title"): "TOO_LONG",
    }
    assert f"at most {TITLE_MAX:,} characters" in problems[("input", "title")][1]
    assert (await get_counts(table, product_id, None)).total == 0


async def test_a_form_without_a_token_is_unauthenticated_at_the_top(
    api: Api, product_id: str
) -> None:
    body = await api.gql(CREATE, {"input": _input(product_id, rating=9)})
    assert body["errors"][0]["extensions"]["code"] == "UNAUTHENTICATED"
    assert body["data"] is None


def _raw(claims: dict[str, Any], secret: str = SECRET, algorithm: str = ALGORITHM) -> str:
    return jwt.encode(claims, secret, algorithm=algorithm)


def _none_token(claims: dict[str, Any]) -> str:
    def part(obj: dict[str, Any]) -> str:
        import json

        return base64.urlsafe_b64encode(json.dumps(obj).encode()).rstrip(b"=").decode()

    return f"{part({'alg': 'none', 'typ': 'JWT'})}.{part(claims)}."


NOW = int(time.time())
# Each token below is well formed but for the one thing it tests: it has an iat, so a
# refusal is never only for lacking one.
LIVING = {"sub": "ann", "iat": NOW, "exp": NOW + 600}


@pytest.mark.parametrize(
    "bad",
    [
        "garbage",
        _raw({**LIVING, "exp": NOW - 10}),
        _raw(LIVING, secret="another-secret-" + "x" * 60),
        _raw(LIVING, algorithm="HS512"),
        _none_token(LIVING),
        _raw({"iat": NOW, "exp": NOW + 600}),
        _raw({"sub": "ann", "iat": NOW}),
        _raw({**LIVING, "roles": "moderator"}),
        # Claims that are not text a response or storage can carry, or that would print
        # escape sequences into logs, moderation records and replies.
        _raw({**LIVING, "sub": "ann\ud800"}),
        _raw({**LIVING, "sub": "\x1b[31mann"}),
        _raw({**LIVING, "sub": "ann\u202e"}),
        _raw({**LIVING, "name": "Ann\udfff"}),
        _raw({**LIVING, "name": "\x1b[2JAnn"}),
        _raw({**LIVING, "name": "Ann\u202egnp.exe"}),
        _raw({**LIVING, "name": "x" * 129}),
        _raw({**LIVING, "roles": ["moderator\ud800"]}),
        _raw({**LIVING, "purchases": ["p\ud800"]}),
    ],
    ids=[
        "garbage",
        "expired",
        "other-secret",
        "hs512",
        "alg-none",
        "no-sub",
        "no-exp",
        "roles-not-list",
        "sub-surrogate",
        "sub-ansi",
        "sub-bidi",
        "name-surrogate",
        "name-ansi",
        "name-bidi",
        "name-too-long",
        "role-surrogate",
        "purchase-surrogate",
    ],
)
async def test_bad_tokens_are_unauthenticated(
    api: Api, table: TableRef, product_id: str, bad: str
) -> None:
    assert await api.error_code(CREATE, {"input": _input(product_id)}, bad) == "UNAUTHENTICATED"
    assert (await get_counts(table, product_id, None)).total == 0


@pytest.mark.parametrize(
    ("claims", "message"),
    [
        pytest.param({**LIVING, "exp": str(NOW + 600)}, "exp claim must be a number", id="exp-str"),
        pytest.param({**LIVING, "iat": str(NOW)}, "iat claim must be a number", id="iat-str"),
        pytest.param({**LIVING, "nbf": str(NOW)}, "nbf claim must be a number", id="nbf-str"),
        pytest.param({**LIVING, "exp": True}, "exp claim must be a number", id="exp-bool"),
        pytest.param({**LIVING, "exp": float("inf")}, "exp claim must be a number", id="exp-inf"),
        # 10**12 seconds after 1970: the year 33658.
        pytest.param({**LIVING, "exp": 10**12}, "lifetime", id="exp-year-33658"),
        pytest.param({**LIVING, "iat": NOW - 30 * 86400}, "lifetime", id="issued-a-month-ago"),
        pytest.param({"sub": "ann", "exp": NOW + 600}, "iat", id="no-iat"),
        pytest.param({**LIVING, "iat": NOW + 3600}, "issued in the future", id="iat-future"),
    ],
)
async def test_token_times_are_numbers_within_the_lifetime_cap(
    api: Api, table: TableRef, product_id: str, claims: dict[str, Any], message: str
) -> None:
    body = await api.gql(CREATE, {"input": _input(product_id)}, _raw(claims))
    error = body["errors"][0]
    assert error["extensions"]["code"] == "UNAUTHENTICATED", error
    assert message in error["message"]
    assert (await get_counts(table, product_id, None)).total == 0


async def test_issuer_and_audience_are_required_when_configured(
    table: TableRef, product_id: str
) -> None:
    expected = {"iss": "https://auth.shop.example", "aud": "comments-api"}
    async with running_api(
        table.client, table.name, jwt_issuer=expected["iss"], jwt_audience=expected["aud"]
    ) as strict:
        for claims, message in [
            ({}, "iss"),
            ({"aud": expected["aud"]}, "iss"),
            ({"iss": expected["iss"]}, "aud"),
            ({**expected, "iss": "https://evil.example"}, "issuer"),
            ({**expected, "aud": "another-api"}, "audience"),
        ]:
            body = await strict.gql(
                CREATE, {"input": _input(product_id)}, _raw({**LIVING, **claims})
            )
            error = body["errors"][0]
            assert error["extensions"]["code"] == "UNAUTHENTICATED", (claims, error)
            assert message in error["message"], (claims, error)
        assert (await get_counts(table, product_id, None)).total == 0
        good = _raw({**LIVING, **expected})
        created = await strict.data(CREATE, {"input": _input(product_id)}, good)
        assert created["createComment"]["created"]


# The contract's default page of the leaderboard: topProducts(first: Int! = 10).
TOP_PRODUCTS_DEFAULT = 10


async def test_leaderboard(table: TableRef, product_id: str) -> None:
    # The board spans a whole table, so a table of its own: twelve ranked products (more
    # than the default page), each with a 4-star comment that must not count, and one with
    # 4-star comments only, which has no place on the board.
    own = await own_table(table, "board")
    counts = [4, 11, 1, 7, 12, 2, 9, 3, 10, 5, 8, 6]
    fives = {f"{product_id}-{n}": count for n, count in enumerate(counts)}
    specs = [NewComment(pid, "en", 5, "x", "ann") for pid, n in fives.items() for _ in range(n)]
    specs += [NewComment(pid, "en", 4, "x", "ann") for pid in fives]
    specs += [NewComment(f"{product_id}-none", "en", 4, "x", "ann") for _ in range(13)]
    await create_many(own, specs)
    ranking = sorted(fives.items(), key=lambda kv: -kv[1])
    async with running_api(own.client, own.name) as api:
        data = await api.data(
            "{ topProducts(first: 3) { rank fiveStarCount product { productId } } }"
        )
        got = [
            (r["rank"], r["product"]["productId"], r["fiveStarCount"]) for r in data["topProducts"]
        ]
        assert got == [(n + 1, pid, count) for n, (pid, count) in enumerate(ranking[:3])]
        default = await api.data("{ topProducts { rank product { productId } } }")
        assert [(r["rank"], r["product"]["productId"]) for r in default["topProducts"]] == [
            (n + 1, pid) for n, (pid, _) in enumerate(ranking[:TOP_PRODUCTS_DEFAULT])
        ]
        for bad in (0, 101):
            code = await api.error_code(f"{{ topProducts(first: {bad}) {{ rank }} }}")
            assert code == "BAD_USER_INPUT"


async def test_one_batch_get_for_the_stats_of_ten_products(
    api: Api, table: TableRef, product_id: str
) -> None:
    pids = [f"{product_id}-{n}" for n in range(10)]
    await create_many(
        table, [NewComment(p, "en", 1 + n % 5, "x", "ann") for p in pids for n in range(4)]
    )
    fields = " ".join(
        f'p{n}: product(productId: "{p}") {{ stats {{ total }} en: stats(language: "en") '
        f"{{ total }} lastCommentedAt comments(first: 2) {{ totalCount nodes {{ rating }} }} }}"
        for n, p in enumerate(pids)
    )
    body = await api.gql(f"{{ {fields} }}")
    assert "errors" not in body
    assert all(body["data"][f"p{n}"]["stats"]["total"] == 4 for n in range(10))
    calls = body["extensions"]["storage"]["callsByOperation"]
    # One BatchGetItem for all twenty stats items; one query per page and one (of one item)
    # per lastCommentedAt, which is read from the listing so that it follows deletes.
    assert calls == {"batch_get_item": 1, "query": 20}


async def test_limits_are_query_too_complex(api: Api) -> None:
    nested = "productId"
    for _ in range(5):
        nested = f"product {{ comments {{ nodes {{ {nested} }} }} }}"
    deep = f'{{ product(productId: "p") {{ comments {{ nodes {{ {nested} }} }} }} }}'
    assert await api.error_code(deep) == "QUERY_TOO_COMPLEX"
    aliases = (
        "{ " + " ".join(f'a{n}: product(productId: "p") {{ productId }}' for n in range(40)) + " }"
    )
    assert await api.error_code(aliases) == "QUERY_TOO_COMPLEX"
    tokens = "{ " + " ".join(f"f{n}: __typename" for n in range(1500)) + " }"
    assert await api.error_code(tokens) == "QUERY_TOO_COMPLEX"


async def test_graphiql_and_transport_rules(api: Api) -> None:
    page = await api.http.get("/graphql", headers={"accept": "text/html"})
    assert page.status_code == 200
    assert "graphiql" in page.text.lower()
    over_get = await api.http.get("/graphql", params={"query": "{ __typename }"})
    assert over_get.json()["data"] == {"__typename": "Query"}
    health = await api.http.get("/healthz")
    assert health.json()["status"] == "ok"
    assert health.json()["storage"] == "up"
    response = await api.http.post("/graphql", json={"query": "{ __typename }"})
    assert response.headers["x-request-id"] == response.json()["extensions"]["requestId"]


async def test_syntax_errors_are_bad_user_input(api: Api) -> None:
    assert await api.error_code("{ product(") == "BAD_USER_INPUT"
    assert await api.error_code("{ product(productId: 5) { nope } }") == "BAD_USER_INPUT"


class _Slow(FaultyClient):
    """Queries take longer than the request's storage deadline."""

    async def query(self, **kwargs: Any) -> dict[str, Any]:
        await asyncio.sleep(2)
        return await super().query(**kwargs)


def _boom(name: str, kwargs: dict[str, Any]) -> Exception | None:
    if name == "query":
        return RuntimeError("secret internals: table comments_test index byRating")
    return None


def _throttled(name: str, kwargs: dict[str, Any]) -> Exception | None:
    if name in ("query", "batch_get_item"):
        return client_error("ProvisionedThroughputExceededException", "Query")
    return None


async def test_unexpected_errors_are_masked_with_a_request_id(
    table: TableRef, seeded: list[Comment], seeded_pid: str, caplog: pytest.LogCaptureFixture
) -> None:
    async with running_api(FaultyClient(table.client, _boom), table.name) as broken:
        body = await broken.gql(PAGE, {"pid": seeded_pid, "first": 3})
    error = body["errors"][0]
    request_id = body["extensions"]["requestId"]
    assert error["extensions"] == {"code": "INTERNAL_SERVER_ERROR", "requestId": request_id}
    assert request_id in error["message"]
    assert "secret" not in str(body)
    assert "byRating" not in str(body)
    # The failing field is null with its error; the rest of the response stands.
    assert error["path"] == ["product", "comments"]
    assert body["data"] == {"product": {"comments": None}}
    assert any(request_id in r.getMessage() for r in caplog.records)


async def test_storage_failures_are_storage_unavailable_with_no_partial_page(
    table: TableRef, seeded: list[Comment], seeded_pid: str
) -> None:
    async with running_api(FaultyClient(table.client, _throttled), table.name) as broken:
        body = await broken.gql(PAGE, {"pid": seeded_pid, "ratings": [1, 2, 4], "first": 5})
    assert body["errors"][0]["extensions"] == {"code": "STORAGE_UNAVAILABLE", "retryable": True}
    assert "Throughput" not in str(body)
    # No partial page: the connection is null as a whole, never a page with holes.
    assert body["errors"][0]["path"] == ["product", "comments"]
    assert body["data"] == {"product": {"comments": None}}


async def test_storage_deadline(table: TableRef, seeded: list[Comment], seeded_pid: str) -> None:
    slow = _Slow(table.client, lambda name, kwargs: None)
    async with running_api(slow, table.name, storage_timeout=0.3) as api:
        started = time.monotonic()
        body = await api.gql(PAGE, {"pid": seeded_pid, "first": 3})
        elapsed = time.monotonic() - started
    assert body["errors"][0]["extensions"]["code"] == "STORAGE_UNAVAILABLE"
    assert elapsed < 1.5


def _always_conflicting(name: str, kwargs: dict[str, Any]) -> Exception | None:
    if name == "transact_write_items":
        return cancelled("None", "TransactionConflict", "None")
    return None


async def test_persistent_write_contention_is_conflict(table: TableRef, product_id: str) -> None:
    async with running_api(FaultyClient(table.client, _always_conflicting), table.name) as api:
        body = await api.gql(CREATE, {"input": _input(product_id)}, token())
    assert body["errors"][0]["extensions"] == {
        "code": "CONFLICT",
        "retryable": True,
        "retryAfter": 1,
    }
    assert (await get_counts(table, product_id, None)).total == 0


async def test_readers_see_an_opaque_author_id_and_only_owners_see_the_subject(
    api: Api, product_id: str
) -> None:
    sub = "customer-4711@example.com"
    ids = []
    for n in range(2):
        made = await api.data(
            CREATE, {"input": _input(f"{product_id}-{n}", body=f"n{n}")}, token(sub)
        )
        ids.append(made["createComment"]["comment"]["commentId"])
    query = """query($a: ID!, $b: ID!) {
      a: comment(commentId: $a) { author authorId authorSubject }
      b: comment(commentId: $b) { authorId }
    }"""
    variables = {"a": ids[0], "b": ids[1]}
    anonymous = await api.data(query, variables)
    # No name in the token: a neutral name, never the account id.
    assert anonymous["a"]["author"] == "Anonymous"
    assert anonymous["a"]["authorSubject"] is None
    assert sub not in str(anonymous)
    # Stable: the same author has the same id on every comment, whoever reads.
    assert anonymous["a"]["authorId"] == anonymous["b"]["authorId"]
    other = await api.data(query, variables, token("someone-else"))
    assert other["a"] == anonymous["a"]
    assert (await api.data(query, variables, token(sub)))["a"]["authorSubject"] == sub
    moderator = await api.data(query, variables, token("mod", moderator=True))
    assert moderator["a"]["authorSubject"] == sub
    body = await api.gql(query, variables, "not-a-token")
    assert body["errors"][0]["extensions"]["code"] == "UNAUTHENTICATED"


async def test_write_limits_reach_clients_coded_and_write_nothing(
    table: TableRef, product_id: str
) -> None:
    async with running_api(
        table.client, table.name, comments_per_product=1, comments_per_hour=2
    ) as limited:
        ann = token(f"ann-{product_id}")
        await limited.data(CREATE, {"input": _input(product_id)}, ann)
        payload = (await limited.data(CREATE, {"input": _input(product_id, rating=1)}, ann))[
            "createComment"
        ]
        (problem,) = payload["userErrors"]
        assert (problem["field"], problem["code"]) == (None, "LIMIT_REACHED")
        assert "at most 1 comment" in problem["message"]
        assert payload["comment"] is None
        await limited.data(CREATE, {"input": _input(f"{product_id}-b")}, ann)
        body = await limited.gql(CREATE, {"input": _input(f"{product_id}-c")}, ann)
        error = body["errors"][0]
        assert error["extensions"]["code"] == "RATE_LIMITED"
        assert error["extensions"]["retryable"] is True
        assert 0 < error["extensions"]["retryAfter"] <= 3601
    assert (await get_counts(table, product_id, None)).total == 1
    assert (await get_counts(table, f"{product_id}-c", None)).total == 0


EDIT = """mutation($id: ID!, $body: String!) {
  updateComment(input: {id: $id, body: $body}) { comment { body } userErrors { code } } }"""


async def test_edits_over_the_authors_rate_are_refused_coded_and_change_nothing(
    table: TableRef, product_id: str
) -> None:
    async with running_api(table.client, table.name, edits_per_hour=2) as limited:
        ann, bob = token(f"ann-{product_id}"), token(f"bob-{product_id}")
        ids = []
        for author, pid in ((ann, product_id), (bob, f"{product_id}-b")):
            made = await limited.data(CREATE, {"input": _input(pid)}, author)
            ids.append(made["createComment"]["comment"]["commentId"])
        for n in range(2):
            edited = await limited.data(EDIT, {"id": ids[0], "body": f"edit {n}"}, ann)
            assert edited["updateComment"]["comment"]["body"] == f"edit {n}"
        body = await limited.gql(EDIT, {"id": ids[0], "body": "one too many"}, ann)
        error = body["errors"][0]
        assert error["extensions"]["code"] == "RATE_LIMITED"
        assert error["extensions"]["retryable"] is True
        assert 0 < error["extensions"]["retryAfter"] <= 2 * 3600
        assert "at most 2 edits per hour" in error["message"]
        read = """query($id: ID!) { comment(commentId: $id) { body } }"""
        assert (await limited.data(read, {"id": ids[0]}))["comment"]["body"] == "edit 1"
        # Another author's edits have a rate of their own.
        edited = await limited.data(EDIT, {"id": ids[1], "body": "bob's edit"}, bob)
        assert edited["updateComment"]["comment"]["body"] == "bob's edit"
        # Other families too: votes are not edits.
        vote = """mutation($id: ID!) { voteHelpful(input: {id: $id, vote: HELPFUL}) {
          comment { helpfulCount } } }"""
        voted = await limited.data(vote, {"id": ids[1]}, ann)
        assert voted["voteHelpful"]["comment"]["helpfulCount"] == 1


async def test_an_idempotency_key_reused_for_another_comment_is_a_conflict(
    api: Api, product_id: str
) -> None:
    ann = token(f"ann-{product_id}")
    first = await api.data(CREATE, {"input": _input(product_id, idempotencyKey="k")}, ann)
    again = await api.data(CREATE, {"input": _input(product_id, idempotencyKey="k")}, ann)
    assert again["createComment"]["created"] is False
    assert again["createComment"]["comment"] == first["createComment"]["comment"]
    payload = (
        await api.data(CREATE, {"input": _input(product_id, body="Other", idempotencyKey="k")}, ann)
    )["createComment"]
    (problem,) = payload["userErrors"]
    assert (problem["field"], problem["code"]) == (
        ["input", "idempotencyKey"],
        "IDEMPOTENCY_KEY_REUSED",
    )
    assert "idempotency key" in problem["message"]
    assert (payload["created"], payload["comment"]) == (False, None)


SIBLINGS = """query($pid: ID!, $after: String) {
  product(productId: $pid) {
    stats { total }
    comments(first: 2, after: $after) { totalCount nodes { commentId } }
    lastCommentedAt
  }
  topProducts(first: 3) { rank }
}"""


async def test_a_bad_cursor_nulls_its_field_and_leaves_the_siblings(
    api: Api, seeded: list[Comment], seeded_pid: str
) -> None:
    good = await api.data(SIBLINGS, {"pid": seeded_pid})
    body = await api.gql(SIBLINGS, {"pid": seeded_pid, "after": "not-a-cursor"})
    (error,) = body["errors"]
    assert error["path"] == ["product", "comments"]
    assert error["extensions"]["code"] == "BAD_USER_INPUT"
    assert body["data"]["product"]["comments"] is None
    assert body["data"]["product"]["stats"] == good["product"]["stats"] == {"total": len(seeded)}
    assert body["data"]["product"]["lastCommentedAt"] == good["product"]["lastCommentedAt"]
    assert body["data"]["topProducts"] == good["topProducts"]


def _listing_fails(name: str, kwargs: dict[str, Any]) -> Exception | None:
    # The listing's own queries fail; counters (BatchGetItem) and the leaderboard (a query
    # of the LEADERS partition) answer.
    values = kwargs.get("ExpressionAttributeValues", {}).values()
    if name == "query" and not any(v.get("S") == "LEADERS" for v in values):
        return client_error("ProvisionedThroughputExceededException", "Query")
    return None


async def test_a_storage_failure_nulls_its_field_and_leaves_the_siblings(
    table: TableRef, seeded: list[Comment], seeded_pid: str
) -> None:
    async with running_api(FaultyClient(table.client, _listing_fails), table.name) as broken:
        body = await broken.gql(SIBLINGS, {"pid": seeded_pid})
    paths = {tuple(e["path"]): e["extensions"]["code"] for e in body["errors"]}
    assert paths == {
        ("product", "comments"): "STORAGE_UNAVAILABLE",
        ("product", "lastCommentedAt"): "STORAGE_UNAVAILABLE",
    }
    product = body["data"]["product"]
    assert (product["comments"], product["lastCommentedAt"]) == (None, None)
    assert product["stats"] == {"total": len(seeded)}
    assert isinstance(body["data"]["topProducts"], list)


async def test_a_created_comment_comes_back_as_the_edge_its_listing_shows(
    api: Api, product_id: str
) -> None:
    made = (await api.data(CREATE, {"input": _input(product_id)}, token()))["createComment"]
    page = await api.data(PAGE, {"pid": product_id, "first": 1})
    (edge,) = page["product"]["comments"]["edges"]
    assert made["commentEdge"]["cursor"] == edge["cursor"]
    assert made["commentEdge"]["node"]["id"] == made["comment"]["id"]


EXPLAINED = """query($pid: ID!) {
  product(productId: $pid) { comments(first: 1) { totalCount plan { strategy rounds } } }
}"""


async def test_plans_are_shown_only_where_exposed_and_always_to_moderators(
    table: TableRef, seeded: list[Comment], seeded_pid: str
) -> None:
    async with running_api(table.client, table.name, explain=False) as closed:
        hidden = await closed.data(EXPLAINED, {"pid": seeded_pid})
        assert hidden["product"]["comments"] == {"totalCount": len(seeded), "plan": None}
        assert (await closed.data(EXPLAINED, {"pid": seeded_pid}, token("ann")))["product"][
            "comments"
        ]["plan"] is None
        shown = await closed.data(EXPLAINED, {"pid": seeded_pid}, token("m", moderator=True))
        assert shown["product"]["comments"]["plan"] == {"strategy": "ALL", "rounds": 1}
        # A bad token hides the plan; it does not fail the page.
        body = await closed.gql(EXPLAINED, {"pid": seeded_pid}, "not-a-token")
        assert body["data"]["product"]["comments"]["totalCount"] == len(seeded)
        assert body["data"]["product"]["comments"]["plan"] is None
    async with running_api(table.client, table.name) as development:
        plan = (await development.data(EXPLAINED, {"pid": seeded_pid}))["product"]["comments"]
        assert plan["plan"] == {"strategy": "ALL", "rounds": 1}


async def test_an_invalid_id_in_nodes_nulls_its_own_entry_only(
    api: Api, seeded: list[Comment], seeded_pid: str
) -> None:
    product_gid = base64.b64encode(f"Product:{seeded_pid}".encode()).decode()
    comment_gid = base64.b64encode(f"Comment:{seeded[0].comment_id}".encode()).decode()
    body = await api.gql(
        'query($ids: [ID!]!) { nodes(ids: $ids) { id } product(productId: "ok-1") { productId } }',
        {"ids": [product_gid, "%%%", comment_gid]},
    )
    (error,) = body["errors"]
    assert (error["path"], error["extensions"]["code"]) == (["nodes", 1], "BAD_USER_INPUT")
    assert body["data"]["nodes"] == [{"id": product_gid}, None, {"id": comment_gid}]
    assert body["data"]["product"] == {"productId": "ok-1"}


@pytest.mark.parametrize(
    "document",
    [
        "mutation($a: CreateCommentInput!, $b: CreateCommentInput!) {"
        " a: createComment(input: $a) { created } b: createComment(input: $b) { created } }",
        "mutation($a: CreateCommentInput!, $b: CreateCommentInput!) {"
        " a: createComment(input: $a) { created } ... on Mutation {"
        " b: createComment(input: $b) { created } } }",
        "mutation($a: CreateCommentInput!, $b: CreateCommentInput!) {"
        " ...One b: createComment(input: $b) { created } }"
        " fragment One on Mutation { a: createComment(input: $a) { created } }",
    ],
    ids=["aliases", "inline fragment", "named fragment"],
)
async def test_one_mutation_per_request_so_no_write_hides_behind_a_failed_one(
    api: Api, table: TableRef, product_id: str, document: str
) -> None:
    variables = {"a": _input(product_id), "b": _input(f"{product_id}-b")}
    body = await api.gql(document, variables, token())
    assert body["errors"][0]["extensions"]["code"] == "BAD_USER_INPUT"
    assert "one mutation" in body["errors"][0]["message"]
    assert body.get("data") is None
    assert (await get_counts(table, product_id, None)).total == 0
    # One mutation (with __typename beside it) runs as always.
    one = await api.data(
        "mutation($a: CreateCommentInput!) { __typename a: createComment(input: $a) { created } }",
        {"a": _input(product_id)},
        token(),
    )
    assert one["a"]["created"] is True


async def test_a_filtered_page_asked_again_takes_one_storage_round(
    api: Api, table: TableRef, product_id: str
) -> None:
    # The process's memory of counters and heads outlives a request: the first request
    # for the product waits for its counters, the same page asked again does not.
    ratings = [1, 2, 3, 5]
    await create_many(
        table,
        (
            NewComment(product_id, "en", ratings[n % 4], f"c{n}", f"u{n}", created_at=stamp(n))
            for n in range(30)
        ),
    )
    query = """query($pid: ID!) { product(productId: $pid) {
        comments(ratings: [1, 2, 3], first: 5) {
          totalCount nodes { commentId } plan { strategy itemsRead rounds storageRounds } } } }"""
    first = (await api.data(query, {"pid": product_id}))["product"]["comments"]
    again = (await api.data(query, {"pid": product_id}))["product"]["comments"]
    assert first["plan"]["storageRounds"] == first["plan"]["rounds"] + 1
    assert again["plan"]["storageRounds"] == 1
    assert again["nodes"] == first["nodes"]
    assert again["totalCount"] == first["totalCount"] == sum(1 for n in range(30) if n % 4 != 3)
    # The page (5), the item past it, and one past the page from each other partition.
    assert again["plan"]["itemsRead"] == 6 + 2


async def test_answers_are_bounded_in_bytes(table: TableRef) -> None:
    # Thirty aliases of a product with a long id: within every other limit, but more bytes
    # than MAX_RESPONSE_BYTES allows.
    long_id = "sku-" + "x" * 60
    many = " ".join(f'a{n}: product(productId: "{long_id}") {{ productId }}' for n in range(30))
    async with running_api(table.client, table.name, max_response_bytes=1024) as small:
        one = await small.data(f'{{ product(productId: "{long_id}") {{ productId }} }}')
        assert one["product"]["productId"] == long_id
        response = await small.http.post("/graphql", json={"query": f"{{ {many} }}"})
        assert response.status_code == 200
        assert response.headers["cache-control"] == "no-store"
        body = response.json()
        assert body["data"] is None
        (error,) = body["errors"]
        assert error["extensions"]["code"] == "QUERY_TOO_COMPLEX"
        assert error["extensions"]["maxBytes"] == 1024
        assert error["extensions"]["bytes"] > 1024
        assert "at most 1024 are allowed (MAX_RESPONSE_BYTES)" in error["message"]
        assert len(response.content) < 1024
        # Over GET, the refusal is kept by no cache either.
        got = await small.http.get("/graphql", params={"query": f"{{ {many} }}"})
        assert got.json()["errors"][0]["extensions"]["code"] == "QUERY_TOO_COMPLEX"
        assert got.headers["cache-control"] == "no-store"


async def test_a_subscription_over_http_is_a_request_error(table: TableRef) -> None:
    query = 'subscription { commentEvents(productId: "p") { kind } }'
    async with running_api(table.client, table.name) as api:
        for accept in ("application/json", "application/graphql-response+json"):
            response = await api.http.post(
                "/graphql", json={"query": query}, headers={"accept": accept}
            )
            body = response.json()
            assert body["errors"][0]["extensions"]["code"] == "BAD_USER_INPUT", body
            assert "WebSocket" in body["errors"][0]["message"]
        assert response.status_code == 400  # graphql-response+json: nothing was executed
        got = await api.http.get("/graphql", params={"query": query})
        assert got.json()["errors"][0]["extensions"]["code"] == "BAD_USER_INPUT"
