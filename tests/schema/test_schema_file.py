"""schema.graphql is generated from the code and must not drift; every field is described."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from graphql import GraphQLInputObjectType, GraphQLInterfaceType, GraphQLObjectType

from schema import build_schema

ROOT = Path(__file__).resolve().parents[2]
CONTRACT = ROOT.parent / "shared" / "design" / "contract-v2.graphql"
CHECKER = ROOT.parent / "shared" / "tools" / "contract_check.py"


def test_committed_schema_matches_the_code() -> None:
    committed = (ROOT / "schema.graphql").read_text()
    generated = build_schema().as_str() + "\n"
    assert committed == generated, (
        "schema.graphql is stale: run `comments export-schema --output schema.graphql`"
    )


def test_every_field_and_type_has_a_description() -> None:
    schema = build_schema()._schema
    missing = []
    for name, type_ in schema.type_map.items():
        if name.startswith("__") or not isinstance(
            type_, GraphQLObjectType | GraphQLInterfaceType | GraphQLInputObjectType
        ):
            continue
        if not type_.description:
            missing.append(name)
        for field_name, field in type_.fields.items():
            if not field.description:
                missing.append(f"{name}.{field_name}")
    assert missing == []


def test_descriptions_speak_the_shops_language() -> None:
    # Frontend teams read them in GraphiQL and in generated types: the design's
    # access-pattern numbers (AP1...AP11) mean nothing there.
    internal = re.compile(r"\bAP\d+\b")
    found = [
        line for line in (ROOT / "schema.graphql").read_text().splitlines() if internal.search(line)
    ]
    assert found == []


def test_schema_honours_the_contract() -> None:
    if not CHECKER.exists():  # the contract lives beside the checkout, as in CI
        raise AssertionError(f"missing {CHECKER}")
    result = subprocess.run(
        [sys.executable, str(CHECKER), str(ROOT / "schema.graphql"), str(CONTRACT)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_every_planner_strategy_has_its_public_name() -> None:
    from schema.comments.connection import PlanStrategy
    from storage.reads.planner import Strategy

    assert [s.name for s in Strategy] == [s.name for s in PlanStrategy]
