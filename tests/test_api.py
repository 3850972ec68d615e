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
from storage.model import Comment, ListingFilter, NewComment
from storage.reads import get_counts
from storage.table import TableRef
from tests.api_helpers import SECRET, Api, running_api, token
from tests.helpers import FaultyClient, cancelled, client_error, create_many, oracle, stamp

CREATE = """
mutation($input: CreateCommentInput!) {
  createComment(input: $input) {
    created
    comment { id commentId productId rating language title body author authorId createdAt
              product { productId stats { total } } }
  }
}"""
DELETE = """
mutation($id: ID!) {
  deleteComment(input: {id: $id}) { deletedId product { productId stats { total } } }
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


@pytest.fixture
async def seeded(table: TableRef, product_id: str) -> list[Comment]:
    specs = [
        NewComment(
            product_id,
            ["en", "de", "fr"][n % 3],
            [5, 4, 5, 1, 2, 5, 4][n % 7],
            f"body {n}",
            f"user{n % 4}",
            title=f"t{n}",
            created_at=stamp(n % 11),
        )
        for n in range(45)
    ]
    return await create_many(table, specs)


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
    api: Api, seeded: list[Comment], product_id: str
) -> None:
    data = await api.data(
        """query($pid: ID!) { product(productId: $pid) {
             all: stats { total average histogram { rating count } }
             de: stats(language: "DE") { language total histogram { rating count } }
             lastCommentedAt } }""",
        {"pid": product_id},
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
    product_id: str,
    language: str | None,
    ratings: list[int] | None,
    size: int,
) -> None:
    expected = [
        c.comment_id
        for c in oracle(seeded, ListingFilter(product_id, language, frozenset(ratings or [])))
    ]
    base = {"pid": product_id, "language": language, "ratings": ratings}
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


async def test_plan_is_explained(api: Api, seeded: list[Comment], product_id: str) -> None:
    conn = (await api.data(PAGE, {"pid": product_id, "ratings": [1, 2, 3], "first": 5}))["product"][
        "comments"
    ]
    plan = conn["plan"]
    assert plan["strategy"] in {"FAN_OUT", "FILTERED_SCAN_OF_INDEX"}
    assert plan["skippedRatings"] == [3]
    assert plan["itemsRead"] == sum(q["itemsRead"] for q in plan["queries"])
    assert plan["itemsRead"] >= len(conn["edges"])
    assert all(q["partitionKey"].startswith(f"PRODUCT#{product_id}") for q in plan["queries"])
    assert "skipped ratings [3]" in plan["explain"]
    empty = (await api.data(PAGE, {"pid": product_id, "ratings": [3], "first": 5}))["product"][
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


async def test_comment_node_and_nodes(api: Api, seeded: list[Comment], product_id: str) -> None:
    target = seeded[0]
    query = """query($cid: ID!, $ids: [ID!]!, $nid: ID!) {
      comment(commentId: $cid) { id commentId productId rating language title body author
                                 authorId createdAt product { productId } }
      missing: comment(commentId: "absent") { id }
      node(id: $nid) { id ... on Comment { commentId } }
      nodes(ids: $ids) { id ... on Product { productId } ... on Comment { commentId } }
    }"""
    comment_gid = base64.b64encode(f"Comment:{target.comment_id}".encode()).decode()
    product_gid = base64.b64encode(f"Product:{product_id}".encode()).decode()
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
        product_id,
        target.rating,
        target.language,
    )
    assert (c["title"], c["body"], c["authorId"], c["createdAt"]) == (
        target.title,
        target.body,
        public_author_id(author_key(SECRET), target.author_id),
        target.created_at,
    )
    assert c["product"] == {"productId": product_id}
    assert data["missing"] is None
    assert data["node"] == {"id": comment_gid, "commentId": target.comment_id}
    assert data["nodes"] == [
        {"id": product_gid, "productId": product_id},
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

    assert await api.error_code(DELETE, {"id": comment["id"]}) == "UNAUTHENTICATED"
    assert await api.error_code(DELETE, {"id": comment["id"]}, token("bob")) == "FORBIDDEN"
    deleted = await api.data(DELETE, {"id": comment["commentId"]}, ann)
    assert deleted["deleteComment"]["deletedId"] == comment["id"]
    assert deleted["deleteComment"]["product"]["stats"]["total"] == 0
    assert await api.error_code(DELETE, {"id": comment["id"]}, ann) == "NOT_FOUND"

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
    "overrides",
    [
        {"rating": 0},
        {"rating": 6},
        {"language": "english"},
        {"language": "en/5"},
        {"body": ""},
        {"body": "   "},
        {"body": "x" * 10_001},
        {"title": "t" * 201},
        {"productId": "a#b"},
        {"productId": "x" * 129},
    ],
)
async def test_invalid_input_writes_nothing(
    api: Api, table: TableRef, product_id: str, overrides: dict[str, Any]
) -> None:
    code = await api.error_code(CREATE, {"input": _input(product_id, **overrides)}, token())
    assert code == "BAD_USER_INPUT"
    assert (await get_counts(table, product_id, None)).total == 0


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


async def test_leaderboard(api: Api, table: TableRef) -> None:
    data = await api.data("{ topProducts(first: 3) { rank fiveStarCount product { productId } } }")
    ranks = data["topProducts"]
    assert [r["rank"] for r in ranks] == list(range(1, len(ranks) + 1))
    counts = [r["fiveStarCount"] for r in ranks]
    assert counts == sorted(counts, reverse=True)
    for r in ranks:
        stats = await get_counts(table, r["product"]["productId"], None)
        assert stats.count(5) == r["fiveStarCount"]
    default = await api.data("{ topProducts { rank } }")
    assert len(default["topProducts"]) <= 10
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
    assert health.json() == {"status": "ok", "storage": "up"}
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
    table: TableRef, seeded: list[Comment], product_id: str, caplog: pytest.LogCaptureFixture
) -> None:
    async with running_api(FaultyClient(table.client, _boom), table.name) as broken:
        body = await broken.gql(PAGE, {"pid": product_id, "first": 3})
    error = body["errors"][0]
    request_id = body["extensions"]["requestId"]
    assert error["extensions"] == {"code": "INTERNAL_SERVER_ERROR", "requestId": request_id}
    assert request_id in error["message"]
    assert "secret" not in str(body)
    assert "byRating" not in str(body)
    assert body["data"] is None
    assert any(request_id in r.getMessage() for r in caplog.records)


async def test_storage_failures_are_storage_unavailable_with_no_partial_page(
    table: TableRef, seeded: list[Comment], product_id: str
) -> None:
    async with running_api(FaultyClient(table.client, _throttled), table.name) as broken:
        body = await broken.gql(PAGE, {"pid": product_id, "ratings": [1, 2, 4], "first": 5})
    assert body["errors"][0]["extensions"] == {"code": "STORAGE_UNAVAILABLE", "retryable": True}
    assert "Throughput" not in str(body)
    assert body["data"] is None


async def test_storage_deadline(table: TableRef, seeded: list[Comment], product_id: str) -> None:
    slow = _Slow(table.client, lambda name, kwargs: None)
    async with running_api(slow, table.name, storage_timeout=0.3) as api:
        started = time.monotonic()
        body = await api.gql(PAGE, {"pid": product_id, "first": 3})
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
    assert body["errors"][0]["extensions"] == {"code": "CONFLICT", "retryable": True}
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
        body = await limited.gql(CREATE, {"input": _input(product_id, rating=1)}, ann)
        error = body["errors"][0]
        assert error["extensions"]["code"] == "LIMIT_REACHED"
        assert "at most 1 comment" in error["message"]
        await limited.data(CREATE, {"input": _input(f"{product_id}-b")}, ann)
        body = await limited.gql(CREATE, {"input": _input(f"{product_id}-c")}, ann)
        error = body["errors"][0]
        assert error["extensions"]["code"] == "RATE_LIMITED"
        assert error["extensions"]["retryable"] is True
        assert 0 < error["extensions"]["retryAfter"] <= 3601
    assert (await get_counts(table, product_id, None)).total == 1
    assert (await get_counts(table, f"{product_id}-c", None)).total == 0


async def test_an_idempotency_key_reused_for_another_comment_is_a_conflict(
    api: Api, product_id: str
) -> None:
    ann = token(f"ann-{product_id}")
    first = await api.data(CREATE, {"input": _input(product_id, idempotencyKey="k")}, ann)
    again = await api.data(CREATE, {"input": _input(product_id, idempotencyKey="k")}, ann)
    assert again["createComment"]["created"] is False
    assert again["createComment"]["comment"] == first["createComment"]["comment"]
    body = await api.gql(
        CREATE, {"input": _input(product_id, body="Other", idempotencyKey="k")}, ann
    )
    assert body["errors"][0]["extensions"]["code"] == "CONFLICT"
    assert "idempotency key" in body["errors"][0]["message"]
