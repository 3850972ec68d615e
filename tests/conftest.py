"""Fixtures: one DynamoDB Local per test session, one client, one table.

Tests isolate themselves by using fresh product ids rather than fresh tables, so the engine
and the table are created once. Every test that uses the engine, through these fixtures or
any built on them, is marked ``engine``: ``pytest -m "not engine"`` runs the unit tests
without starting one. (The few tests that start an engine of their own carry the marker
themselves.)
"""

from __future__ import annotations

import os
import uuid
from collections.abc import AsyncIterator, Iterator
from typing import Any

import aioboto3
import pytest
from hypothesis import HealthCheck, settings

from server.dev.local_engine import LocalEngine
from storage.base.types import DynamoClient
from storage.engine.client import ClientSettings, open_client
from storage.engine.table import TableRef
from storage.ops.create import create_table
from tests.api_helpers import Api, running_api

settings.register_profile(
    "ci",
    max_examples=200,
    deadline=None,
    derandomize=True,  # CI runs the same examples every time; "dev" explores new ones
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
settings.register_profile(
    "dev",
    max_examples=50,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))


@pytest.hookimpl(tryfirst=True)  # before -m deselects by marker
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        # fixturenames is the closure: a fixture built on `engine` counts too.
        if "engine" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.engine)


@pytest.fixture(scope="session")
def engine() -> Iterator[LocalEngine]:
    with LocalEngine() as running:
        yield running


@pytest.fixture(scope="session")
async def client(engine: LocalEngine) -> AsyncIterator[DynamoClient]:
    async with open_client(ClientSettings(endpoint_url=engine.endpoint_url)) as opened:
        yield opened


@pytest.fixture(scope="session")
async def table(client: DynamoClient) -> TableRef:
    name = "comments_test"
    # No stream: the suite does not follow it (tests of the stream make their own).
    await create_table(client, name, stream=False)
    return TableRef(client, name)


@pytest.fixture
def product_id() -> str:
    """A product id no other test uses."""
    return f"p-{uuid.uuid4().hex[:12]}"


@pytest.fixture(scope="session")
async def api(table: TableRef) -> AsyncIterator[Api]:
    """The application in process, over the session's table, development settings."""
    async with running_api(table.client, table.name) as running:
        yield running


@pytest.fixture
async def streams(engine: LocalEngine) -> AsyncIterator[Any]:
    """A DynamoDB Streams client of the session's engine (the stream readers' own API)."""
    session = aioboto3.Session()
    async with session.client(
        "dynamodbstreams",
        region_name="us-east-1",
        endpoint_url=engine.endpoint_url,
        aws_access_key_id="local",
        aws_secret_access_key="local",
    ) as opened:
        yield opened
