"""HTTP and its limits: the listener, browsers (CORS), the production posture, the guards on
every request (body, head, connections, sockets, cost), caching, persisted queries, and the
performance switches of the HTTP path.

Defaults are those of the modules that apply them (``schema.SchemaOptions`` for the cost
limits, ``server.http.forwarded`` for the trusted proxies, ``server.shutdown`` for the
drain), read from there.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Annotated, Literal

from pydantic import Field, field_validator
from pydantic_settings import BaseSettings, NoDecode

from schema import SchemaOptions
from server.http.caching import CachePolicy
from server.http.forwarded import LOOPBACK_PROXIES, TrustedProxies
from server.settings.common import FROM_ENVIRONMENT, split_commas
from server.shutdown import DELAY_SECONDS, TIMEOUT_SECONDS

_SCHEMA = SchemaOptions()

# Request headers real browser clients send: the JSON body and the token; W3C trace context
# and baggage (OpenTelemetry) and Sentry's trace header; Apollo Client's name, version and
# CSRF-prevention headers; a request id of the caller's own.
CORS_ALLOW_HEADERS = (
    "content-type",
    "authorization",
    "traceparent",
    "tracestate",
    "baggage",
    "sentry-trace",
    "apollographql-client-name",
    "apollographql-client-version",
    "apollo-require-preflight",
    "x-apollo-operation-name",  # Apollo's mobile clients, and Apollo Router's CSRF check
    "x-request-id",
    # Tracing a frontend's RUM agents add by default beside traceparent: Datadog, Zipkin's
    # B3 (single and multi header), New Relic.
    "x-datadog-trace-id",
    "x-datadog-parent-id",
    "x-datadog-origin",
    "x-datadog-sampling-priority",
    "b3",
    "x-b3-traceid",
    "x-b3-spanid",
    "x-b3-parentspanid",
    "x-b3-sampled",
    "x-b3-flags",
    "newrelic",
)
_HEADER_NAME = re.compile(r"[!#$%&'*+.^_`|~0-9a-z-]+")
# An origin as a browser sends it (Origin: scheme://host[:port], nothing after), lower case.
_ORIGIN = re.compile(r"https?://(\[[0-9a-f:.]+\]|[a-z0-9]([a-z0-9.-]*[a-z0-9])?)(:[0-9]{1,5})?")


# The origins of the usual frontend dev servers (Next.js, Create React App on 3000; Vite on
# 5173), by either loopback name: `comments serve` in development and docker compose allow
# them when CORS_ORIGINS is not set, so a widget on a dev server calls the API at once.
DEV_CORS_ORIGINS = (
    "http://localhost:3000",
    "http://127.0.0.1:3000",
    "http://localhost:5173",
    "http://127.0.0.1:5173",
)

# Worker processes `serve` may run: a few per core, for machines of up to a few dozen cores.
MAX_WORKERS = 64


class HttpSettings(BaseSettings):
    """The listener, browsers, the production posture, the limits on every request."""

    model_config = FROM_ENVIRONMENT

    host: str = "127.0.0.1"
    port: int = Field(default=8000, ge=0, le=65535)
    # Processes serving requests (server.workers); 1: the server runs in this process.
    workers: int = Field(default=1, ge=1, le=MAX_WORKERS)
    # On SIGTERM (server.shutdown): seconds between readiness answering 503 and the listener
    # closing, while everything is still served, so that a load balancer in front sees the
    # 503 and stops sending first; then the seconds requests in progress get to finish,
    # before what is left is cancelled.
    shutdown_delay_seconds: float = Field(default=DELAY_SECONDS, ge=0)
    shutdown_timeout_seconds: float = Field(default=TIMEOUT_SECONDS, gt=0)
    cors_origins: Annotated[list[str], NoDecode] = Field(default_factory=list)
    # Request headers browsers may send from those origins: what real clients add.
    cors_allow_headers: Annotated[list[str], NoDecode] = Field(
        default_factory=lambda: list(CORS_ALLOW_HEADERS)
    )
    # Seconds a browser may reuse a preflight's answer; Chromium caps it at 7200.
    cors_max_age: int = Field(default=7200, ge=0, le=86400)
    # Production posture: GraphiQL, introspection, field suggestions and the dev token
    # default to off, and a JWT secret and an endpoint are required (see the README).
    production: bool = False
    # Unset: on in development, off in production.
    graphiql: bool | None = None
    introspection: bool | None = None
    field_suggestions: bool | None = None
    # Whether every page shows its plan (CommentConnection.plan names indexes and partition
    # keys); moderators always see it. Unset: on in development, off in production.
    explain: bool | None = None
    # Requests whose body is larger are refused (413) before any of it is parsed.
    max_body_bytes: int = Field(default=1_048_576, ge=1024)
    # Seconds within which the whole body must arrive once its head has; else 408 and the
    # connection is closed.
    body_timeout: float = Field(default=30.0, gt=0)
    # The request head (request line and header fields): refused with 431 past either cap,
    # while it arrives. 32 KiB is what nginx accepts by default (4 buffers of 8 KiB), room
    # for a large token, cookies and a GET query, and still parses in microseconds.
    max_header_bytes: int = Field(default=32 * 1024, ge=1024, le=1024 * 1024)
    # Browsers send 10-30 fields; Apache's LimitRequestFields default is 100 as well.
    max_headers: int = Field(default=100, ge=10)
    # Seconds within which a request head must arrive, counted from the connection, or from
    # the head's first byte on a kept-alive one; else 408 (or a plain close if nothing came).
    header_timeout: float = Field(default=10.0, gt=0)
    # Seconds an idle kept-alive connection stays open.
    keep_alive_timeout: int = Field(default=5, ge=1)
    # Open connections (and requests in progress) beyond this are answered 503.
    max_connections: int = Field(default=1000, ge=1)
    # WebSocket connections (subscriptions) a process holds beyond those; one more is closed
    # with 1013 at once. They have places of their own, so sockets never starve HTTP.
    max_websockets: int = Field(default=1000, ge=1)
    # Of those, what one client address may hold (closed with 1013 past it), and one token's
    # holder (its subject; closed with 4029 at connection_init past it): no client takes
    # every place. Per process, as MAX_WEBSOCKETS; a proxy in front caps addresses overall.
    max_websockets_per_address: int = Field(default=50, ge=1)
    max_websockets_per_token: int = Field(default=10, ge=1)
    # Peers whose X-Forwarded-For (or Forwarded) names the client: addresses or networks,
    # comma-separated, or * for every peer (uvicorn's setting, which it reads too). The
    # default trusts a proxy on this machine only.
    forwarded_allow_ips: Annotated[list[str], NoDecode] = Field(
        default_factory=lambda: list(LOOPBACK_PROXIES)
    )
    # Points a request may cost (storage queries it could run, see schema.cost).
    max_query_cost: int = Field(default=_SCHEMA.max_cost, ge=1)
    max_response_nodes: int = Field(default=_SCHEMA.max_nodes, ge=1)  # objects a response may hold
    # Bytes of JSON an answer (or one subscription event) may hold; a larger one is refused
    # before it is sent with QUERY_TOO_COMPLEX (an event's ends its subscription).
    max_response_bytes: int = Field(default=4 * 1024 * 1024, ge=1024)
    # Anonymous queries over GET without errors may be kept by browsers and shared caches
    # (CDN, proxy) this many seconds, and served stale for this many more while one request
    # revalidates them (with the ETag: a 304 when nothing changed). Short, so that a new
    # comment shows within a minute or so. CACHE_MAX_AGE=0: nothing is kept (no-store).
    cache_max_age: int = Field(default=30, ge=0)
    cache_stale_while_revalidate: int = Field(default=60, ge=0)
    # Answers of at least this many bytes are sent gzip-compressed to clients that accept it;
    # smaller ones gain little (a few hundred bytes fit one packet either way). 0: nothing
    # is compressed (for a proxy in front that compresses).
    gzip_min_bytes: int = Field(default=1024, ge=0)
    # Automatic persisted queries (Apollo's protocol), and the bytes their store may hold.
    apq: bool = True
    apq_max_bytes: int = Field(default=16 * 1024 * 1024, ge=0)
    # Bytes the process's own map of public answers may hold (server.http.answers); it
    # serves only while the process follows the table's stream, which drops what a change
    # touches. 0: off.
    answer_cache_bytes: int = Field(default=32 * 1024 * 1024, ge=0)
    # A manifest of trusted documents (hash to document, as graphql-codegen's client preset
    # writes it): when set, only its operations run.
    trusted_documents: Path | None = None
    # Performance switches (see benchmarks/RESULTS.md for what each is worth).
    graphql_caches: bool = _SCHEMA.caches  # parser and validation caches
    orjson: bool = True  # encode responses with orjson
    gc_freeze: bool = True  # move start-up objects out of the collector's way
    uvicorn_loop: Literal["auto", "asyncio", "uvloop"] = "auto"
    uvicorn_http: Literal["auto", "h11", "httptools"] = "auto"

    @field_validator("cors_origins", "cors_allow_headers", "forwarded_allow_ips", mode="before")
    @classmethod
    def _split(cls, value: object) -> object:
        return split_commas(value)

    @field_validator("cors_origins")
    @classmethod
    def _origins(cls, value: list[str]) -> list[str]:
        # Compared with the Origin header as they are: one that no browser sends would
        # refuse every call without a word.
        origins = [origin.lower() for origin in value]
        if "*" in origins:
            # Tokens travel in a header, not cookies, yet any site could read whatever a
            # visitor's browser can reach: in development, GraphiQL's page on loopback with
            # the dev tokens; behind a firewall, an internal deployment. Allowed origins
            # are listed, always.
            raise ValueError(
                "CORS_ORIGINS: * would let every website read the API's answers in its "
                "visitors' browsers (in development, the dev tokens on GraphiQL's page); "
                "list the origins, e.g. https://shop.example"
            )
        if not all(_ORIGIN.fullmatch(origin) for origin in origins):
            raise ValueError(
                "CORS_ORIGINS must be origins as browsers send them, comma-separated: "
                "scheme://host[:port], e.g. https://shop.example (no path, no trailing /)"
            )
        return origins

    @field_validator("cors_allow_headers")
    @classmethod
    def _header_names(cls, value: list[str]) -> list[str]:
        names = [name.strip().lower() for name in value if name.strip()]
        for name in names:
            if not _HEADER_NAME.fullmatch(name):
                raise ValueError("CORS_ALLOW_HEADERS must be header names, comma-separated")
        return names

    @field_validator("forwarded_allow_ips")
    @classmethod
    def _proxies(cls, value: list[str]) -> list[str]:
        try:
            TrustedProxies.parse(value)
        except ValueError:
            raise ValueError(
                "FORWARDED_ALLOW_IPS must be IP addresses or networks, comma-separated, or *"
            ) from None
        return value

    @property
    def graphiql_on(self) -> bool:
        return not self.production if self.graphiql is None else self.graphiql

    @property
    def explain_on(self) -> bool:
        return not self.production if self.explain is None else self.explain

    @property
    def introspection_on(self) -> bool:
        return not self.production if self.introspection is None else self.introspection

    @property
    def suggestions_on(self) -> bool:
        return not self.production if self.field_suggestions is None else self.field_suggestions

    @property
    def trusted_proxies(self) -> TrustedProxies:
        return TrustedProxies.parse(self.forwarded_allow_ips)

    @property
    def cache_policy(self) -> CachePolicy:
        return CachePolicy(self.cache_max_age, self.cache_stale_while_revalidate)
