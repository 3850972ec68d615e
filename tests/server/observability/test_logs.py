"""LOG_FORMAT=json: every line the server writes is a JSON object with the process's pid and
the server's version (and the trace of a traced request it was written for, see
test_tracing), and each request has a line with its id, operation, outcome, duration and
storage figures."""

from __future__ import annotations

import json
import logging
import os
import tempfile
from typing import Any

import httpx

from server.dev.local_engine import LocalEngine
from server.observability.build import version
from server.observability.logs import TRACE, JsonFormatter
from storage.engine.table import TableRef
from testing.live_server import live_server
from tests.api_helpers import SECRET

STATS = 'query ProductStats { product(productId: "logs-none") { stats { total } } }'


def test_the_json_formatter_writes_one_object_with_the_fields() -> None:
    record = logging.LogRecord("comments.requests", logging.INFO, __file__, 1, "a %s", ("b",), None)
    record.fields = {"request_id": "r1", "items_read": 3}
    line = JsonFormatter().format(record)
    assert "\n" not in line
    entry = json.loads(line)
    assert entry["message"] == "a b"
    assert entry["level"] == "INFO"
    assert entry["logger"] == "comments.requests"
    assert (entry["request_id"], entry["items_read"]) == ("r1", 3)
    assert entry["time"].endswith("+00:00")
    assert (entry["pid"], entry["version"]) == (os.getpid(), version())
    assert "trace_id" not in entry
    # Written while a sampled request runs: its trace and span.
    token = TRACE.set(("4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"))
    try:
        traced = json.loads(JsonFormatter().format(record))
    finally:
        TRACE.reset(token)
    assert (traced["trace_id"], traced["span_id"]) == (
        "4bf92f3577b34da6a3ce929d0e0e4736",
        "00f067aa0ba902b7",
    )


def test_a_json_server_writes_only_json_lines_with_one_per_request(
    engine: LocalEngine, table: TableRef
) -> None:
    with tempfile.TemporaryFile() as log:
        with (
            live_server(
                engine.endpoint_url,
                table.name,
                SECRET,
                log=log,
                LOG_FORMAT="json",
                ACCESS_LOG="true",
            ) as server,
            httpx.Client(timeout=10) as http,
        ):
            ids = []
            for _ in range(2):
                response = http.post(server.graphql_url, json={"query": STATS})
                assert "errors" not in response.json()
                ids.append(response.headers["x-request-id"])
            broken = http.post(server.graphql_url, json={"query": "query Broken {"})
            health = http.get(f"{server.base_url}/healthz")
        log.seek(0)
        lines = [line for line in log.read().decode().splitlines() if line.strip()]

    entries: list[dict[str, Any]] = [json.loads(line) for line in lines]
    assert all({"time", "level", "logger", "message"} <= entry.keys() for entry in entries)
    # Every line says which process wrote it, and which version runs.
    assert {(entry["pid"], entry["version"]) for entry in entries} == {(server.pid, version())}
    requests = {e["request_id"]: e for e in entries if e["logger"] == "comments.requests"}
    # uvicorn's own access line is replaced by the request line.
    assert not [e for e in entries if e["logger"] == "uvicorn.access"]
    for request_id in ids:
        entry = requests[request_id]
        assert entry["operation"] == "ProductStats"
        assert entry["outcome"] == "ok"
        assert entry["status"] == 200
        assert entry["duration_ms"] > 0
        assert entry["storage_calls"] >= 1
        assert entry["storage_rounds"] >= 1
        assert {"items_read", "read_capacity_units", "write_capacity_units"} <= entry.keys()
    failed = requests[broken.headers["x-request-id"]]
    assert (failed["outcome"], failed["error_codes"]) == ("request_error", ["BAD_USER_INPUT"])
    checked = requests[health.headers["x-request-id"]]
    assert (checked["path"], checked["status"]) == ("/healthz", 200)
    assert "outcome" not in checked
