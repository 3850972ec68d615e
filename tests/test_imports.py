"""Importing the pure parts of storage stays cheap: no engine client library comes along."""

from __future__ import annotations

import subprocess
import sys

import pytest

PURE = [
    "storage.reads.planner",
    "storage.model.keys",
    "storage.reads.cursor",
    "storage.reads.merge",
    "storage.model.comments",
]


@pytest.mark.parametrize("module", PURE)
def test_pure_storage_modules_do_not_load_the_engine_client(module: str) -> None:
    probe = (
        f"import sys, {module}; "
        "loaded = sorted(m for m in sys.modules if m.split('.')[0] in "
        "('aioboto3', 'aiobotocore', 'botocore', 'boto3', 'strawberry', 'starlette')); "
        "print(','.join(loaded))"
    )
    result = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=60
    )
    assert result.stdout.strip() == ""
