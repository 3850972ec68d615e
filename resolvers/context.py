"""The per-request context: a metered view of storage, DataLoaders, the caller, a deadline."""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field, replace
from typing import TypeVar

from resolvers import read_set
from resolvers.auth import TokenRules, Viewer, authenticate
from resolvers.authors import author_key, configured_key
from resolvers.errors import QueryTooComplex, Unauthenticated, Unavailable
from resolvers.loaders import Loaders
from resolvers.webhook_rules import WebhookRules
from storage.base.errors import CallBudgetExceeded, StorageError
from storage.engine.metering import Meter, MeteredClient
from storage.engine.table import TableRef
from storage.live.feed import Feed
from storage.model.comments import ModerationMode
from storage.model.erasure import Mode as ErasureMode
from storage.reads.planner import DEFAULT_TUNING, Tuning
from storage.writes import DEFAULT_LIMITS, WriteLimits
from storage.writes.reports import DEFAULT_THRESHOLD

T = TypeVar("T")
log = logging.getLogger("comments.writes")


# Whole-table scans one request may start.
TABLE_SCANS_MAX = 1


@dataclass(slots=True)
class Context:
    table: TableRef  # this request's metered view of the application's table
    meter: Meter
    loaders: Loaders
    request_id: str
    tokens: TokenRules
    authorization: str | None
    # Key of the public author ids (see resolvers.authors).
    author_key: bytes
    # Loop time by which every storage call of this request must have finished.
    deadline: float
    tuning: Tuning = DEFAULT_TUNING
    write_limits: WriteLimits = DEFAULT_LIMITS
    # Whether pages show their plan to everyone (EXPLAIN); moderators always see it.
    explain: bool = True
    moderation: ModerationMode = ModerationMode.POST
    report_threshold: int = DEFAULT_THRESHOLD
    # What an erasure does to the author's comments when the request does not say.
    erasure_mode: ErasureMode = ErasureMode.DELETE
    # Seconds a storage call may take: the request's deadline, and that of tidy-ups.
    storage_timeout: float = 5.0
    # The application's own table (not metered), from which ``renew`` makes a fresh view.
    app_table: TableRef | None = None
    # The process's feed of the table's stream (subscriptions); None: live updates are off.
    feed: Feed | None = None
    # The server's rules for webhook endpoints (resolvers.webhooks); None: the defaults.
    webhooks: WebhookRules | None = None
    # The request's accepted cost (its budget of storage calls), and the server's budget,
    # up to which work only execution can price (a count) may be added (``afford_...``).
    accepted_calls: int | None = None
    cost_ceiling: int | None = None
    # What a WebSocket client sent with connection_init (Strawberry sets it).
    connection_params: dict[str, object] | None = None
    # Whether the request came over a WebSocket (subscriptions run there only).
    over_socket: bool = False
    # Whether the answer read who is calling (``viewer``): one that did not is the same for
    # every caller, and a browser may keep it (server.http.app).
    viewer_read: bool = False
    # The operation the request runs, as the client named it or, once the document is
    # parsed, as the document does (for the server's metrics, traces and logs).
    operation_name: str | None = None
    # Awaited with a token before it is checked where that can wait (connection_init): a
    # key it names that the key set lacks is looked for (server.runtime.Runtime.ready_for).
    ready_for: Callable[[str | None], Awaitable[None]] | None = None
    # Fields that scan the whole table (privacy exports) this request has started.
    table_scans: int = 0
    # What the answer read, as cache tags (resolvers.read_set).
    reads: read_set.ReadSet = field(default_factory=read_set.ReadSet)

    def viewer(self) -> Viewer | None:
        """Who is calling, when a token came with the request (an invalid one is an error).
        Every field whose value depends on the caller reads it here, so ``viewer_read``
        tells whether the answer did."""
        if self.authorization is None:
            return None
        self.viewer_read = True
        return authenticate(self.authorization, self.tokens)

    def start_table_scan(self, what: str) -> None:
        """Refuse a second whole-table scan in one request (``QUERY_TOO_COMPLEX``): aliases
        would otherwise multiply the heaviest read there is by thirty."""
        if self.table_scans >= TABLE_SCANS_MAX:
            raise QueryTooComplex(f"{what} reads the whole table: one such field a request")
        self.table_scans += 1

    def may_explain(self) -> bool:
        """Plans name indexes and partition keys: shown to everyone only where EXPLAIN is
        on, and always to moderators. A bad token here only hides the plan; the fields
        that need a viewer report it."""
        if self.explain:
            return True
        try:
            viewer = self.viewer()
        except Unauthenticated:
            return False
        return viewer is not None and viewer.is_moderator

    def hide_read(self, comment_id: str) -> None:
        """The comment read by id is hidden from the viewer: its read leaves the figures
        the viewer is shown, so that they are an unknown id's (once per read)."""
        units = self.loaders.comments.read_units.pop(comment_id, None)
        if units is not None:
            self.meter.hide_read(1, units)

    async def storage(self, call: Awaitable[T]) -> T:
        """Await a storage call within the request's deadline and call budget."""
        try:
            async with asyncio.timeout_at(self.deadline):
                return await call
        except TimeoutError as exc:
            raise Unavailable("storage did not answer in time; retry") from exc
        except asyncio.CancelledError as exc:
            task = asyncio.current_task()
            if task is not None and task.cancelling():
                raise  # this field itself is being cancelled
            # A batch (DataLoader) this field waited on was cancelled along with the field
            # that started it (execution abandons siblings of a failed non-null field): the
            # read did not happen, which is an error of this field, not a crash of the
            # whole request.
            raise Unavailable("the read was abandoned; retry") from exc
        except CallBudgetExceeded as exc:
            raise QueryTooComplex(
                "This request has made the storage calls its estimated cost allows; this "
                "field was not read. Ask for smaller pages or fewer products per request."
            ) from exc

    async def after_commit(self, call: Awaitable[None], what: str) -> None:
        """Tidy-up that follows a committed write (a deleted comment's reports), within a
        deadline of its own and never an error of the request: the write has happened
        whatever becomes of it, and what a failed tidy-up leaves expires by itself."""
        try:
            async with asyncio.timeout(self.storage_timeout):
                await call
        except (TimeoutError, StorageError) as exc:
            log.warning(
                "%s after a committed write did not finish (%s); request %s",
                what,
                type(exc).__name__,
                self.request_id,
            )

    def limit_storage_calls(self, budget: int, ceiling: int | None = None) -> None:
        """Allow this request at most ``budget`` storage calls (its accepted cost), and up
        to ``ceiling`` (the server's budget) for what only execution can price."""
        self.meter.budget = self.accepted_calls = budget
        self.cost_ceiling = ceiling

    def afford_storage_calls(self, calls: int) -> bool:
        """Whether ``calls`` more storage calls, priced during execution (a count), fit
        under the server's budget; when they do, they are added to the request's."""
        if self.meter.budget is None:
            return True
        if self.cost_ceiling is None or self.meter.budget + calls > self.cost_ceiling:
            return False
        self.meter.budget += calls
        return True

    def for_operation(self) -> Context:
        """A context of its own for one operation on a WebSocket connection: the
        connection's caller, a new request id, meter, loaders and deadline."""
        operation = replace(self, request_id=uuid.uuid4().hex)
        operation.renew()
        return operation

    def renew(self) -> None:
        """Start a new round of work in this context (one subscription event is one): a
        new meter with the same budget of calls, new loaders (nothing cached from the last
        event), a new deadline. The caller and the request id stay."""
        if self.app_table is None:
            raise RuntimeError("a context made without its application's table")
        self.meter = Meter(budget=self.accepted_calls)
        self.table = _metered(self.app_table, self.meter)
        self.deadline = asyncio.get_running_loop().time() + self.storage_timeout
        self.loaders = Loaders.for_request(self.table, self.deadline)


def make_context(
    app_table: TableRef,
    *,
    request_id: str,
    tokens: TokenRules,
    authorization: str | None,
    storage_timeout: float,
    tuning: Tuning = DEFAULT_TUNING,
    write_limits: WriteLimits = DEFAULT_LIMITS,
    author_id_secret: str | None = None,
    explain: bool = True,
    moderation: ModerationMode = ModerationMode.POST,
    report_threshold: int = DEFAULT_THRESHOLD,
    feed: Feed | None = None,
    erasure_mode: ErasureMode = ErasureMode.DELETE,
    webhooks: WebhookRules | None = None,
) -> Context:
    """A fresh context: new meter, new loaders; the app's client, 5-star locks and plan
    memory."""
    # AUTHOR_ID_KEY, else (tokens signed with a secret) JWT_SECRET: the settings require
    # AUTHOR_ID_KEY when tokens are checked with a provider's keys, in production, and
    # while a previous secret is accepted.
    if author_id_secret:
        key = configured_key(author_id_secret)
    elif tokens.secret is not None:
        key = author_key(tokens.secret)
    else:
        raise RuntimeError("public author ids need AUTHOR_ID_KEY when there is no JWT_SECRET")
    meter = Meter()
    table = _metered(app_table, meter)
    deadline = asyncio.get_running_loop().time() + storage_timeout
    return Context(
        table=table,
        meter=meter,
        loaders=Loaders.for_request(table, deadline),
        request_id=request_id,
        tokens=tokens,
        authorization=authorization,
        author_key=key,
        deadline=deadline,
        tuning=tuning,
        write_limits=write_limits,
        explain=explain,
        moderation=moderation,
        report_threshold=report_threshold,
        erasure_mode=erasure_mode,
        storage_timeout=storage_timeout,
        app_table=app_table,
        feed=feed,
        webhooks=webhooks,
        reads=read_set.start(),
    )


def _metered(app_table: TableRef, meter: Meter) -> TableRef:
    """The application's table seen through ``meter``."""
    return TableRef(
        MeteredClient(app_table.client, meter),
        app_table.name,
        five_star_locks=app_table.five_star_locks,
        memories=app_table.memories,
    )
