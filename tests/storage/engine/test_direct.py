"""The short way of the hot reads (storage.engine.direct): botocore's signature, botocore's answers,
botocore's errors and retries."""

from __future__ import annotations

import calendar
import zlib
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import replace
from typing import Any

import pytest
from aiohttp import web
from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials as BotocoreCredentials
from botocore.exceptions import ClientError
from botocore.exceptions import EndpointConnectionError as EngineUnreachable

from server.dev.local_engine import LocalEngine
from storage.base.errors import EngineFault, TableMissing, Throttled
from storage.base.types import Response
from storage.engine.client import ClientSettings, open_client
from storage.engine.direct import OPERATIONS, Credentials, DirectReads, SigV4, Target
from storage.engine.table import TableRef
from storage.model.comments import ListingFilter, NewComment, PageRequest
from storage.reads.reader import batch_get_counts, list_comments
from storage.writes import create_comment

CONTENT_TYPE = "application/x-amz-json-1.0"
MOMENT = calendar.timegm((2026, 11, 23, 18, 5, 9))


def _botocore_headers(
    target: Target, credentials: Credentials, amz_target: str, body: bytes
) -> dict[str, str]:
    """What botocore's SigV4 signer makes of the same request at MOMENT."""
    request = AWSRequest(
        method="POST",
        url=target.url,
        data=body,
        headers={"X-Amz-Target": amz_target, "Content-Type": CONTENT_TYPE, "User-Agent": "x"},
    )
    signer = SigV4Auth(
        BotocoreCredentials(credentials.access_key, credentials.secret_key, credentials.token),
        target.service,
        target.region,
    )
    # add_auth without its clock: the same steps at a fixed moment.
    request.context["timestamp"] = "20261123T180509Z"
    signer._modify_request_before_signing(request)
    canonical = signer.canonical_request(request)
    signature = signer.signature(signer.string_to_sign(request, canonical), request)
    signer._inject_signature_to_request(request, signature)
    return {k: v for k, v in request.headers.items() if k != "User-Agent"}


@pytest.mark.parametrize(
    "url",
    [
        "http://127.0.0.1:8001",
        "http://localhost:8000/",
        "http://LocalHost:80",
        "https://dynamodb.eu-west-1.amazonaws.com",
        "https://dynamodb.eu-west-1.amazonaws.com:443/",
        "http://[::1]:8000",
    ],
)
@pytest.mark.parametrize("token", [None, "FwoGZXIvYXdzE  session/token=="])
@pytest.mark.parametrize("operation", sorted(OPERATIONS.values()))
def test_signature_is_botocores(url: str, token: str | None, operation: str) -> None:
    target = Target(url, "eu-west-1", "dynamodb")
    credentials = Credentials("AKIDEXAMPLE", "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY", token)
    body = b'{"TableName":"comments","Key":{"PK":{"S":"P#\xc3\xa9 x"}}}'
    amz_target = f"DynamoDB_20120810.{operation}"
    ours = SigV4(target, CONTENT_TYPE).headers(credentials, amz_target, body, MOMENT)
    assert ours == _botocore_headers(target, credentials, amz_target, body)


def test_the_signing_key_is_derived_once_a_day_and_per_secret() -> None:
    signer = SigV4(Target("http://127.0.0.1:8001", "us-east-1", "dynamodb"), CONTENT_TYPE)
    first = signer.signing_key("secret", "20261123")
    assert signer.signing_key("secret", "20261123") is first
    assert signer.signing_key("secret", "20261124") != first
    assert signer.signing_key("other", "20261124") != signer.signing_key("secret", "20261124")


def _comparable(response: Response) -> Response:
    """A response without what differs from one call to the next (request id, date)."""
    metadata = dict(response.get("ResponseMetadata", {}))
    metadata.pop("RequestId", None)
    headers = metadata.pop("HTTPHeaders", {})
    assert headers, "the response carries its HTTP headers"
    return {**response, "ResponseMetadata": metadata}


SWITCHES: list[dict[str, Any]] = [
    {},
    {"direct_reads": False},
    {"static_user_agent": False},
    {"fast_attribute_parsing": False},
    {"fast_attribute_parsing": False, "direct_reads": False},
    {"direct_reads": False, "static_user_agent": False},
]


@asynccontextmanager
async def _table(
    engine: LocalEngine, name: str, switches: dict[str, Any]
) -> AsyncIterator[TableRef]:
    settings = replace(ClientSettings(endpoint_url=engine.endpoint_url), **switches)
    async with open_client(settings) as client:
        assert isinstance(client, DirectReads) == settings.direct_reads
        yield TableRef(client, name)


async def test_every_switch_gives_the_same_answers(
    engine: LocalEngine, table: TableRef, product_id: str
) -> None:
    for n in range(14):
        await create_comment(table, NewComment(product_id, "en", 1 + n % 5, f"body {n} ✓", "a"))
    listing = ListingFilter(product_id, None, frozenset({1, 2, 4}))
    answers = []
    for switches in SWITCHES:
        async with _table(engine, table.name, switches) as switched:
            pages = [await list_comments(switched, listing, PageRequest(size)) for size in (3, 20)]
            counts = await batch_get_counts(switched, [(product_id, None), (product_id, "en")])
            raw = [
                _comparable(await switched.client.get_item(TableName=table.name, Key=key))
                for key in ({"PK": {"S": "nothing"}, "SK": {"S": "here"}},)
            ]
            answers.append((pages, counts, raw))
    assert all(answer == answers[0] for answer in answers[1:])
    assert len(answers[0][0][1].comments) == sum(1 for n in range(14) if 1 + n % 5 in (1, 2, 4))


async def test_raw_answers_are_botocores(
    engine: LocalEngine, table: TableRef, product_id: str
) -> None:
    await create_comment(table, NewComment(product_id, "de", 4, "gut", "a"))
    pk = {"S": f"P#{product_id}"}
    calls: list[tuple[str, dict[str, Any]]] = [
        (
            "batch_get_item",
            {
                "RequestItems": {table.name: {"Keys": [{"PK": pk, "SK": {"S": "STATS#"}}]}},
                "ReturnConsumedCapacity": "TOTAL",
            },
        ),
        ("get_item", {"TableName": table.name, "Key": {"PK": pk, "SK": {"S": "missing"}}}),
        (
            "query",
            {
                "TableName": table.name,
                "KeyConditionExpression": "PK = :pk",
                "ExpressionAttributeValues": {":pk": pk},
                "ReturnConsumedCapacity": "INDEXES",
                "Limit": 5,
            },
        ),
    ]
    for operation, params in calls:
        answers = []
        for direct in (True, False):
            async with _table(engine, table.name, {"direct_reads": direct}) as switched:
                answers.append(_comparable(await getattr(switched.client, operation)(**params)))
        assert answers[0] == answers[1], operation


async def test_engine_errors_are_botocores(engine: LocalEngine) -> None:
    settings = ClientSettings(endpoint_url=engine.endpoint_url)
    bad_calls: list[tuple[str, dict[str, Any]]] = [
        (
            "query",
            {
                "TableName": "no_such_table",
                "KeyConditionExpression": "PK = :p",
                "ExpressionAttributeValues": {":p": {"S": "x"}},
            },
        ),
        ("get_item", {"TableName": "no_such_table", "Key": {"PK": {"S": "x"}}}),
        ("query", {"TableName": "no_such_table", "KeyConditionExpression": "nonsense ="}),
    ]
    for operation, params in bad_calls:
        raised = []
        for direct in (True, False):
            async with open_client(replace(settings, direct_reads=direct)) as client:
                with pytest.raises(ClientError) as caught:
                    await getattr(client, operation)(**params)
                raised.append(caught.value)
        # Each client makes its own exception classes: the same name, the same answer.
        assert type(raised[0]).__name__ == type(raised[1]).__name__
        assert str(raised[0]) == str(raised[1])
        assert _comparable(raised[0].response) == _comparable(raised[1].response)
    async with open_client(settings) as client:
        with pytest.raises(TableMissing):
            await TableRef(client, "no_such_table").client.get_item(
                TableName="no_such_table", Key={"PK": {"S": "x"}}
            )


# A stand-in for the service: answers each request with the next of a script of answers.
Answer = tuple[int, dict[str, Any], bool]  # status, body, whether the CRC32 is right


@asynccontextmanager
async def _service(script: list[Answer]) -> AsyncIterator[tuple[str, list[str]]]:
    seen: list[str] = []

    async def answer(request: web.Request) -> web.Response:
        seen.append(request.headers["X-Amz-Target"])
        assert request.headers["Authorization"].startswith("AWS4-HMAC-SHA256 Credential=")
        status, body, crc_right = script[min(len(seen), len(script)) - 1]
        payload = web.json_response(body).body
        assert isinstance(payload, bytes)
        crc = zlib.crc32(payload) & 0xFFFFFFFF
        headers = {"x-amz-crc32": str(crc if crc_right else crc ^ 1)}
        return web.Response(status=status, body=payload, content_type=CONTENT_TYPE, headers=headers)

    app = web.Application()
    app.router.add_post("/", answer)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    try:
        yield f"http://127.0.0.1:{port}", seen
    finally:
        await runner.cleanup()


THROTTLED = (
    400,
    {
        "__type": "com.amazonaws.dynamodb.v20120810#ProvisionedThroughputExceededException",
        "message": "slow down",
    },
    True,
)
FAULT = (500, {"__type": "com.amazonaws.dynamodb.v20120810#InternalServerError"}, True)
FOUND = (200, {"Item": {"PK": {"S": "x"}}}, True)
GARBLED = (200, {"Item": {"PK": {"S": "x"}}}, False)


@pytest.mark.parametrize(
    ("script", "outcome", "attempts"),
    [
        ([THROTTLED, FOUND], None, 2),
        ([THROTTLED], Throttled, 3),
        ([FAULT, FAULT, FOUND], None, 3),
        ([FAULT], EngineFault, 3),
        ([GARBLED, FOUND], None, 2),
    ],
)
async def test_retries_and_errors_are_botocores(
    script: list[Answer], outcome: type[Exception] | None, attempts: int
) -> None:
    for direct in (True, False):
        async with _service(script) as (url, seen):
            settings = ClientSettings(endpoint_url=url, max_attempts=2, direct_reads=direct)
            async with open_client(settings) as client:
                table = TableRef(client, "comments")
                call: Callable[..., Any] = table.client.get_item
                if outcome is None:
                    response = await call(TableName="comments", Key={"PK": {"S": "x"}})
                    assert response["Item"] == {"PK": {"S": "x"}}
                    assert response["ResponseMetadata"]["RetryAttempts"] == attempts - 1
                else:
                    with pytest.raises(outcome) as caught:
                        await call(TableName="comments", Key={"PK": {"S": "x"}})
                    cause = caught.value.__cause__
                    assert isinstance(cause, ClientError)
                    assert cause.response["ResponseMetadata"]["RetryAttempts"] == attempts - 1
            assert seen == ["DynamoDB_20120810.GetItem"] * attempts, direct


async def test_a_handler_it_does_not_know_sends_the_call_the_long_way(engine: LocalEngine) -> None:
    seen: list[str] = []
    async with open_client(ClientSettings(endpoint_url=engine.endpoint_url)) as client:
        assert isinstance(client, DirectReads)
        inner: Any = client.inner
        inner.meta.events.register(
            "before-call.dynamodb.GetItem", lambda **kwargs: seen.append("GetItem")
        )
        with pytest.raises(ClientError):
            await client.get_item(TableName="no_such_table", Key={"PK": {"S": "x"}})
        with pytest.raises(ClientError):
            await client.query(TableName="no_such_table", KeyConditionExpression="PK = :p")
    assert seen == ["GetItem"]


@pytest.mark.parametrize("body", [b"not json", b"", b"[1]"])
async def test_an_answer_that_is_not_json_is_read_as_botocore_reads_it(body: bytes) -> None:
    outcomes = []
    for direct in (True, False):

        async def answer(request: web.Request) -> web.Response:
            return web.Response(status=200, body=body, content_type=CONTENT_TYPE)

        app = web.Application()
        app.router.add_post("/", answer)
        runner = web.AppRunner(app)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        settings = ClientSettings(endpoint_url=f"http://127.0.0.1:{port}", direct_reads=direct)
        try:
            async with open_client(settings) as client:
                try:
                    response = await client.get_item(TableName="t", Key={"PK": {"S": "x"}})
                    outcomes.append(sorted(response))
                except Exception as exc:
                    outcomes.append([type(exc).__name__])
        finally:
            await runner.cleanup()
    assert outcomes[0] == outcomes[1]


@pytest.mark.parametrize(
    ("url", "short"),
    [("http://127.0.0.1:9/", True), ("http://127.0.0.1:9/some/path", False)],
)
async def test_an_endpoint_with_a_path_goes_the_long_way(url: str, short: bool) -> None:
    settings = ClientSettings(endpoint_url=url, max_attempts=0, connect_timeout=0.5)
    async with open_client(settings) as client:
        assert isinstance(client, DirectReads)
        with pytest.raises(EngineUnreachable):
            await client.get_item(TableName="comments", Key={"PK": {"S": "x"}})
        assert (client._signers["GetItem"] is not None) == short


@pytest.mark.parametrize(
    ("region", "discovery", "url"),
    [
        ("eu-west-1", "false", "https://dynamodb.eu-west-1.amazonaws.com"),
        ("cn-north-1", "false", "https://dynamodb.cn-north-1.amazonaws.com.cn"),
        ("eu-west-1", "true", None),
    ],
)
async def test_aws_endpoints_come_from_botocores_rules(
    monkeypatch: pytest.MonkeyPatch, region: str, discovery: str, url: str | None
) -> None:
    """AWS's regional endpoints go the short way; with endpoint discovery on, botocore's
    handlers for it send the calls the long way."""
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIDEXAMPLE")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "secret")
    monkeypatch.setenv("AWS_ENDPOINT_DISCOVERY_ENABLED", discovery)
    async with open_client(ClientSettings(region=region)) as client:
        assert isinstance(client, DirectReads)
        signer = await client._resolve("Query", {"TableName": "comments"})
        assert (signer and signer.target) == (url and Target(url, region, "dynamodb"))
