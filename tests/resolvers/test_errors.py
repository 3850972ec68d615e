"""The error tree drawn in ``resolvers/errors.py`` is the one the code follows: every row's
storage error maps to the code it shows, for queries and for mutations' userErrors."""

from __future__ import annotations

import re

import pytest

from resolvers import errors as api_errors
from resolvers.user_errors import code_of
from storage.base import errors as storage_errors

TREE = api_errors.__doc__ or ""
ROW = re.compile(r"^\s*[│├└─ ]*\s*(\w+)(?: \(and TimeoutError\))?\s{2,}(\S.*?)(?:\s{2,}(\S+))?$")


def _section(first: str, last: str) -> list[tuple[str, str, str | None]]:
    lines = TREE.splitlines()
    start = next(i for i, line in enumerate(lines) if line.strip().startswith(first))
    end = next(i for i, line in enumerate(lines) if line.strip().startswith(last))
    rows = []
    for line in lines[start + 1 : end]:
        found = ROW.match(line)
        if found and found.group(1) != "the":
            rows.append((found.group(1), found.group(2), found.group(3)))
    return rows


STORAGE_ROWS = _section("StorageError (", "ApiError (")
API_ROWS = _section("ApiError (", "GraphQL parse")


def _instance(name: str) -> storage_errors.StorageError:
    kind = getattr(storage_errors, name)
    exc: storage_errors.StorageError = kind.__new__(kind)
    exc.retry_after = 1  # type: ignore[attr-defined]
    return exc


def test_the_tree_has_its_rows() -> None:
    assert len(STORAGE_ROWS) >= 14
    assert len(API_ROWS) == 10


@pytest.mark.parametrize(("name", "query", "mutation"), STORAGE_ROWS)
def test_a_storage_row_is_what_the_mappings_do(name: str, query: str, mutation: str | None) -> None:
    exc = _instance(name)
    mapped = api_errors.from_storage(exc)
    if query.startswith("-"):
        assert mapped is None
    else:
        assert mapped is not None
        assert mapped.code == query.split()[0]
    problem = code_of(exc)
    if mutation is None:
        assert problem is None
    else:
        assert problem is not None
        assert problem.value == mutation


@pytest.mark.parametrize(("name", "code", "_"), API_ROWS)
def test_an_api_row_is_the_class_code(name: str, code: str, _: str | None) -> None:
    kind = getattr(api_errors, name)
    if kind is api_errors.SubscriptionEnded:
        assert set(re.findall(r"[A-Z_]{4,}", code)) == api_errors.ENDED_CODES
    else:
        assert kind.code == code.split()[0].rstrip(",")


def test_timeouts_are_unavailable() -> None:
    mapped = api_errors.from_storage(TimeoutError())
    assert mapped is not None
    assert mapped.code == "STORAGE_UNAVAILABLE"
