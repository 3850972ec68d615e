"""Every GraphQL example of the manual, README.md and the pages under docs/, runs without
errors against the API."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.api_helpers import Api, token

ROOT = Path(__file__).resolve().parent.parent
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("**/*.md"))]
BLOCK = re.compile(r"```graphql\n(.*?)```", flags=re.DOTALL)

# What README.md held when its manual moved into docs/: 13 operations, 10 of them runnable
# as they are. The manual may grow; it must not quietly lose its examples.
AT_LEAST = 13
AT_LEAST_RUNNABLE = 10


def _name(page: Path) -> str:
    return page.relative_to(ROOT).as_posix()


def _operations(block: str) -> list[str]:
    # A block may hold several one-line operations.
    return [p for p in re.split(r"\n(?=\{|mutation)", block.strip()) if p.strip()]


def _examples() -> list[tuple[str, str]]:
    """(test id naming the page and the example's place in it, operation)."""
    examples = []
    for page in PAGES:
        operations = [op for block in BLOCK.findall(page.read_text()) for op in _operations(block)]
        examples += [(f"{_name(page)}:{n}", op) for n, op in enumerate(operations, 1)]
    return examples


EXAMPLES = _examples()
# Examples that need an id pasted from an earlier answer cannot run as they are.
RUNNABLE = [(name, op) for name, op in EXAMPLES if "PASTE" not in op]


def test_the_manual_has_examples() -> None:
    assert len(EXAMPLES) >= AT_LEAST
    assert len(RUNNABLE) >= AT_LEAST_RUNNABLE
    # The front door's first query is one of them.
    assert any(name.startswith("README.md:") for name, _ in RUNNABLE)


@pytest.mark.parametrize("page", PAGES, ids=_name)
def test_every_graphql_block_is_an_example(page: Path) -> None:
    # A block the pattern misses (an info string after `graphql`, an indented fence) would
    # not run: every opening fence must be one the examples are read from.
    text = page.read_text()
    assert text.count("```graphql") == len(BLOCK.findall(text)), _name(page)


# Pages whose examples are for shop staff run with a moderator's token.
STAFF_PAGES = ("docs/webhooks.md",)


@pytest.mark.parametrize("operation", [pytest.param(op, id=name) for name, op in RUNNABLE])
async def test_example_runs(api: Api, operation: str, request: pytest.FixtureRequest) -> None:
    staff = request.node.callspec.id.startswith(STAFF_PAGES)
    who = token("readme-staff", moderator=True) if staff else token("readme-user")
    body = await api.gql(operation, token=who)
    assert "errors" not in body, body.get("errors")
