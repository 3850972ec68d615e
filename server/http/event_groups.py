"""Subscriptions that share one resolution per event, and the budgets of live updates.

A write to a product reaches every subscription on it. Resolved one by one, its cost would
be (subscriptions) x (each document's cost per event), and one client opening many
sockets could make every write as costly as it likes. So subscriptions are grouped: those
with the same document, operation and variables, seen the same way, are one *group*, whose
operation runs once; each event is resolved once and the result handed to every member.
"Seen the same way": a document that selects no field of the viewer's own
(``VIEWER_FIELDS``) is resolved as an anonymous viewer would see it, for every member,
signed in or not; one that does is grouped per token. A field missing from that list
would be shown as anonymous viewers see it, never as another viewer does.

Budgets, in points (the storage calls one event may make, as schema.cost estimates the
document, plus one for resolving it at all), charged once when a subscription starts and
given back when it ends:

- per subscription and per connection: the handler's (server.http.subscriptions);
- per product: the points of the distinct groups on one product, which bound the work one
  write to it makes in this process, however many subscribe (``product_cost``); a product
  group watched (``commentEvents(groupId:)``) has a budget of its own, the same size;
- per client (an IPv4 address or an IPv6 /64): the points of the groups it started and
  still holds (``client_cost``), so that no one client takes a product's or the process's
  budget; joining a group that runs costs a client nothing, and when the client that
  started a group leaves it, one that holds it pays for it from then on;
- per process: the points of all its groups (``process_cost``);
- and the count of subscriptions the process holds (``max_members``).

Past any of the last four a subscription is refused with TOO_MANY_SUBSCRIPTIONS (retry
later).

Buffers: a group holds no events (it hands each result out as it comes); each member
holds at most ``queue_size`` results, references to the group's one copy, each at most
``max_bytes`` of JSON (a larger event, or a larger list of errors, ends the group with
QUERY_TOO_COMPLEX). A member that falls that far behind is ended with TOO_SLOW, alone. What
is encoded for a connection is its own: server.http.subscriptions encodes and sends one message
of a connection at a time, so a connection holds at most one encoded event beyond what
its socket is sending.

Every member the server ends (TOO_SLOW alone, or with its group: the code of the result
the group ends with) is counted by that code (``comments_subscriptions_ended_total``).
"""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field

import orjson
from graphql import GraphQLError
from strawberry.types import ExecutionResult
from strawberry.types.execution import PreExecutionError

from server.observability import metrics as process_metrics

log = logging.getLogger("comments.subscriptions")

# Fields whose value depends on who asks (type, field): a document selecting one is
# resolved per viewer (per token), any other as an anonymous viewer sees it.
VIEWER_FIELDS = frozenset(
    {
        ("Comment", "viewerVote"),
        ("Comment", "moderation"),
        ("Comment", "moderationNote"),
        ("Comment", "authorSubject"),
        ("Comment", "topicMatches"),
    }
)

Start = Callable[[], Awaitable[AsyncGenerator[ExecutionResult, None]]]


class Refused(Exception):
    """A subscription the process will not take now; ``code`` is its contract code."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code

    def error(self) -> GraphQLError:
        return GraphQLError(str(self), extensions={"code": self.code})


@dataclass(frozen=True, slots=True)
class GroupKey:
    """What makes two subscriptions one: the same operation, the same variables (as
    canonical JSON), seen by the same viewer (None: as anonymous viewers see it)."""

    query: str
    operation_name: str | None
    variables: bytes
    viewer: str | None

    @classmethod
    def of(
        cls,
        query: str,
        operation_name: str | None,
        variables: object,
        viewer: str | None,
    ) -> GroupKey:
        canonical = orjson.dumps(variables or {}, option=orjson.OPT_SORT_KEYS)
        return cls(query, operation_name, canonical, viewer)


def _ended(code: str, message: str) -> ExecutionResult:
    return ExecutionResult(data=None, errors=[GraphQLError(message, extensions={"code": code})])


def _code(result: ExecutionResult) -> str:
    """The code of the first error a result ends a subscription with (they are coded by
    then, server.http.subscriptions)."""
    for error in result.errors or ():
        code = (error.extensions or {}).get("code")
        if isinstance(code, str):
            return code
    return "INTERNAL_SERVER_ERROR"


Encode = Callable[[object], str | bytes]


def _orjson(data: object) -> bytes:
    return orjson.dumps(data, default=str)


def result_bytes(result: ExecutionResult, encode: Encode = _orjson) -> int:
    """The size of a result's data and errors as ``encode`` writes them (the view's own
    encoder: with ORJSON=false it escapes every non-ASCII character, three times longer)."""
    errors = [e.formatted for e in result.errors or ()]
    encoded = encode({"data": result.data, "errors": errors})
    return len(encoded.encode() if isinstance(encoded, str) else encoded)


def bounded(
    result: ExecutionResult, max_bytes: int, encode: Encode = _orjson
) -> tuple[ExecutionResult, bool]:
    """The result, or an error in its place when it is larger than ``max_bytes`` of JSON
    (with whether it was replaced: the subscription ends then)."""
    size = result_bytes(result, encode)
    if size <= max_bytes:
        return result, False
    what = "An event" if result.data is not None else "The errors"
    message = (
        f"{what} of this subscription came to {size} bytes; at most {max_bytes} are "
        "allowed (MAX_RESPONSE_BYTES, SUBSCRIPTION_EVENT_BYTES). Select fewer fields."
    )
    error = GraphQLError(message, extensions={"code": "QUERY_TOO_COMPLEX"})
    if isinstance(result, PreExecutionError):
        return PreExecutionError(data=None, errors=[error]), True
    return ExecutionResult(data=None, errors=[error]), True


@dataclass(eq=False, slots=True)
class Member:
    """One subscription of a group: the results handed to it, until it ends."""

    group: Group
    queue_size: int
    # The client (server.http.forwarded.client_key) the subscription is of.
    client: str = "-"
    _queue: deque[ExecutionResult] = field(default_factory=deque)
    _ready: asyncio.Event = field(default_factory=asyncio.Event)
    _finished: bool = False

    def put(self, result: ExecutionResult, *, last: bool = False) -> None:
        """Queue ``result`` for the subscriber; ``last``: the group ends with it."""
        if self._finished:
            return
        if len(self._queue) >= self.queue_size:
            self._queue.clear()
            self._queue.append(
                _ended(
                    "TOO_SLOW",
                    f"More than {self.queue_size} events waited for this subscriber; "
                    "subscribe again and reload the page's comments.",
                )
            )
            process_metrics.subscription_ended("TOO_SLOW")
            self.finish()
            return
        self._queue.append(result)
        self._ready.set()
        if last:
            process_metrics.subscription_ended(_code(result))

    def finish(self) -> None:
        self._finished = True
        self._ready.set()

    async def results(self) -> AsyncIterator[ExecutionResult]:
        while True:
            if self._queue:
                yield self._queue.popleft()
                continue
            if self._finished:
                return
            self._ready.clear()
            await self._ready.wait()


@dataclass(eq=False, slots=True)
class Group:
    key: GroupKey
    product_id: str
    points: int
    # The client that started it, whose budget it counts against while it runs.
    client: str
    members: set[Member] = field(default_factory=set)
    task: asyncio.Task[None] | None = None
    # Resolutions run (events resolved once for all members); tests read it.
    resolved: int = 0


@dataclass(slots=True)
class EventGroups:
    """The groups of one process (see the module doc)."""

    product_cost: int
    process_cost: int
    client_cost: int
    max_members: int
    queue_size: int
    max_bytes: int
    # How the view writes JSON, by which an event's bytes are counted.
    encode: Encode = _orjson
    _groups: dict[GroupKey, Group] = field(default_factory=dict, init=False)
    _product_points: dict[str, int] = field(default_factory=dict, init=False)
    _client_points: dict[str, int] = field(default_factory=dict, init=False)
    # Points of all groups, and subscriptions held, now.
    points: int = field(default=0, init=False)
    members: int = field(default=0, init=False)

    @property
    def groups(self) -> int:
        return len(self._groups)

    def group_of(self, key: GroupKey) -> Group | None:
        return self._groups.get(key)

    def join(
        self, key: GroupKey, product_id: str, points: int, start: Start, client: str = "-"
    ) -> Member:
        """A member of the group of ``key``, made (and started with ``start``) if there is
        none, for ``client`` (server.http.forwarded.client_key). Raises Refused over a budget of
        the product, the client or the process."""
        if self.members >= self.max_members:
            raise Refused(
                "TOO_MANY_SUBSCRIPTIONS",
                "This server holds as many subscriptions as it may; retry later.",
            )
        group = self._groups.get(key)
        if group is None:
            on_product = self._product_points.get(product_id, 0)
            if on_product + points > self.product_cost:
                raise Refused(
                    "TOO_MANY_SUBSCRIPTIONS",
                    f"Live updates of this product would cost {on_product + points} points "
                    f"per event in this server; at most {self.product_cost} are allowed. "
                    "Subscribe with the same document as other viewers of the page, or "
                    "retry later.",
                )
            by_client = self._client_points.get(client, 0)
            if by_client + points > self.client_cost:
                raise Refused(
                    "TOO_MANY_SUBSCRIPTIONS",
                    f"The subscriptions this address started would cost {by_client + points} "
                    f"points per event in this server; at most {self.client_cost} are "
                    "allowed. Subscribe with the same document as other viewers of the "
                    "page, or complete one first.",
                )
            if self.points + points > self.process_cost:
                raise Refused(
                    "TOO_MANY_SUBSCRIPTIONS",
                    f"This server's live updates would cost {self.points + points} points "
                    f"per event; at most {self.process_cost} are allowed. Retry later.",
                )
            group = Group(key, product_id, points, client)
            self._groups[key] = group
            self._product_points[product_id] = on_product + points
            self._client_points[client] = by_client + points
            self.points += points
            group.task = asyncio.create_task(self._run(group, start))
        member = Member(group, self.queue_size, client)
        group.members.add(member)
        self.members += 1
        return member

    def leave(self, member: Member) -> None:
        """The member's subscription ended (completed, its client left, or it was ended)."""
        group = member.group
        if member not in group.members:
            return
        group.members.discard(member)
        self.members -= 1
        member.finish()
        if not group.members:
            self._dissolve(group)
            if group.task is not None:
                group.task.cancel()
        elif self._groups.get(group.key) is group and all(
            m.client != group.client for m in group.members
        ):
            # The client that started it has left it: whoever holds it now pays for it
            # (else the starter stays charged for others, and cannot start another).
            heir = min(group.members, key=lambda m: m.client).client
            _give_back(self._client_points, group.client, group.points)
            self._client_points[heir] = self._client_points.get(heir, 0) + group.points
            group.client = heir

    def _dissolve(self, group: Group) -> None:
        """Take the group out: nobody joins it any more, and its points are given back."""
        if self._groups.get(group.key) is not group:
            return
        del self._groups[group.key]
        _give_back(self._product_points, group.product_id, group.points)
        _give_back(self._client_points, group.client, group.points)
        self.points -= group.points

    async def _run(self, group: Group, start: Start) -> None:
        try:
            results = await start()
            try:
                async for result in results:
                    if not self._hand_out(group, result):
                        break
            finally:
                await results.aclose()
        except asyncio.CancelledError:
            raise
        except Exception:
            log.exception("a shared subscription failed")
            failed = _ended("INTERNAL_SERVER_ERROR", "The subscription failed; subscribe again.")
            self._broadcast(group, failed, last=True)
        finally:
            self._dissolve(group)
            for member in list(group.members):
                member.finish()

    def _hand_out(self, group: Group, result: ExecutionResult) -> bool:
        """Give one result to every member; False once the group ends with it."""
        group.resolved += 1
        ending = isinstance(result, PreExecutionError) or (
            result.data is None and bool(result.errors)
        )
        result, replaced = bounded(result, self.max_bytes, self.encode)
        ending = ending or replaced
        if ending:
            # Nobody joins a group that is ending: a newcomer starts a group of its own.
            self._dissolve(group)
        self._broadcast(group, result, last=ending)
        return not ending

    @staticmethod
    def _broadcast(group: Group, result: ExecutionResult, *, last: bool = False) -> None:
        for member in list(group.members):
            member.put(result, last=last)


def _give_back(points: dict[str, int], key: str, given: int) -> None:
    """Take ``given`` points off ``key``'s, keeping no entry at zero."""
    left = points[key] - given
    if left:
        points[key] = left
    else:
        del points[key]
