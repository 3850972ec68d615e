"""What this process runs: the package's version, from the metadata of its installation
(``pyproject.toml``'s), for the build-info metric and every JSON log line."""

from __future__ import annotations

from functools import cache
from importlib.metadata import PackageNotFoundError
from importlib.metadata import version as installed_version

DISTRIBUTION = "product-comments"
# A checkout that was never installed (scripts/setup installs it into .venv) has no metadata.
UNKNOWN = "unknown"


@cache
def version() -> str:
    """The installed version of the server (``0.1.0``), or ``unknown``."""
    try:
        return installed_version(DISTRIBUTION)
    except PackageNotFoundError:
        return UNKNOWN
