from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import aioboto3
import pytest

from server.dev.local_engine import LocalEngine


@pytest.fixture
async def streams(engine: LocalEngine) -> AsyncIterator[Any]:
    session = aioboto3.Session()
    async with session.client(
        "dynamodbstreams",
        region_name="us-east-1",
        endpoint_url=engine.endpoint_url,
        aws_access_key_id="local",
        aws_secret_access_key="local",
    ) as opened:
        yield opened
