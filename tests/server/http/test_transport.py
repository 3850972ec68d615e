"""GraphQL over HTTP: media types from the Accept header, the status of each kind of result in
each, queries over GET, mutations over GET refused, and the request errors of the spec."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

from server.http.transport import GRAPHQL_RESPONSE_JSON, JSON, negotiate
from tests.api_helpers import Api

GRJ = {"accept": GRAPHQL_RESPONSE_JSON}
LEGACY = {"accept": JSON}


@pytest.mark.parametrize(
    ("accept", "expected"),
    [
        (None, JSON),
        ("", JSON),
        ("*/*", JSON),
        ("application/*", JSON),
        (JSON, JSON),
        (GRAPHQL_RESPONSE_JSON, GRAPHQL_RESPONSE_JSON),
        (f"{GRAPHQL_RESPONSE_JSON}, {JSON};q=0.9", GRAPHQL_RESPONSE_JSON),
        (f"{JSON}, {GRAPHQL_RESPONSE_JSON}", GRAPHQL_RESPONSE_JSON),
        (f"{GRAPHQL_RESPONSE_JSON};q=0.5, {JSON}", JSON),
        (f"{GRAPHQL_RESPONSE_JSON}; charset=utf-8, {JSON}; charset=utf-8", GRAPHQL_RESPONSE_JSON),
        (f"{GRAPHQL_RESPONSE_JSON}, */*;q=0.1", GRAPHQL_RESPONSE_JSON),
        (f"{GRAPHQL_RESPONSE_JSON};q=0, */*", JSON),
        (f"{JSON};q=0, */*", GRAPHQL_RESPONSE_JSON),
        ("text/html, application/xhtml+xml, */*;q=0.8", JSON),
        ("APPLICATION/JSON", JSON),
        ("text/html", None),
        ("application/xml, text/plain", None),
        (f"{JSON};q=0", None),
        (f"{JSON};q=abc", None),
        (f"{JSON};charset=latin1", None),
        ("garbage", None),
    ],
)
def test_negotiate(accept: str | None, expected: str | None) -> None:
    assert negotiate(accept) == expected


async def post(api: Api, body: Any, headers: dict[str, str]) -> httpx.Response:
    return await api.http.post("/graphql", json=body, headers=headers)


def code_of(response: httpx.Response) -> str:
    code: str = response.json()["errors"][0]["extensions"]["code"]
    return code


REQUEST_ERRORS = {
    "parse": {"query": "{ product("},
    "validation": {"query": "{ noSuchField }"},
    "variable-coercion": {"query": "query($id: ID!) { __typename }", "variables": {"id": None}},
    "several-operations": {"query": "query A { __typename } query B { __typename }"},
    "unknown-operation": {"query": "query A { __typename }", "operationName": "B"},
    "fragment-only": {"query": "fragment F on Query { __typename }"},
    "subscription": {"query": "subscription { __typename }"},
}


@pytest.mark.parametrize("name", list(REQUEST_ERRORS))
@pytest.mark.parametrize(
    ("accept", "status"),
    [(GRJ, 400), (LEGACY, 200)],
    ids=["graphql-response+json: 400 without data", "application/json: 200 with null data"],
)
async def test_request_errors_by_media_type(
    api: Api, name: str, accept: dict[str, str], status: int
) -> None:
    response = await post(api, REQUEST_ERRORS[name], accept)
    assert response.status_code == status, response.text
    assert response.headers["content-type"] == f"{accept['accept']}; charset=utf-8"
    body = response.json()
    if accept is GRJ:
        assert "data" not in body
    else:
        assert body["data"] is None
    assert code_of(response) == "BAD_USER_INPUT"


async def test_a_request_refused_for_its_cost_is_a_request_error(api: Api) -> None:
    heavy = (
        "{ topProducts(first: 60) { product {"
        " comments(ratings: [1, 2, 3, 4], first: 100) { totalCount } } } }"
    )
    response = await post(api, {"query": heavy}, GRJ)
    assert response.status_code == 400
    assert "data" not in response.json()
    assert code_of(response) == "QUERY_TOO_COMPLEX"
    legacy = await post(api, {"query": heavy}, LEGACY)
    assert legacy.status_code == 200
    assert legacy.json()["data"] is None


async def test_field_errors_keep_data_and_200(api: Api) -> None:
    response = await post(api, {"query": '{ product(productId: "a/b") { productId } }'}, GRJ)
    assert response.status_code == 200
    body = response.json()
    assert "data" in body
    assert body["errors"][0]["extensions"]["code"] == "BAD_USER_INPUT"


async def test_success_in_either_media_type(api: Api) -> None:
    for headers, media_type in [(GRJ, GRAPHQL_RESPONSE_JSON), (LEGACY, JSON), ({}, JSON)]:
        response = await post(api, {"query": "{ __typename }"}, headers)
        assert response.status_code == 200
        assert response.headers["content-type"] == f"{media_type}; charset=utf-8"
        assert response.json()["data"] == {"__typename": "Query"}


async def test_no_accept_header_is_application_json(api: Api) -> None:
    request = api.http.build_request("POST", "/graphql", json={"query": "{"})
    del request.headers["accept"]
    response = await api.http.send(request)
    assert response.status_code == 200
    assert response.headers["content-type"].startswith(JSON)


@pytest.mark.parametrize("method", ["GET", "POST"])
async def test_nothing_acceptable_is_406(api: Api, method: str) -> None:
    response = await api.http.request(
        method,
        "/graphql",
        params={"query": "{ __typename }"} if method == "GET" else None,
        json={"query": "{ __typename }"} if method == "POST" else None,
        headers={"accept": "application/xml"},
    )
    assert response.status_code == 406
    assert code_of(response) == "BAD_USER_INPUT"


async def test_queries_over_get_with_every_parameter(api: Api) -> None:
    params = {
        "query": "query A { __typename } "
        "query Named($n: String!) { t: __typename v: __type(name: $n) { name } }",
        "operationName": "Named",
        "variables": json.dumps({"n": "Query"}),
        "extensions": json.dumps({"some": "value"}),
    }
    for headers in (GRJ, LEGACY):
        response = await api.http.get("/graphql", params=params, headers=headers)
        assert response.status_code == 200, response.text
        assert response.json()["data"] == {"t": "Query", "v": {"name": "Query"}}


@pytest.mark.parametrize(
    "params",
    [
        {"query": "{ __typename }", "variables": "{"},
        {"query": "{ __typename }", "variables": "[1]"},
        {"query": "{ __typename }", "extensions": "7"},
        {"variables": "{}"},
    ],
    ids=["bad-json", "variables-list", "extensions-number", "no-query"],
)
async def test_get_requests_that_are_not_well_formed_are_400(
    api: Api, params: dict[str, str]
) -> None:
    for headers in (GRJ, LEGACY):
        response = await api.http.get("/graphql", params=params, headers=headers)
        assert response.status_code == 400, response.text
        assert code_of(response) == "BAD_USER_INPUT"


@pytest.mark.parametrize(
    "params",
    [
        {"query": 'mutation { deleteComment(input: {id: "x"}) { deletedId } }'},
        {"query": "query Q { __typename } mutation M { __typename }", "operationName": "M"},
    ],
)
async def test_mutations_over_get_are_405_allow_post(api: Api, params: dict[str, str]) -> None:
    for headers in (GRJ, LEGACY):
        response = await api.http.get("/graphql", params=params, headers=headers)
        assert response.status_code == 405
        assert response.headers["allow"] == "POST"
        assert code_of(response) == "BAD_USER_INPUT"


async def test_several_operations_unnamed_over_get_is_a_request_error_not_a_405(api: Api) -> None:
    params = {"query": "mutation M { __typename } query Q { __typename }"}
    response = await api.http.get("/graphql", params=params, headers=GRJ)
    assert response.status_code == 400
    assert "operationName" in response.json()["errors"][0]["message"]


async def test_other_methods_are_405_allow_get_post(api: Api) -> None:
    response = await api.http.put("/graphql", json={"query": "{ __typename }"})
    assert response.status_code == 405
    assert response.headers["allow"] == "GET, POST"


@pytest.mark.parametrize("name", [{"a": 1}, 0, False, ["Q"]], ids=str)
async def test_a_non_string_operation_name_is_400(api: Api, name: object) -> None:
    for headers in (GRJ, LEGACY):
        response = await post(
            api, {"query": "query Q { __typename }", "operationName": name}, headers
        )
        assert response.status_code == 400
        assert code_of(response) == "BAD_USER_INPUT"


async def test_an_empty_operation_name_is_none(api: Api) -> None:
    response = await post(api, {"query": "{ __typename }", "operationName": ""}, GRJ)
    assert response.status_code == 200
    assert response.json()["data"] == {"__typename": "Query"}


@pytest.mark.parametrize(
    "content_type",
    [None, "text/plain", "application/x-www-form-urlencoded", "application/json; charset=utf-16"],
)
async def test_post_bodies_other_than_json_are_415(api: Api, content_type: str | None) -> None:
    request = api.http.build_request("POST", "/graphql", content=b'{"query": "{ __typename }"}')
    if content_type is not None:
        request.headers["content-type"] = content_type
    response = await api.http.send(request)
    assert response.status_code == 415
    assert code_of(response) == "BAD_USER_INPUT"


@pytest.mark.parametrize(
    "content_type",
    ["APPLICATION/JSON", "Application/Json; Charset=UTF-8", "application/json;charset=utf8"],
)
async def test_media_types_are_case_insensitive(api: Api, content_type: str) -> None:
    request = api.http.build_request("POST", "/graphql", content=b'{"query": "{ __typename }"}')
    request.headers["content-type"] = content_type
    response = await api.http.send(request)
    assert response.status_code == 200, response.text
    assert response.json()["data"] == {"__typename": "Query"}


@pytest.mark.parametrize(
    ("body", "status"),
    [
        (b'{"query": ', 400),
        (b'{"qeury": "{ __typename }"}', 400),
        (b'{"query": {"obj": "ect"}}', 400),
        (b'{"query": "{ __typename }", "variables": "x"}', 400),
        (b'{"query": "{ __typename }", "extensions": 0}', 400),
    ],
)
async def test_bodies_that_are_not_well_formed_are_400_in_both(
    api: Api, body: bytes, status: int
) -> None:
    for accept, media_type in ((GRAPHQL_RESPONSE_JSON, GRAPHQL_RESPONSE_JSON), (JSON, JSON)):
        response = await api.http.post(
            "/graphql", content=body, headers={"content-type": JSON, "accept": accept}
        )
        assert response.status_code == status
        assert response.headers["content-type"].startswith(media_type)
        assert ("data" in response.json()) == (media_type == JSON)
        assert code_of(response) == "BAD_USER_INPUT"
