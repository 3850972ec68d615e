"""Development: the embedded DynamoDB Local, its data and demo data, and dev tokens.

None of it applies in production (``PRODUCTION`` needs an endpoint, so nothing is embedded).
``EngineSettings`` is read by the DynamoDB Local launcher on its own (tests and benchmarks
start engines without the server's settings).
"""

from __future__ import annotations

from pathlib import Path

from pydantic import Field, field_validator
from pydantic_settings import BaseSettings

from server.dev.demo import DEMO_PRODUCTS
from server.settings.common import FROM_ENVIRONMENT

# Where the embedded engine keeps its data (and development its secret), unless DATA_DIR.
DEFAULT_DATA_DIR = Path(".data")
_NO = ("", "0", "false", "no", "off")
_YES = ("1", "true", "yes", "on")


class EngineSettings(BaseSettings):
    """How DynamoDB Local (``server.dev.local_engine``) and the development Redis
    (``server.dev.local_broker``) and the development Varnish (``server.dev.local_proxy``)
    are started."""

    model_config = FROM_ENVIRONMENT

    # The engine's jar; unset: the npm package's in the checkout (scripts/setup installs it).
    dynamodb_local_jar: Path | None = None
    # 1: run the engine on every interface, without the library that keeps it on loopback
    # (see docs/running.md): anyone who can reach the machine can read and change its data.
    dynamodb_local_unprotected: bool = False
    # The redis-server that serve --workers N starts for the fan-out (server.dev.local_broker);
    # unset: Debian's, on the PATH (scripts/setup installs it).
    redis_server: Path | None = None
    # The varnishd the purge test and the freshness benchmark start in front of servers
    # (server.dev.local_proxy), with the xkey module; unset: Debian's (scripts/setup).
    varnishd: Path | None = None

    @field_validator("dynamodb_local_unprotected", mode="before")
    @classmethod
    def _no_guessing(cls, value: object) -> object:
        # A typo must not decide whether the data is exposed: refuse to guess.
        text = str(value).strip().lower()
        if text in _NO:
            return False
        if text in _YES:
            return True
        raise ValueError("DYNAMODB_LOCAL_UNPROTECTED: use 1 or 0 (true or false)")


class DevelopmentSettings(BaseSettings):
    """The embedded engine's data, the table and demo data a first start makes, dev tokens."""

    model_config = FROM_ENVIRONMENT

    data_dir: Path = DEFAULT_DATA_DIR
    # Create the table at start-up (unset: only with the embedded engine).
    create_table: bool | None = None
    # Demo data written when this start created the table.
    seed_demo: bool = True
    # Print a ready-to-paste dev token at start-up (unset: only when the secret is generated).
    dev_token: bool | None = None
    demo_products: int = Field(default=DEMO_PRODUCTS, ge=0)
