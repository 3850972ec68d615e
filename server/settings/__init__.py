"""Configuration from the environment, in groups; every variable is its field's name in
upper case, and ``docs/configuration.md`` lists each one (a test keeps them in step).

    storage.py         where the table is (StorageSettings) and how the server reads it
    tokens.py          sign-in: secrets or the login provider's keys, claims, roles
    http.py            the listener, browsers, production posture, limits, caching
    writes.py          moderation, per-author limits and rates
    live_updates.py    the stream and what subscriptions may hold and cost
    webhooks.py        the webhook worker: deliveries, leases, retries, outbound rules
    purging.py         the shared caches purged on change, and their s-maxage
    observability.py   metrics, logs, traces
    development.py     the embedded engine, demo data, dev tokens

Besides this package, only ``server.environment`` touches the process environment (the
variables that are a protocol with another program). Each setting is documented where it
is defined, and its default is the one the module
that applies it defines (read from there, never repeated). ``Settings`` is every group
together, with the rules that span groups (production posture, a secret for a real
table, the metrics listener apart from the server's).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Self

from pydantic import model_validator

from server.http.caching import CachePolicy
from server.settings.common import FROM_ENVIRONMENT
from server.settings.development import (
    DEFAULT_DATA_DIR,
    DevelopmentSettings,
    EngineSettings,
)
from server.settings.http import CORS_ALLOW_HEADERS, DEV_CORS_ORIGINS, MAX_WORKERS, HttpSettings
from server.settings.live_updates import LiveUpdateSettings
from server.settings.observability import (
    DEFAULT_METRICS_PORT,
    DEFAULT_SAMPLER,
    DEVELOPMENT_TRACES_RATIO,
    PRODUCTION_TRACES_RATIO,
    MetricsMode,
    ObservabilitySettings,
    TracesSampler,
    listen_problem,
)
from server.settings.purging import PurgeSettings
from server.settings.storage import StorageSettings, StorageUse
from server.settings.tokens import TokenSettings
from server.settings.webhooks import WebhookSettings
from server.settings.writes import WriteSettings
from server.webhooks.transport import Policy

__all__ = [
    "CORS_ALLOW_HEADERS",
    "DEFAULT_DATA_DIR",
    "DEFAULT_METRICS_PORT",
    "DEV_CORS_ORIGINS",
    "MAX_WORKERS",
    "DevelopmentSettings",
    "EngineSettings",
    "HttpSettings",
    "LiveUpdateSettings",
    "MetricsMode",
    "ObservabilitySettings",
    "PurgeSettings",
    "Settings",
    "StorageSettings",
    "StorageUse",
    "TokenSettings",
    "WebhookSettings",
    "WriteSettings",
]


class Settings(
    StorageSettings,
    StorageUse,
    TokenSettings,
    HttpSettings,
    WriteSettings,
    LiveUpdateSettings,
    WebhookSettings,
    PurgeSettings,
    ObservabilitySettings,
    DevelopmentSettings,
    EngineSettings,
):
    """Everything the server reads: every group, and the rules that span them."""

    model_config = FROM_ENVIRONMENT

    @property
    def cache_policy(self) -> CachePolicy:
        """Public answers' Cache-Control: with purging on, shared caches keep them
        CACHE_SHARED_MAX_AGE (s-maxage), browsers CACHE_MAX_AGE as ever."""
        shared = self.cache_shared_max_age if self.purge_urls and self.cache_max_age > 0 else 0
        return replace(super().cache_policy, shared_max_age=shared)

    def _makes_secret_files(self) -> bool:
        # The server in development makes a missing JWT_SECRET_FILE (as docker compose has
        # it); in production never: every host must share one secret, given.
        return not self.production

    @model_validator(mode="after")
    def _production_needs(self) -> Self:
        if self.production and self.embedded:
            raise ValueError("PRODUCTION needs DYNAMODB_ENDPOINT_URL (no embedded engine)")
        if self.production and self.jwt_secret is None and self.jwt_jwks_url is None:
            raise ValueError("PRODUCTION needs JWT_SECRET or JWT_JWKS_URL")
        if self.production and self.author_id_key is None:
            # Derived from JWT_SECRET, the ids would change with every rotation of it.
            raise ValueError(
                "PRODUCTION needs AUTHOR_ID_KEY (or AUTHOR_ID_KEY_FILE), the key of the "
                "public author ids: a deployment that ran without it keeps its authors' ids "
                "with the key `comments author-id-key` prints from its present JWT_SECRET; "
                "a new one may take 32 random bytes (openssl rand -hex 32)"
            )
        return self

    @model_validator(mode="after")
    def _purges_follow_the_stream(self) -> Self:
        if self.purge_urls and not self.live_updates:
            raise ValueError(
                "PURGE_URLS needs LIVE_UPDATES: the purges come from the table's stream, "
                "and without them a cache would keep answers CACHE_SHARED_MAX_AGE"
            )
        return self

    @model_validator(mode="after")
    def _metrics_port_apart(self) -> Self:
        if self.metrics_mode == "port" and self.metrics_port == self.port:
            raise ValueError(
                "METRICS_PORT must differ from PORT: metrics have a listener of their own"
            )
        return self

    @model_validator(mode="after")
    def _metrics_host_here(self) -> Self:
        # Said now, in one line, rather than as a traceback once the server has started.
        if self.metrics_mode == "port" and (problem := listen_problem(self.metrics_host)):
            raise ValueError(f"METRICS_HOST {problem}")
        return self

    @model_validator(mode="after")
    def _endpoint_needs_a_secret(self) -> Self:
        # A secret made at start-up changes with every start and differs between processes:
        # fine for the embedded engine, one development process that prints a fresh dev
        # token each time; tokens for a real table must outlive a restart and hold in
        # every process.
        if not self.embedded and self.jwt_secret is None and self.jwt_jwks_url is None:
            raise ValueError(
                "JWT_SECRET must be set when DYNAMODB_ENDPOINT_URL is "
                "(or JWT_JWKS_URL; only the embedded engine runs on a secret made at start-up)"
            )
        return self

    @model_validator(mode="after")
    def _production_creates_no_table(self) -> Self:
        # The runtime role (deploy/iam/runtime.json) has no CreateTable: the table is the
        # operations role's to make, once, and a fleet of processes racing to make it at
        # start would be a deployment error waiting for its first empty region.
        if self.production and self.create_table:
            raise ValueError(
                "PRODUCTION refuses CREATE_TABLE=true: make the table once with "
                "`comments create-table` (the operations role) or the table stack"
            )
        return self

    @property
    def metrics_mode(self) -> MetricsMode:
        if self.metrics is None:
            return "port" if self.production else "on"
        return self.metrics

    @property
    def traces_sampler(self) -> tuple[TracesSampler, float]:
        """The sampler of traces, and its ratio (server.observability.tracing.sampler)."""
        default = PRODUCTION_TRACES_RATIO if self.production else DEVELOPMENT_TRACES_RATIO
        ratio = self.otel_traces_sampler_arg
        return self.otel_traces_sampler or DEFAULT_SAMPLER, default if ratio is None else ratio

    @property
    def webhook_policy(self) -> Policy:
        """What deliveries may connect to (server.webhooks.transport)."""
        loopback = self.webhook_allow_loopback
        allowed = not self.production if loopback is None else loopback
        return Policy(allow_loopback=allowed, allow_http=allowed)

    @property
    def embedded(self) -> bool:
        return not self.dynamodb_endpoint_url

    @property
    def creates_table(self) -> bool:
        return self.embedded if self.create_table is None else self.create_table
