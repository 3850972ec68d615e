"""The graphql-http package's server audits (GraphQL over HTTP) against a live server: every
audit is shown, and none may end in a warning or an error."""

from __future__ import annotations

import re
import shutil
import subprocess
from collections.abc import Iterator

import pytest

from server.dev.local_engine import LocalEngine
from storage.engine.table import TableRef
from testing.live_server import ROOT, LiveServer, live_server
from tests.api_helpers import SECRET

SCRIPT = ROOT / "tools" / "graphql-http" / "audit.cjs"
SUMMARY = re.compile(r"^(\d+) audits: (\d+) ok, (\d+) notice, (\d+) warn, (\d+) error$", re.M)


@pytest.fixture(scope="module")
def server(engine: LocalEngine, table: TableRef) -> Iterator[LiveServer]:
    with live_server(engine.endpoint_url, table.name, SECRET) as running:
        yield running


def test_every_graphql_over_http_audit_passes(
    server: LiveServer, capsys: pytest.CaptureFixture[str]
) -> None:
    node = shutil.which("node")
    assert node, "Node.js is needed (scripts/setup installs graphql-http with npm)"
    run = subprocess.run(
        [node, str(SCRIPT), server.graphql_url],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    report = run.stdout + run.stderr
    with capsys.disabled():
        print("\ngraphql-http server audits:\n" + report, end="")
    found = SUMMARY.search(run.stdout)
    assert found, report
    total, ok, notices, warnings, errors = map(int, found.groups())
    assert (warnings, errors) == (0, 0), report
    # Every audit ran and reported (an empty run would pass the line above).
    assert total == ok + notices + warnings + errors
    assert total >= 40, report
    assert run.returncode == 0, report
