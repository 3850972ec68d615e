"""Observability: Prometheus metrics, log lines, OpenTelemetry traces.

Defaults are those of ``server.observability``'s modules, read from there.
"""

from __future__ import annotations

import socket
from typing import Literal, Self

from pydantic import Field, model_validator
from pydantic_settings import BaseSettings

from server.observability.logs import LogFormat
from server.observability.metrics import DEFAULT_MAX_OPERATIONS
from server.settings.common import FROM_ENVIRONMENT

# Where Prometheus scrapes: nowhere, /metrics on the server's own port, or a listener of
# its own (METRICS_HOST:METRICS_PORT).
MetricsMode = Literal["off", "on", "port"]
# The port OpenTelemetry's and Prometheus's exporters use by convention.
DEFAULT_METRICS_PORT = 9464
# OpenTelemetry's samplers (OTEL_TRACES_SAMPLER's values) that the server offers; defined
# here, as server.observability.tracing is imported only when tracing is on.
TracesSampler = Literal[
    "parentbased_traceidratio",
    "parentbased_always_on",
    "parentbased_always_off",
    "traceidratio",
    "always_on",
    "always_off",
]
RATIO_SAMPLERS = frozenset({"parentbased_traceidratio", "traceidratio"})
DEFAULT_SAMPLER: TracesSampler = "parentbased_traceidratio"
# The ratio of requests traced that come without a caller's decision: a tenth in
# production (spans cost the collector and the backend), every one in development.
PRODUCTION_TRACES_RATIO = 0.1
DEVELOPMENT_TRACES_RATIO = 1.0


class ObservabilitySettings(BaseSettings):
    """Metrics, logs and traces."""

    model_config = FROM_ENVIRONMENT

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

    # The service's name on its spans; unset: "product-comments". (The OpenTelemetry SDK's
    # other OTEL_* variables, read by the SDK itself, apply as usual.)
    otel_service_name: str | None = None
    # Which requests are traced, by OpenTelemetry's names (read here rather than by the SDK,
    # so that a wrong one stops the start with one line): parentbased_* follow the caller's
    # traceparent decision and sample the rest as named; traceidratio keeps a ratio of
    # traces (OTEL_TRACES_SAMPLER_ARG, 0 to 1). Unset: parentbased_traceidratio, and the
    # ratio 0.1 in production, 1 in development.
    otel_traces_sampler: TracesSampler | None = None
    otel_traces_sampler_arg: float | None = Field(default=None, ge=0, le=1)
    # One log line per request: uvicorn's, or with LOG_FORMAT=json the request line that
    # replaces it (its operation, outcome and storage figures).
    access_log: bool = True

    @model_validator(mode="after")
    def _ratio_for_a_ratio_sampler(self) -> Self:
        sampler = self.otel_traces_sampler or DEFAULT_SAMPLER
        if self.otel_traces_sampler_arg is not None and sampler not in RATIO_SAMPLERS:
            raise ValueError(
                f"OTEL_TRACES_SAMPLER_ARG is a ratio: OTEL_TRACES_SAMPLER={sampler} takes none "
                "(traceidratio and parentbased_traceidratio do)"
            )
        return self

    @property
    def tracing_on(self) -> bool:
        return bool(self.otel_exporter_otlp_endpoint)

    @property
    def request_lines(self) -> bool:
        """One JSON line per request, which replaces uvicorn's access line."""
        return self.log_format == "json" and self.access_log


def listen_problem(host: str) -> str | None:
    """Why a listener cannot be opened on ``host`` on this machine, or None: the address
    the metrics listener takes (the first the name resolves to), bound on any port once."""
    try:
        found = socket.getaddrinfo(host, 0, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except (OSError, UnicodeError):
        return "is neither an address nor a name that resolves here"
    family, kind, protocol, _, address = found[0]
    try:
        with socket.socket(family, kind, protocol) as probe:
            probe.bind(address)
    except OSError as exc:
        return f"is not an address of this machine ({exc.strerror})"
    return None
