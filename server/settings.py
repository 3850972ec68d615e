"""Configuration from the environment (pydantic-settings); see the README's table."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Annotated, Literal, Self

import httpx
from pydantic import Field, field_validator, model_validator
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict

from resolvers.auth import DEFAULT_MAX_LIFETIME
from resolvers.claims import ClaimMap, ClaimPath
from resolvers.keys import DEFAULT_ALGORITHMS, KEY_TYPES
from schema import SchemaOptions
from server.dev.demo import DEMO_PRODUCTS
from server.http.caching import CachePolicy
from server.http.forwarded import LOOPBACK_PROXIES, TrustedProxies
from server.jwks import FetchLimits
from server.observability.logs import LogFormat
from server.observability.metrics import DEFAULT_MAX_OPERATIONS
from server.secret_file import SECRET_MIN_BYTES, secret_from_file
from storage.engine.client import ClientSettings
from storage.live.feed import DEFAULT_QUEUE
from storage.model.comments import ModerationMode
from storage.reads.planner import DEFAULT_TUNING
from storage.reads.snapshots import DEFAULT_BYTES as DEFAULT_PLAN_MEMORY
from storage.writes import DEFAULT_LIMITS, DEFAULT_RATES, WriteLimits, WriteRates
from storage.writes.reports import DEFAULT_THRESHOLD as DEFAULT_REPORT_THRESHOLD

# Defaults of the layers these settings configure are defined there, once, and read here.
_CLIENT = ClientSettings()
_SCHEMA = SchemaOptions()
_CLAIMS = ClaimMap()
_FETCH = FetchLimits()
# Hosts of a JWT_JWKS_URL that may be fetched over plain http (as httpx.URL names them).
_LOOPBACK_NAMES = frozenset({"localhost", "127.0.0.1", "::1"})

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

# Worker processes `serve` may run: a few per core, for machines of up to a few dozen cores.
MAX_WORKERS = 64

# Where Prometheus scrapes: nowhere, /metrics on the server's own port, or a listener of
# its own (METRICS_HOST:METRICS_PORT).
MetricsMode = Literal["off", "on", "port"]
# The port OpenTelemetry's and Prometheus's exporters use by convention.
DEFAULT_METRICS_PORT = 9464

# hide_input_in_errors: a refused value (a secret among them) never appears in the error.
_FROM_ENVIRONMENT = SettingsConfigDict(
    env_prefix="", case_sensitive=False, extra="ignore", hide_input_in_errors=True
)


class StorageSettings(BaseSettings):
    """Where the table is: all that the commands which only read or write it need."""

    model_config = _FROM_ENVIRONMENT

    # Unset: `comments serve` starts DynamoDB Local itself, with data under DATA_DIR; the
    # table commands go to AWS itself.
    dynamodb_endpoint_url: str | None = None
    dynamodb_table: str = "comments"
    aws_region: str = _CLIENT.region
    # Performance switches of storage.engine.client (docs/benchmarks/results.md says what each
    # is worth).
    fast_attribute_parsing: bool = _CLIENT.fast_attribute_parsing  # the attribute pass-through
    static_user_agent: bool = _CLIENT.static_user_agent  # a User-Agent made once per client
    direct_reads: bool = _CLIENT.direct_reads  # the hot reads without botocore's machinery

    def client_settings(self) -> ClientSettings:
        return ClientSettings(
            endpoint_url=self.dynamodb_endpoint_url,
            region=self.aws_region,
            fast_attribute_parsing=self.fast_attribute_parsing,
            static_user_agent=self.static_user_agent,
            direct_reads=self.direct_reads,
        )


class TokenSettings(BaseSettings):
    """How bearer tokens are signed and checked: what the server and `comments token` share."""

    model_config = _FROM_ENVIRONMENT

    # Unset in embedded mode: generated at start-up, with a dev token printed.
    jwt_secret: str | None = None
    # Where the secret is kept when JWT_SECRET is unset: made there (random, mode 0600) the
    # first time the file is missing, read from it after (server.secret_file).
    jwt_secret_file: Path | None = None
    # When set, tokens must carry exactly this iss / aud.
    jwt_issuer: str | None = None
    jwt_audience: str | None = None
    # Seconds a token may live (exp - iat); tokens must then carry iat. 0: no cap.
    jwt_max_lifetime: int = Field(default=DEFAULT_MAX_LIFETIME, ge=0)
    # The login provider's published keys (JWKS): tokens are checked with those instead of
    # JWT_SECRET (one or the other), with the algorithms of JWT_ALGORITHMS only; JWT_ISSUER,
    # JWT_AUDIENCE and AUTHOR_ID_KEY are then required.
    jwt_jwks_url: str | None = None
    jwt_algorithms: Annotated[list[str], NoDecode] = Field(
        default_factory=lambda: list(DEFAULT_ALGORITHMS)
    )
    # Seconds the key set is used before a refresh in the background; at most one fetch per
    # JWT_JWKS_MIN_INTERVAL seconds (a token naming an unknown key asks for one); seconds
    # and bytes one fetch may take; and the age past which a set that cannot be refreshed
    # is no longer trusted (every token is refused until a fetch succeeds).
    jwt_jwks_cache_seconds: float = Field(default=_FETCH.cache_seconds, ge=1, le=86400)
    jwt_jwks_min_interval: float = Field(default=_FETCH.min_interval, ge=1, le=3600)
    jwt_jwks_timeout: float = Field(default=_FETCH.timeout, gt=0, le=30)
    jwt_jwks_max_bytes: int = Field(default=_FETCH.max_bytes, ge=1024, le=4 * 1024 * 1024)
    jwt_jwks_max_age: float = Field(default=_FETCH.max_age, ge=60, le=7 * 86400)
    # Where the claims are (a dotted path, or a JSON pointer starting with /; resolvers.claims)
    # and the provider's names of the moderator and merchant roles.
    jwt_claim_subject: str = _CLAIMS.subject.text
    jwt_claim_name: str = _CLAIMS.name.text
    jwt_claim_roles: str = _CLAIMS.roles.text
    jwt_claim_purchases: str = _CLAIMS.purchases.text
    jwt_role_moderator: str = Field(default=_CLAIMS.moderator_role, min_length=1)
    jwt_role_merchant: str = Field(default=_CLAIMS.merchant_role, min_length=1)
    # Key of the public author ids (Comment.authorId); unset: derived from JWT_SECRET, so
    # set it to keep the ids when rotating that secret. Required with JWT_JWKS_URL.
    author_id_key: str | None = None

    @field_validator("jwt_algorithms", mode="before")
    @classmethod
    def _split_algorithms(cls, value: object) -> object:
        if isinstance(value, str):
            return [v.strip() for v in value.split(",") if v.strip()]
        return value

    @field_validator("jwt_algorithms")
    @classmethod
    def _asymmetric(cls, value: list[str]) -> list[str]:
        if not value or not set(value) <= KEY_TYPES.keys():
            raise ValueError(f"JWT_ALGORITHMS must be some of {', '.join(KEY_TYPES)}")
        return value

    @field_validator(
        "jwt_claim_subject", "jwt_claim_name", "jwt_claim_roles", "jwt_claim_purchases"
    )
    @classmethod
    def _claim_path(cls, value: str) -> str:
        ClaimPath(value)
        return value

    @field_validator("jwt_jwks_url")
    @classmethod
    def _jwks_url(cls, value: str | None) -> str | None:
        if value is None:
            return None
        # Keys fetched in the clear could be swapped on the way: HTTPS, but for loopback. The
        # host is the one the URL parser finds (``http://127.0.0.1:80@evil.example/`` is
        # evil.example's), and a URL with a user or password is refused whole (it would
        # hide the host from anyone reading it, and put a secret in the logs).
        try:
            url = httpx.URL(value)
        except httpx.InvalidURL as exc:
            raise ValueError("JWT_JWKS_URL is not a URL") from exc
        if url.userinfo:
            raise ValueError("JWT_JWKS_URL must not carry a user or password")
        if url.scheme != "https" and not (url.scheme == "http" and url.host in _LOOPBACK_NAMES):
            raise ValueError("JWT_JWKS_URL must be an https:// URL (http:// only on loopback)")
        return value

    @model_validator(mode="after")
    def _jwks_needs(self) -> Self:
        if self.jwt_jwks_url is None:
            return self
        if self.jwt_secret is not None or self.jwt_secret_file is not None:
            raise ValueError("JWT_JWKS_URL and JWT_SECRET (or JWT_SECRET_FILE): set one of them")
        if not self.jwt_issuer or not self.jwt_audience:
            raise ValueError(
                "JWT_JWKS_URL needs JWT_ISSUER and JWT_AUDIENCE: the provider signs tokens "
                "for other applications too"
            )
        if self.author_id_key is None or len(self.author_id_key.encode()) < SECRET_MIN_BYTES:
            raise ValueError(
                f"JWT_JWKS_URL needs AUTHOR_ID_KEY of at least {SECRET_MIN_BYTES} bytes (the "
                "public author ids' key; see the README to keep the ids a JWT_SECRET gave)"
            )
        return self

    @property
    def claim_map(self) -> ClaimMap:
        return ClaimMap(
            subject=ClaimPath(self.jwt_claim_subject),
            name=ClaimPath(self.jwt_claim_name),
            roles=ClaimPath(self.jwt_claim_roles),
            purchases=ClaimPath(self.jwt_claim_purchases),
            moderator_role=self.jwt_role_moderator,
            merchant_role=self.jwt_role_merchant,
        )

    @property
    def fetch_limits(self) -> FetchLimits:
        return FetchLimits(
            cache_seconds=self.jwt_jwks_cache_seconds,
            min_interval=self.jwt_jwks_min_interval,
            timeout=self.jwt_jwks_timeout,
            max_bytes=self.jwt_jwks_max_bytes,
            max_age=self.jwt_jwks_max_age,
        )

    @field_validator("jwt_secret")
    @classmethod
    def _long_enough(cls, value: str | None) -> str | None:
        # RFC 7518: an HS256 key should have at least 256 bits.
        if value is not None and len(value.encode()) < SECRET_MIN_BYTES:
            raise ValueError("JWT_SECRET must be at least 32 bytes")
        return value

    @model_validator(mode="after")
    def _secret_from_file(self) -> Self:
        if self.jwt_secret is None and self.jwt_secret_file is not None:
            self.jwt_secret = secret_from_file(self.jwt_secret_file)
        return self


# Where the embedded engine keeps its data (and development its secret), unless DATA_DIR.
DEFAULT_DATA_DIR = Path(".data")

# The origins of the usual frontend dev servers (Next.js, Create React App on 3000; Vite on
# 5173), by either loopback name: `comments serve` in development and docker compose allow
# them when CORS_ORIGINS is not set, so a widget on a dev server calls the API at once.
DEV_CORS_ORIGINS = (
    "http://localhost:3000",
    "http://127.0.0.1:3000",
    "http://localhost:5173",
    "http://127.0.0.1:5173",
)


class Settings(StorageSettings, TokenSettings):
    """Everything the server reads: the storage and token settings and its own."""

    model_config = _FROM_ENVIRONMENT

    host: str = "127.0.0.1"
    port: int = Field(default=8000, ge=0, le=65535)
    # Processes serving requests (server.workers); 1: the server runs in this process.
    workers: int = Field(default=1, ge=1, le=MAX_WORKERS)
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
    data_dir: Path = DEFAULT_DATA_DIR
    # Every storage call of one request must finish within this many seconds.
    storage_timeout: float = Field(default=5.0, gt=0)
    # Create the table at start-up (unset: only with the embedded engine).
    create_table: bool | None = None
    # Demo data written when this start created the table.
    seed_demo: bool = True
    # Print a ready-to-paste dev token at start-up (unset: only when the secret is generated).
    dev_token: bool | None = None
    # Head-room of fan-out reads, in standard deviations (storage.reads.planner.Tuning.z).
    read_headroom: float = Field(default=DEFAULT_TUNING.z, ge=0, le=5)
    # Bytes of the process's snapshots of counters and page heads (storage.reads.snapshots), by
    # which a filtered page takes one storage round; 0 turns them off.
    plan_memory_bytes: int = Field(default=DEFAULT_PLAN_MEMORY, ge=0, le=1 << 30)
    # Per-author write limits, kept in DynamoDB (0 lifts one): comments one author may have
    # on one product, and comments one author may create per clock hour. (0 here is None,
    # no limit, in WriteLimits.)
    comments_per_product: int = Field(default=DEFAULT_LIMITS.per_product or 0, ge=0)
    comments_per_hour: int = Field(default=DEFAULT_LIMITS.per_hour or 0, ge=0)
    # Every other write one author may make per hour, by family (0 lifts one): counted in
    # DynamoDB before the write, over a sliding hour (storage.writes.rates says why each
    # default is what it is).
    edits_per_hour: int = Field(default=DEFAULT_RATES.edit or 0, ge=0)
    deletes_per_hour: int = Field(default=DEFAULT_RATES.delete or 0, ge=0)
    replies_per_hour: int = Field(default=DEFAULT_RATES.reply or 0, ge=0)
    reports_per_hour: int = Field(default=DEFAULT_RATES.report or 0, ge=0)
    votes_per_hour: int = Field(default=DEFAULT_RATES.vote or 0, ge=0)
    moderations_per_hour: int = Field(default=DEFAULT_RATES.moderate or 0, ge=0)
    # post: new comments are published at once; pre: new and edited comments wait as
    # PENDING until a moderator approves them.
    moderation: Literal["post", "pre"] = "post"
    # Distinct viewers whose reports since the last decision return a published comment to
    # PENDING.
    report_threshold: int = Field(default=DEFAULT_REPORT_THRESHOLD, ge=1, le=1000)
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
    # A manifest of trusted documents (hash to document, as graphql-codegen's client preset
    # writes it): when set, only its operations run.
    trusted_documents: Path | None = None
    # Performance switches (see benchmarks/RESULTS.md for what each is worth).
    graphql_caches: bool = _SCHEMA.caches  # parser and validation caches
    orjson: bool = True  # encode responses with orjson
    gc_freeze: bool = True  # move start-up objects out of the collector's way
    uvicorn_loop: Literal["auto", "asyncio", "uvloop"] = "auto"
    uvicorn_http: Literal["auto", "h11", "httptools"] = "auto"
    access_log: bool = True
    demo_products: int = Field(default=DEMO_PRODUCTS, ge=0)
    # Live updates: each process follows the table's stream (a table made with
    # CREATE_TABLE gets one; migrate-table turns it on for an older one) and serves the
    # commentEvents subscription over WebSocket. Off: no stream is followed, subscriptions
    # are refused with LIVE_UPDATES_UNAVAILABLE, and a table this start creates has none.
    live_updates: bool = True
    # Seconds between polls of a quiet stream (each poll is one GetRecords per open shard;
    # DynamoDB throttles a shard read by more than two readers at once, see the README).
    stream_poll_seconds: float = Field(default=0.25, gt=0, le=10)
    # Subscriptions one WebSocket connection, and one process, may hold.
    subscriptions_per_connection: int = Field(default=10, ge=1, le=1000)
    subscriptions_per_process: int = Field(default=10_000, ge=1, le=1_000_000)
    # What live updates may cost, in points: the storage calls one event of a subscription
    # may make (schema.cost's estimate of its document) plus one for resolving it at all.
    # Charged once, when the subscription starts: per subscription (its document), per
    # connection (its subscriptions), per product, per client and per process (the distinct
    # resolutions: subscribers sharing a document, variables and view share one). Refused
    # over any of them: QUERY_TOO_COMPLEX for the first two, TOO_MANY_SUBSCRIPTIONS for the
    # others (server.http.event_groups).
    subscription_event_cost: int = Field(default=5, ge=0, le=100)
    subscription_connection_cost: int = Field(default=20, ge=1, le=10_000)
    subscription_product_cost: int = Field(default=200, ge=1, le=1_000_000)
    subscription_process_cost: int = Field(default=5000, ge=1, le=10_000_000)
    # The points of the groups one client (an IPv4 address, an IPv6 /64) started and that
    # still run: joining a running group is free, so viewers of a page share it, and no
    # one client takes a product's or the process's budget.
    subscription_client_cost: int = Field(default=40, ge=1, le=1_000_000)
    # Bytes of JSON one subscription event may hold (and MAX_RESPONSE_BYTES, if smaller):
    # an event is one comment and the counters, whose texts at their limits come to well
    # under this; a larger one ends its subscription with QUERY_TOO_COMPLEX.
    subscription_event_bytes: int = Field(default=128 * 1024, ge=1024, le=64 * 1024 * 1024)
    # Events waiting for one subscriber before it is ended as TOO_SLOW.
    subscription_queue: int = Field(default=DEFAULT_QUEUE, ge=1, le=10_000)
    # Seconds a connection may stay without a subscription (then closed, 4000), and may
    # take to send connection_init (then closed, 4408).
    subscription_idle_seconds: float = Field(default=300, gt=0, le=86400)
    connection_init_seconds: float = Field(default=10, gt=0, le=600)
    # Prometheus metrics: off; on: GET /metrics on this server's port; port: a listener of
    # its own on METRICS_HOST:METRICS_PORT (the parent's, with several workers). Unset: on in
    # development, port in production, so that the public port never serves them.
    metrics: MetricsMode | None = None
    metrics_host: str = "127.0.0.1"
    metrics_port: int = Field(default=DEFAULT_METRICS_PORT, ge=1, le=65535)
    # Distinct operation names a process labels its metrics with; later ones are "other".
    metrics_operations: int = Field(default=DEFAULT_MAX_OPERATIONS, ge=1, le=1000)
    # text: the lines as they have always been; json: one JSON object a line, and one line
    # per request (with ACCESS_LOG) carrying its operation, outcome and storage figures.
    log_format: LogFormat = "text"
    # Traces over OTLP (http/protobuf) to this collector; unset or empty: no tracing.
    otel_exporter_otlp_endpoint: str | None = None

    @field_validator("cors_origins", "cors_allow_headers", "forwarded_allow_ips", mode="before")
    @classmethod
    def _split(cls, value: object) -> object:
        if isinstance(value, str):
            return [v.strip() for v in value.split(",") if v.strip()]
        return value

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

    @model_validator(mode="after")
    def _secret_from_file(self) -> Self:
        # TokenSettings' rule (this one takes its place, so runs before the rules below),
        # except that in production no secret is made: every host must share one given.
        if self.jwt_secret is None and self.jwt_secret_file is not None:
            self.jwt_secret = secret_from_file(self.jwt_secret_file, create=not self.production)
        return self

    @model_validator(mode="after")
    def _production_needs(self) -> Self:
        if self.production and self.embedded:
            raise ValueError("PRODUCTION needs DYNAMODB_ENDPOINT_URL (no embedded engine)")
        if self.production and self.jwt_secret is None and self.jwt_jwks_url is None:
            raise ValueError("PRODUCTION needs JWT_SECRET or JWT_JWKS_URL")
        return self

    @model_validator(mode="after")
    def _metrics_port_apart(self) -> Self:
        if self.metrics_mode == "port" and self.metrics_port == self.port:
            raise ValueError(
                "METRICS_PORT must differ from PORT: metrics have a listener of their own"
            )
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
    def metrics_mode(self) -> MetricsMode:
        if self.metrics is None:
            return "port" if self.production else "on"
        return self.metrics

    @property
    def tracing_on(self) -> bool:
        return bool(self.otel_exporter_otlp_endpoint)

    @property
    def request_lines(self) -> bool:
        """One JSON line per request, which replaces uvicorn's access line."""
        return self.log_format == "json" and self.access_log

    @property
    def trusted_proxies(self) -> TrustedProxies:
        return TrustedProxies.parse(self.forwarded_allow_ips)

    @property
    def cache_policy(self) -> CachePolicy:
        return CachePolicy(self.cache_max_age, self.cache_stale_while_revalidate)

    @property
    def moderation_mode(self) -> ModerationMode:
        return ModerationMode(self.moderation)

    @property
    def write_limits(self) -> WriteLimits:
        return WriteLimits(
            per_product=self.comments_per_product or None,
            per_hour=self.comments_per_hour or None,
            rates=WriteRates(
                edit=self.edits_per_hour or None,
                delete=self.deletes_per_hour or None,
                reply=self.replies_per_hour or None,
                report=self.reports_per_hour or None,
                vote=self.votes_per_hour or None,
                moderate=self.moderations_per_hour or None,
            ),
        )

    @property
    def embedded(self) -> bool:
        return not self.dynamodb_endpoint_url

    @property
    def creates_table(self) -> bool:
        return self.embedded if self.create_table is None else self.create_table
