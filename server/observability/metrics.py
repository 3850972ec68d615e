"""Prometheus metrics of the API (``METRICS``, see the manual's docs/operations.md).

``Metrics`` holds one application's metrics in a registry of its own. What each request
adds is little: a few label lookups (children are kept per label value) and the figures
of its storage meter. Caches and persisted queries count their own lookups in plain
integers; the differences are added to the counters after each request.

Label values are bounded: operation names come from clients as free text, so only names
that match ``OPERATION_NAME`` are kept, and at most ``max_operations`` distinct ones per
process; the rest are ``other``, a request without a name is ``anonymous``.

With several worker processes (``serve --workers N``) the parent points
``PROMETHEUS_MULTIPROC_DIR`` at a fresh private directory before the workers start:
prometheus-client then keeps each process's values in files there, and a scrape of any
worker, or of the parent's listener, adds up every process.

Module-level functions report what happens outside a request to the running
application's metrics, and do nothing when metrics are off:

- ``subscriptions_open(count)``: the subscriptions this process holds, set as each
  starts and ends (``comments_subscriptions_open``, summed over live processes);
- ``subscription_resolved(calls)``: one event resolved for a group of subscriptions, with
  the storage calls it made (``comments_subscription_resolutions_total`` and
  ``comments_subscription_storage_calls_total``): the work live updates cost, which
  does not grow with subscribers who share a document;
- ``stream_lag(seconds)``: how far behind the newest change this process's stream reader
  is, the age of the last record read (``comments_stream_lag_seconds``, the largest over
  live processes);
- ``stream_events(count)``: stream records read (``comments_stream_events_total``);
- ``stream_gaps(count)``: changes the reader could not read (``comments_stream_gaps_total``);
- ``stream_reads()``: one GetRecords call of this process, whichever reader made it
  (``comments_stream_get_records_total``): a shard allows about two readers, so with a
  fan-out broker only the processes holding a shard read it;
- ``fanout_received(count)``: changes this process took from the fan-out broker
  (``comments_fanout_changes_total``);
- ``subscription_ended(code)``: the server ended a subscription with that error code
  (``comments_subscriptions_ended_total``: TOO_SLOW, EVENTS_LOST...);
- ``http_refused(reason)``, ``websocket_refused(reason)``: a request or a WebSocket
  connection refused before the application served it (``comments_http_refusals_total``,
  ``comments_websocket_refusals_total``);
- ``StorageWatcher``: the engine seam's watcher (``storage.engine.seam.SeamWatcher``),
  counting calls storage made again and throttling (``comments_storage_retries_total``,
  ``comments_storage_throttles_total``).

Whether a process takes its changes from the fan-out broker (``comments_fanout_processes``,
summed over live processes) is set once by its lifespan (``server.runtime``), which knows.

Every process also exports its version (``comments_build_info``), its CPU time and memory
by pid (``server.observability.processes``), and the workers' restarts that the parent of
workers counts (``comments_worker_restarts_total``, 0 in a single process).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Literal

from prometheus_client import (
    CONTENT_TYPE_LATEST,
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    generate_latest,
    start_http_server,
    values,
)
from prometheus_client.multiprocess import MultiProcessCollector
from starlette.requests import Request
from starlette.responses import Response

from server.environment import multiprocess_dir as _multiprocess_dir
from server.observability.build import version
from server.observability.processes import ProcessFigures
from storage.engine.metering import Meter
from storage.engine.seam import RetryReason

# What became of a GraphQL request: ok (no errors), error (executed, with errors),
# internal (an unexpected error, masked), request_error (nothing executed: the document
# did not parse or validate, cost too much...), refused (refused before GraphQL could run
# it: not acceptable, not JSON, a persisted query not found...).
Outcome = Literal["ok", "error", "internal", "request_error", "refused"]

# A GraphQL name, up to 64 characters.
OPERATION_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,63}")
# An error code as the contract writes them.
ERROR_CODE = re.compile(r"[A-Z][A-Z0-9_]{0,63}")
ANONYMOUS = "anonymous"
OTHER = "other"
DEFAULT_MAX_OPERATIONS = 50
# Error codes are the server's own, a few dozen: the cap only guards against a bug.
MAX_ERROR_CODES = 100

# Why a request was refused before the application saw it (server.http.head_limits):
# past MAX_CONNECTIONS (uvicorn answers 503), a head too large (431) or too slow (408).
HttpRefusal = Literal["max_connections", "head_too_large", "head_timeout"]
# Why a WebSocket connection was refused (server.http.sockets): no place left in the
# process or for its address (closed with 1013), or for its token's holder (4029).
WebSocketRefusal = Literal["max_websockets", "per_address", "per_token"]
# The codes the server ends subscriptions with (server.http.event_groups, storage.live.feed).
ENDING_CODES = (
    "TOO_SLOW",
    "EVENTS_LOST",
    "STORAGE_UNAVAILABLE",
    "QUERY_TOO_COMPLEX",
    "INTERNAL_SERVER_ERROR",
)
# The DynamoDB operations requests and the stream's reader make (label values made at
# start, so that a first throttle is an increase Prometheus sees).
DATA_OPERATIONS = (
    "query",
    "get_item",
    "batch_get_item",
    "put_item",
    "update_item",
    "delete_item",
    "transact_write_items",
    "batch_write_item",
)
RETRY_REASONS: tuple[RetryReason, ...] = ("sdk", "transaction", "unprocessed")
# Counted by the parent of workers (server.workers), declared at 0 by every process.
WORKER_RESTARTS = "comments_worker_restarts"
WORKER_RESTARTS_HELP = "Worker processes that died and were replaced (serve --workers N)"

DURATION_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)
ITEMS_BUCKETS = (0, 1, 5, 10, 25, 50, 100, 250, 500, 1000, 2500)
CAPACITY_BUCKETS = (0, 0.5, 1, 2, 5, 10, 25, 50, 100, 250)
ROUNDS_BUCKETS = (0, 1, 2, 3, 4, 6, 8, 12)


@dataclass(slots=True)
class BoundedLabel:
    """Label values from outside, bounded: a value that matches ``pattern`` is itself while
    it is one of the first ``limit`` such values seen, else ``other``; None is
    ``anonymous``."""

    pattern: re.Pattern[str]
    limit: int
    admitted: set[str] = field(default_factory=set)

    def __call__(self, value: str | None) -> str:
        if value is None:
            return ANONYMOUS
        if value in self.admitted:
            return value
        if len(self.admitted) >= self.limit or not self.pattern.fullmatch(value):
            return OTHER
        if value in (ANONYMOUS, OTHER):
            return value
        self.admitted.add(value)
        return value


@dataclass(slots=True)
class _Tally:
    """Counts kept elsewhere in plain integers, added to counters as they grow."""

    read: Callable[[], Sequence[int]]
    counters: Sequence[Counter]
    seen: list[int]

    def sync(self) -> None:
        for i, now in enumerate(self.read()):
            if now != self.seen[i]:
                self.counters[i].inc(now - self.seen[i])
                self.seen[i] = now


def multiprocess_dir() -> str | None:
    """The directory of multiprocess mode, when this process runs in it: the variable was
    set before prometheus-client was imported (a worker's parent sets it)."""
    path = _multiprocess_dir()
    if path and getattr(values.ValueClass, "_multiprocess", False):
        return path
    return None


def multiprocess_registry(path: str) -> CollectorRegistry:
    """A registry that adds up every process's values kept under ``path``."""
    registry = CollectorRegistry(auto_describe=False)
    # prometheus-client leaves this constructor unannotated.
    MultiProcessCollector(registry, path=path)  # type: ignore[no-untyped-call]
    return registry


class Metrics:
    """One application's metrics, in a registry of its own."""

    def __init__(self, *, max_operations: int = DEFAULT_MAX_OPERATIONS) -> None:
        self.registry = registry = CollectorRegistry(auto_describe=False)
        path = multiprocess_dir()
        # What a scrape reads: every process's files in multiprocess mode, else this registry.
        self.scraped = registry if path is None else multiprocess_registry(path)
        self.operation = BoundedLabel(OPERATION_NAME, max_operations)
        self.error_code = BoundedLabel(ERROR_CODE, MAX_ERROR_CODES)
        by_operation = ["operation"]
        self.duration = Histogram(
            "comments_graphql_request_duration_seconds",
            "GraphQL requests: seconds from the request's arrival to its answer, by operation "
            "name and outcome",
            ["operation", "outcome"],
            buckets=DURATION_BUCKETS,
            registry=registry,
        )
        self.errors = Counter(
            "comments_graphql_errors",
            "Errors in GraphQL responses, by extensions.code",
            ["code"],
            registry=registry,
        )
        self.calls = Counter(
            "comments_storage_calls",
            "Storage calls made for GraphQL requests, by DynamoDB operation",
            ["operation"],
            registry=registry,
        )
        self.items_read = Histogram(
            "comments_storage_items_read",
            "Items one GraphQL request read from storage (scanned, for queries), by operation",
            by_operation,
            buckets=ITEMS_BUCKETS,
            registry=registry,
        )
        self.read_units = Histogram(
            "comments_storage_read_capacity_units",
            "Read capacity units one GraphQL request consumed, by operation",
            by_operation,
            buckets=CAPACITY_BUCKETS,
            registry=registry,
        )
        self.write_units = Histogram(
            "comments_storage_write_capacity_units",
            "Write capacity units one GraphQL request consumed, by operation",
            by_operation,
            buckets=CAPACITY_BUCKETS,
            registry=registry,
        )
        self.rounds = Histogram(
            "comments_storage_rounds",
            "Sequential storage rounds of one GraphQL request (overlapping calls count once), "
            "by operation",
            by_operation,
            buckets=ROUNDS_BUCKETS,
            registry=registry,
        )
        self.cache_lookups = Counter(
            "comments_cache_lookups",
            "Lookups in the process's caches (parsed documents, validated documents, the plan "
            "memory's counters and page heads, public answers), by cache and result (hit, miss)",
            ["cache", "result"],
            registry=registry,
        )
        self.persisted_queries = Counter(
            "comments_persisted_queries",
            "Persisted queries: requests by hash whose document was found (hit) or not (miss), "
            "and documents registered",
            ["result"],
            registry=registry,
        )
        self.answer_events = Counter(
            "comments_answer_cache_events",
            "The process's map of public answers: answers evicted for room, dropped because "
            "something they read changed (invalidated), and not kept because something they "
            "read changed while they ran, or the stream was lost (not_stored)",
            ["event"],
            registry=registry,
        )
        self.answer_bytes = Gauge(
            "comments_answer_cache_bytes",
            "Bytes the process's map of public answers holds (summed over processes)",
            registry=registry,
            multiprocess_mode="livesum",
        )
        self.subscriptions = Gauge(
            "comments_subscriptions_open",
            "Subscriptions open",
            registry=registry,
            multiprocess_mode="livesum",
        )
        self.resolutions = Counter(
            "comments_subscription_resolutions",
            "Subscription events resolved: one per event and group of subscriptions sharing "
            "a document, variables and view, however many subscribers the group has",
            registry=registry,
        )
        self.resolution_calls = Counter(
            "comments_subscription_storage_calls",
            "Storage calls made resolving subscription events",
            registry=registry,
        )
        self.stream_lag = Gauge(
            "comments_stream_lag_seconds",
            "Age of the last stream record read, in seconds (the largest over processes)",
            registry=registry,
            multiprocess_mode="livemax",
        )
        self.stream_events = Counter(
            "comments_stream_events",
            "Stream records read",
            registry=registry,
        )
        self.stream_gaps = Counter(
            "comments_stream_gaps",
            "Gaps in the stream: changes that could not be read (an expired iterator, "
            "trimmed records)",
            registry=registry,
        )
        self.stream_reads = Counter(
            "comments_stream_get_records",
            "GetRecords calls on the table's stream (a shard allows about two readers at once)",
            registry=registry,
        )
        self.fanout_changes = Counter(
            "comments_fanout_changes",
            "Changes of the table taken from the fan-out broker (FANOUT_URL)",
            registry=registry,
        )
        self.purges = Counter(
            "comments_purges",
            "Purge requests to the shared caches in front (PURGE_URLS) by outcome (sent: "
            "confirmed; failed: kept and tried again)",
            ["outcome"],
            registry=registry,
        )
        for outcome in PURGE_OUTCOMES:  # exported at zero from the start
            self.purges.labels(outcome=outcome)
        self.purge_pending = Gauge(
            "comments_purge_pending_tags",
            "Cache tags waiting to be purged (or purged again) in one cache, the largest over "
            "processes: it grows while the cache does not answer",
            ["target"],
            registry=registry,
            multiprocess_mode="livemax",
        )
        # 1 in a process that takes its changes from the broker, 0 in one that follows the
        # stream itself: what tells the fan-out's alerts which hosts use it, and a rolling
        # deploy that turns FANOUT_URL on how far it has gone.
        self.fanout_processes = Gauge(
            "comments_fanout_processes",
            "Processes that take the table's changes from the fan-out broker (FANOUT_URL), "
            "summed over live processes",
            registry=registry,
            multiprocess_mode="livesum",
        )
        self.webhook_deliveries = Counter(
            "comments_webhook_deliveries",
            "Webhook delivery attempts by outcome (sent: answered 2xx; failed: to be retried; "
            "given_up: kept as failed after the retry horizon, replayable)",
            ["outcome"],
            registry=registry,
        )
        for outcome in WEBHOOK_OUTCOMES:  # exported at zero from the start
            self.webhook_deliveries.labels(outcome=outcome)
        self.subscriptions_ended = Counter(
            "comments_subscriptions_ended",
            "Subscriptions the server ended, by the error code they were ended with "
            "(TOO_SLOW: the subscriber fell behind; EVENTS_LOST, STORAGE_UNAVAILABLE...)",
            ["code"],
            registry=registry,
        )
        self.http_refusals = Counter(
            "comments_http_refusals",
            "HTTP requests refused before the application saw them, by reason "
            "(max_connections: 503 past MAX_CONNECTIONS; head_too_large: 431; head_timeout: 408)",
            ["reason"],
            registry=registry,
        )
        self.websocket_refusals = Counter(
            "comments_websocket_refusals",
            "WebSocket connections refused, by reason (max_websockets, per_address: closed "
            "with 1013; per_token: closed with 4029)",
            ["reason"],
            registry=registry,
        )
        self.storage_retries = Counter(
            "comments_storage_retries",
            "Storage calls made again, by reason (sdk: by botocore within one call, for "
            "throttling or a 5xx; transaction: a transaction cancelled by a conflict or "
            "throttling; unprocessed: a batch call's items left unprocessed)",
            ["reason"],
            registry=registry,
        )
        self.storage_throttles = Counter(
            "comments_storage_throttles",
            "Storage calls DynamoDB throttled once botocore's own retries were spent, and "
            "transactions it cancelled for throttling, by DynamoDB operation",
            ["operation"],
            registry=registry,
        )
        self.worker_restarts = Counter(WORKER_RESTARTS, WORKER_RESTARTS_HELP, registry=registry)
        self.build_info = Gauge(
            "comments_build_info",
            "The server's build: always 1, labelled with its version",
            ["version"],
            registry=registry,
            multiprocess_mode="livemax",
        )
        self.build_info.labels(version()).set(1)
        self.process = ProcessFigures(registry, multiprocess=path is not None)
        # Label values known in advance start at 0, so that the first event is an
        # increase a rate sees (a series that appears at 1 shows no increase).
        for code in ENDING_CODES:
            self.subscriptions_ended.labels(code)
        for http_reason in ("max_connections", "head_too_large", "head_timeout"):
            self.http_refusals.labels(http_reason)
        for socket_reason in ("max_websockets", "per_address", "per_token"):
            self.websocket_refusals.labels(socket_reason)
        for retry_reason in RETRY_REASONS:
            self.storage_retries.labels(retry_reason)
        for operation in DATA_OPERATIONS:
            self.storage_throttles.labels(operation)
        # Children by label value, so that a request looks each up once in a plain dict.
        self._durations: dict[tuple[str, str], Histogram] = {}
        self._errors: dict[str, Counter] = {}
        self._calls: dict[str, Counter] = {}
        self._figures: dict[str, tuple[Histogram, Histogram, Histogram, Histogram]] = {}
        self._tallies: list[_Tally] = []
        self._levels: list[Callable[[], None]] = []

    def watch_lookups(self, cache: str, read: Callable[[], tuple[int, int]]) -> None:
        """Count the hits and misses that ``read`` reports for ``cache`` (totals so far)."""
        counters = [
            self.cache_lookups.labels(cache, "hit"),
            self.cache_lookups.labels(cache, "miss"),
        ]
        self._tallies.append(_Tally(read, counters, [0, 0]))

    def watch_answers(self, read: Callable[[], tuple[int, int, int, int]]) -> None:
        """Count the answer map's evictions, invalidations and answers not kept, and show
        its bytes (``read``: those three totals so far, and the bytes now)."""
        counters = [self.answer_events.labels(e) for e in ("evicted", "invalidated", "not_stored")]
        self._tallies.append(_Tally(lambda: read()[:3], counters, [0, 0, 0]))
        self._levels.append(lambda: self.answer_bytes.set(read()[3]))

    def watch_persisted(self, read: Callable[[], tuple[int, int, int]]) -> None:
        """Count persisted-query hits, misses and registrations (totals so far)."""
        counters = [self.persisted_queries.labels(r) for r in ("hit", "miss", "registered")]
        self._tallies.append(_Tally(read, counters, [0, 0, 0]))

    def observe_request(
        self,
        operation: str | None,
        outcome: Outcome,
        seconds: float,
        meter: Meter | None,
        codes: Sequence[str] = (),
    ) -> None:
        """Count one GraphQL request: its duration, error codes and storage figures."""
        label = self.operation(operation)
        key = (label, outcome)
        duration = self._durations.get(key)
        if duration is None:
            duration = self._durations[key] = self.duration.labels(label, outcome)
        duration.observe(seconds)
        for code in codes:
            error = self._errors.get(code)
            if error is None:
                error = self._errors[code] = self.errors.labels(self.error_code(code))
            error.inc()
        if meter is not None:
            figures = self._figures.get(label)
            if figures is None:
                figures = self._figures[label] = (
                    self.items_read.labels(label),
                    self.read_units.labels(label),
                    self.write_units.labels(label),
                    self.rounds.labels(label),
                )
            items, reads, writes, rounds = figures
            items.observe(meter.items_read)
            reads.observe(meter.read_capacity)
            writes.observe(meter.write_capacity)
            rounds.observe(meter.rounds)
            for call, count in meter.calls.items():
                counter = self._calls.get(call)
                if counter is None:
                    counter = self._calls[call] = self.calls.labels(call)
                counter.inc(count)
        for tally in self._tallies:
            tally.sync()
        for level in self._levels:
            level()

    def exposition(self) -> bytes:
        """The text a scrape gets: this process's metrics, or every process's (this
        process's own figures sampled first)."""
        self.process.sample()
        return generate_latest(self.scraped)

    async def endpoint(self, request: Request) -> Response:
        """``GET /metrics`` on the application's own port (``METRICS=on``)."""
        return Response(self.exposition(), media_type=CONTENT_TYPE_LATEST)

    @contextmanager
    def active(self) -> Iterator[Metrics]:
        """While the block runs, the module-level functions report to these metrics, and
        the process's CPU and memory are sampled (``server.observability.processes``)."""
        _active.append(self)
        try:
            with self.process.sampling():
                yield self
        finally:
            _active.remove(self)


# The metrics of the application running in this process (its lifespan puts them here):
# subscription and stream counts belong to the process, and the code that reports them
# (a stream reader, a WebSocket handler) need not carry the application around.
_active: list[Metrics] = []


def subscriptions_open(count: int) -> None:
    """The subscriptions this process holds now (``comments_subscriptions_open``)."""
    if _active:
        _active[-1].subscriptions.set(count)


def subscription_resolved(calls: int) -> None:
    """One subscription event was resolved, with ``calls`` storage calls
    (``comments_subscription_resolutions_total``, ``comments_subscription_storage_calls_total``)."""
    if _active:
        _active[-1].resolutions.inc()
        if calls > 0:
            _active[-1].resolution_calls.inc(calls)


def stream_lag(seconds: float) -> None:
    """How far this process's stream reader is behind: the age of the record it read last
    (``comments_stream_lag_seconds``)."""
    if _active:
        _active[-1].stream_lag.set(max(0.0, seconds))


def stream_events(count: int = 1) -> None:
    """``count`` stream records were read (``comments_stream_events_total``)."""
    if _active and count > 0:
        _active[-1].stream_events.inc(count)


def stream_gaps(count: int = 1) -> None:
    """The stream reader missed changes ``count`` times (``comments_stream_gaps_total``)."""
    if _active and count > 0:
        _active[-1].stream_gaps.inc(count)


def stream_reads() -> None:
    """One GetRecords call (``comments_stream_get_records_total``)."""
    if _active:
        _active[-1].stream_reads.inc()


def fanout_received(count: int) -> None:
    """``count`` changes taken from the fan-out broker (``comments_fanout_changes_total``)."""
    if _active and count > 0:
        _active[-1].fanout_changes.inc(count)


PURGE_OUTCOMES = ("sent", "failed")


def purges(outcome: str) -> None:
    """A purge request ended with ``outcome`` (``comments_purges_total``)."""
    if _active and outcome in PURGE_OUTCOMES:
        _active[-1].purges.labels(outcome=outcome).inc()


def purge_pending(target: str, tags: int) -> None:
    """Tags waiting for one cache (``comments_purge_pending_tags``)."""
    if _active:
        _active[-1].purge_pending.labels(target=target).set(tags)


WEBHOOK_OUTCOMES = ("sent", "failed", "given_up")


def webhook_delivery(outcome: str) -> None:
    """A webhook delivery attempt ended with ``outcome`` (``comments_webhook_deliveries_total``)."""
    if _active and outcome in WEBHOOK_OUTCOMES:
        _active[-1].webhook_deliveries.labels(outcome=outcome).inc()


def subscription_ended(code: str) -> None:
    """The server ended a subscription with ``code`` (``comments_subscriptions_ended_total``)."""
    if _active:
        metrics = _active[-1]
        metrics.subscriptions_ended.labels(metrics.error_code(code)).inc()


def http_refused(reason: HttpRefusal) -> None:
    """A request was refused before the application saw it (``comments_http_refusals_total``)."""
    if _active:
        _active[-1].http_refusals.labels(reason).inc()


def websocket_refused(reason: WebSocketRefusal) -> None:
    """A WebSocket connection was refused (``comments_websocket_refusals_total``)."""
    if _active:
        _active[-1].websocket_refusals.labels(reason).inc()


class StorageWatcher:
    """The engine seam's watcher (``storage.engine.seam.SeamWatcher``): what storage is
    told of retries and throttling goes to the running application's metrics."""

    def retried(self, reason: RetryReason, count: int) -> None:
        if _active and count > 0:
            _active[-1].storage_retries.labels(reason).inc(count)

    def throttled(self, operation: str) -> None:
        if _active:
            _active[-1].storage_throttles.labels(operation).inc()


@contextmanager
def listener(registry: CollectorRegistry, host: str, port: int) -> Iterator[None]:
    """A listener of its own for scrapes (``METRICS=port``), in a thread, until the block
    ends; it answers every path with the metrics of ``registry``."""
    server, thread = start_http_server(port, addr=host, registry=registry)
    try:
        yield
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)
