"""A development server started on a table kept from an earlier release (its DATA_DIR kept
across an upgrade) brings the table up to date itself: the indexes the release added are
built, and it serves."""

from __future__ import annotations

import uuid

import httpx
import pytest

from server.dev.local_engine import LocalEngine
from storage.base.types import DynamoClient
from storage.model.indexes import Index, table_definition
from storage.model.layout_version import TableLayout
from testing.live_server import live_server
from tests.api_helpers import SECRET
from tests.helpers import own_engine_fixtures

pytestmark = pytest.mark.engine

# Its own engine: index builds starve on an engine with many tables with TTL on
# (tests/storage/ops/test_migrate.py says why).
engine, client = own_engine_fixtures()

ADDED = {Index.FACET_BY_RATING.value, Index.FACET_BY_LANG_AND_RATING.value}


async def test_a_kept_table_without_the_newest_indexes_is_migrated_at_start(
    engine: LocalEngine, client: DynamoClient
) -> None:
    name = f"kept_{uuid.uuid4().hex[:8]}"
    definition = table_definition(name, stream=False)
    definition["GlobalSecondaryIndexes"] = [
        g for g in definition["GlobalSecondaryIndexes"] if g["IndexName"] not in ADDED
    ]
    definition["AttributeDefinitions"] = [
        a for a in definition["AttributeDefinitions"] if a["AttributeName"] not in ("FPK", "FLPK")
    ]
    await client.create_table(**definition)
    # Made whole by the release before: its layout is recorded.
    await client.put_item(TableName=name, Item=TableLayout.new_table().to_item())

    with live_server(
        engine.endpoint_url, name, SECRET, CREATE_TABLE="true", SEED_DEMO="false"
    ) as server:
        async with httpx.AsyncClient(timeout=10) as http:
            ready = await http.get(f"{server.base_url}/readyz")
        assert ready.status_code == 200, ready.text
    described = (await client.describe_table(TableName=name))["Table"]
    have = {g["IndexName"] for g in described["GlobalSecondaryIndexes"]}
    assert have == {index.value for index in Index}
