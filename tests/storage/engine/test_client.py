"""The client's attribute pass-through parser gives what botocore's own parser gives; the
client's switches are botocore's documented options."""

from __future__ import annotations

import json
from typing import Any

import pytest
from aiobotocore.parsers import AioJSONParser
from aiobotocore.session import AioSession

from server.dev.local_engine import LocalEngine
from storage.engine.client import (
    USER_AGENT,
    ClientSettings,
    _WireAttributeParser,
    client_config_options,
    open_client,
)
from storage.engine.table import TableRef
from storage.model.comments import ListingFilter, NewComment, PageRequest
from storage.reads.reader import list_comments
from storage.writes import create_comment

ITEM = {
    "PK": {"S": "COMMENT#1"},
    "rating": {"N": "5"},
    "title": {"S": "naïve ✓ \u2028"},
    "flags": {"BOOL": True},
    "gone": {"NULL": True},
    "tags": {"SS": ["a", "b"]},
    "sizes": {"NS": ["1", "2.5"]},
    "nested": {"M": {"x": {"L": [{"S": "y"}, {"N": "-3"}, {"M": {}}]}}},
}


async def _operation(name: str) -> Any:
    model = await AioSession().get_service_model("dynamodb")
    return model.operation_model(name)


async def _parse(parser_cls: type, body: dict[str, Any], operation: str) -> Any:
    response = {"status_code": 200, "headers": {}, "body": json.dumps(body).encode()}
    return await parser_cls().parse(response, (await _operation(operation)).output_shape)


@pytest.mark.parametrize(
    ("operation", "body"),
    [
        (
            "Query",
            {
                "Items": [ITEM, ITEM],
                "Count": 2,
                "ScannedCount": 2,
                "LastEvaluatedKey": {"PK": {"S": "x"}},
            },
        ),
        ("GetItem", {"Item": ITEM}),
        ("BatchGetItem", {"Responses": {"t": [ITEM]}, "UnprocessedKeys": {}}),
    ],
)
async def test_pass_through_equals_botocore(operation: str, body: dict[str, Any]) -> None:
    assert await _parse(_WireAttributeParser, body, operation) == await _parse(
        AioJSONParser, body, operation
    )


async def test_listings_equal_with_and_without_pass_through(
    engine: LocalEngine, table: TableRef, product_id: str
) -> None:
    for n in range(12):
        await create_comment(table, NewComment(product_id, "en", 1 + n % 5, f"body {n} ✓", "a"))
    pages = []
    for fast in (True, False):
        settings = ClientSettings(endpoint_url=engine.endpoint_url, fast_attribute_parsing=fast)
        async with open_client(settings) as client:
            pages.append(
                await list_comments(
                    TableRef(client, table.name), ListingFilter(product_id), PageRequest(20)
                )
            )
    assert pages[0].comments == pages[1].comments
    assert len(pages[0].comments) == 12


def test_switches_are_botocore_config_options() -> None:
    options = client_config_options(ClientSettings())
    assert options == {"user_agent": USER_AGENT}
    assert USER_AGENT.startswith("product-comments ")
    assert client_config_options(ClientSettings(static_user_agent=False)) == {}
