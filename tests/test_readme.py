"""Every GraphQL example in the README runs without errors against the API."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.api_helpers import Api, token

README = Path(__file__).resolve().parent.parent / "README.md"


def _examples() -> list[str]:
    blocks = re.findall(r"```graphql\n(.*?)```", README.read_text(), flags=re.DOTALL)
    operations = []
    for block in blocks:
        # A block may hold several one-line operations.
        parts = [p for p in re.split(r"\n(?=\{|mutation)", block.strip()) if p.strip()]
        operations += parts
    return operations


EXAMPLES = _examples()


def test_the_readme_has_examples() -> None:
    assert len(EXAMPLES) >= 10


@pytest.mark.parametrize("operation", [e for e in EXAMPLES if "PASTE" not in e])
async def test_readme_example_runs(api: Api, operation: str) -> None:
    body = await api.gql(operation, token=token("readme-user"))
    assert "errors" not in body, body.get("errors")
