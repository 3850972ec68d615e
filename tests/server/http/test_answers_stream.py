"""The answer map in a real server process: a repeated query is answered from memory, and
a comment written by another process reaches the next answer through the table's stream
(the map has no expiry: without the stream's word it would serve the old answer forever)."""

from __future__ import annotations

import asyncio
import json
import re
import uuid
from contextlib import ExitStack

import httpx

from server.dev.local_engine import LocalEngine
from storage.engine.client import ClientSettings, open_client
from storage.engine.table import TableRef
from storage.model.comments import NewComment
from storage.ops.create import create_table
from storage.writes import create_comment
from testing.live_server import live_server
from tests.api_helpers import SECRET

STATS = "query($pid: ID!) { product(productId: $pid) { stats { total } } }"


def hits(metrics: str) -> float:
    found = re.search(
        r'comments_cache_lookups_total\{cache="answers",result="hit"\} (\S+)', metrics
    )
    return float(found.group(1)) if found else 0.0


async def test_a_write_through_another_process_reaches_the_next_answer(
    engine: LocalEngine,
) -> None:
    name = f"answers_{uuid.uuid4().hex[:8]}"
    async with open_client(ClientSettings(endpoint_url=engine.endpoint_url)) as client:
        await create_table(client, name, stream=True)
        table = TableRef(client, name)
        env = {"LIVE_UPDATES": "true", "METRICS": "on", "STREAM_POLL_SECONDS": "0.1"}
        with ExitStack() as stack:
            server = await asyncio.to_thread(
                stack.enter_context, live_server(engine.endpoint_url, name, SECRET, log=None, **env)
            )
            async with httpx.AsyncClient(base_url=server.base_url, timeout=5) as http:
                params = {"query": STATS, "variables": json.dumps({"pid": "sku-1"})}

                async def total() -> int:
                    response = await http.get("/graphql", params=params)
                    assert response.status_code == 200, response.text
                    value: int = response.json()["data"]["product"]["stats"]["total"]
                    return value

                # Served from the map once the process follows the stream.
                async with asyncio.timeout(20):
                    while hits((await http.get("/metrics")).text) < 2:
                        assert await total() == 0
                        await asyncio.sleep(0.05)
                await create_comment(table, NewComment("sku-1", "en", 5, "new", "ann"))
                async with asyncio.timeout(10):
                    while await total() != 1:  # noqa: ASYNC110
                        await asyncio.sleep(0.05)
