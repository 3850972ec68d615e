"""The TypeScript client for frontend teams (clients/typescript): graphql-codegen's output is
up to date with schema.graphql and the operations, it type-checks with `tsc --strict`, and its
Node test runs every operation through Apollo Client against live servers, one of them in
trusted-documents mode with the generated manifest."""

from __future__ import annotations

import filecmp
import os
import re
import shutil
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from server.dev.local_engine import LocalEngine
from storage.engine.table import TableRef
from storage.ops.create import create_table
from testing.live_server import ROOT, LiveServer, live_server
from tests.api_helpers import SECRET, token
from tests.helpers import own_table

CLIENT = ROOT / "clients" / "typescript"
BIN = CLIENT / "node_modules" / ".bin"
GENERATED = CLIENT / "src" / "gql"
MANIFEST = GENERATED / "persisted-documents.json"
# node --test's spec reporter ends with counts, each after an information sign (U+2139):
# "pass 10", "fail 0", ...
COUNT = re.compile(r"^\u2139 (tests|pass|fail|cancelled|skipped|todo) (\d+)$", re.M)


def _node() -> str:
    node = shutil.which("node")
    assert node, "Node.js is needed (scripts/setup installs clients/typescript with npm)"
    assert (BIN / "tsx").exists(), f"{BIN} is missing its tools: run ./scripts/setup"
    return node


def _run(command: list[str], env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        command,
        cwd=CLIENT,
        env={**os.environ, **(env or {})},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


@pytest.fixture(scope="module")
async def client_table(table: TableRef) -> TableRef:
    # The Node test looks for its product on the leaderboard's first 100 entries; in the
    # shared table other tests' products could fill them.
    return await own_table(table, "ts_client")


@pytest.fixture(scope="module")
def servers(engine: LocalEngine, client_table: TableRef) -> Iterator[tuple[LiveServer, LiveServer]]:
    with (
        live_server(engine.endpoint_url, client_table.name, SECRET) as open_server,
        live_server(
            engine.endpoint_url, client_table.name, SECRET, TRUSTED_DOCUMENTS=str(MANIFEST)
        ) as trusted,
    ):
        yield open_server, trusted


def test_generated_documents_and_manifest_are_up_to_date(tmp_path: Path) -> None:
    _node()
    out = tmp_path / "gql"
    run = _run(
        [str(BIN / "graphql-codegen"), "--config", "codegen.ts", "--silent"],
        env={"CODEGEN_OUT": f"{out}/"},
    )
    assert run.returncode == 0, run.stdout + run.stderr
    compared = filecmp.dircmp(GENERATED, out)
    stale = compared.left_only + compared.right_only + compared.diff_files + compared.funny_files
    assert compared.common_files, "codegen wrote nothing"
    assert not stale, (
        f"clients/typescript/src/gql is not what codegen writes now ({', '.join(stale)}): "
        "run `npm run codegen` in clients/typescript and commit the result"
    )
    assert not compared.subdirs


def test_the_client_type_checks_strictly() -> None:
    _node()
    run = _run([str(BIN / "tsc"), "--strict", "--noEmit"])
    assert run.returncode == 0, run.stdout + run.stderr


def test_every_listing_argument_keys_the_cached_list(capsys: pytest.CaptureFixture[str]) -> None:
    # Derived from schema.graphql: a listing argument the type policies miss fails here.
    assert _node_test("test/listing.test.ts", {}, capsys) == 5


def test_every_operation_runs_against_live_servers(
    servers: tuple[LiveServer, LiveServer], capsys: pytest.CaptureFixture[str]
) -> None:
    open_server, trusted = servers
    passed = _node_test(
        "test/api.test.ts",
        {
            "COMMENTS_GRAPHQL_URL": open_server.graphql_url,
            "COMMENTS_TRUSTED_GRAPHQL_URL": trusted.graphql_url,
            "COMMENTS_TOKEN": token("tess", name="Tess"),
            "COMMENTS_VOTER_TOKEN": token("vera", name="Vera"),
        },
        capsys,
    )
    assert passed >= 10


def _node_test(file: str, env: dict[str, str], capsys: pytest.CaptureFixture[str]) -> int:
    """Run one Node test file (node --test with tsx); every test in it must pass. Returns
    how many passed."""
    run = _run(
        [_node(), "--import", "tsx", "--test", "--test-reporter=spec", file],
        env={**env, "NO_COLOR": "1"},
    )
    report = run.stdout + run.stderr
    with capsys.disabled():
        print(f"\nTypeScript client, {file} (node --test):\n" + run.stdout, end="")
    counts = {name: int(value) for name, value in COUNT.findall(run.stdout)}
    assert (counts.get("fail"), counts.get("cancelled"), counts.get("skipped")) == (0, 0, 0), report
    assert run.returncode == 0, report
    return counts.get("pass", 0)


@pytest.fixture(scope="module")
async def live_table(table: TableRef) -> TableRef:
    """A table of its own with its stream, as create-table makes it."""
    own = TableRef(table.client, f"ts_live_{uuid.uuid4().hex[:8]}")
    await create_table(own.client, own.name)
    return own


def test_a_subscription_through_apollo_and_graphql_ws(
    engine: LocalEngine, live_table: TableRef, capsys: pytest.CaptureFixture[str]
) -> None:
    _node()
    with live_server(engine.endpoint_url, live_table.name, SECRET) as server:
        passed = _node_test(
            "test/live.test.ts",
            {
                "COMMENTS_LIVE_GRAPHQL_URL": server.graphql_url,
                "COMMENTS_TOKEN": token("lou", name="Lou"),
            },
            capsys,
        )
    assert passed == 2
