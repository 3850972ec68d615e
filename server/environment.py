"""The process environment, besides settings: with ``server.settings`` (which reads every
setting from it through pydantic-settings), the one place it is read or written
(``tests/server/test_settings.py`` checks that no other module of the product touches it).

A few variables are no setting of the server but a protocol with another program; the
modules that need them go through these functions:

- ``LD_PRELOAD``: DynamoDB Local's loopback library is preloaded ahead of whatever the
  environment already preloads (``server.dev.local_engine``);
- ``PROMETHEUS_MULTIPROC_DIR``: prometheus-client's multiprocess mode, which a parent sets
  for its workers before they import the library (``server.workers``,
  ``server.observability.metrics``);
- the environment a child process inherits (DynamoDB Local), with additions.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from contextlib import contextmanager

MULTIPROC_ENV = "PROMETHEUS_MULTIPROC_DIR"


def preloaded() -> str | None:
    """What the environment preloads into every program it starts (``LD_PRELOAD``)."""
    return os.environ.get("LD_PRELOAD") or None


def inherited(additions: Mapping[str, str]) -> dict[str, str]:
    """The environment a child process gets: this one's, with ``additions``."""
    return {**os.environ, **additions}


def multiprocess_dir() -> str | None:
    """The directory prometheus-client's multiprocess mode keeps values in, when set."""
    return os.environ.get(MULTIPROC_ENV) or None


@contextmanager
def exported(name: str, value: str) -> Iterator[None]:
    """``name`` set to ``value`` for the processes started within the block; restored after."""
    previous = os.environ.get(name)
    os.environ[name] = value
    try:
        yield
    finally:
        if previous is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = previous
