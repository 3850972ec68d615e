"""Per-author rates of the writes other than a create, kept in DynamoDB so that they hold
across processes.

Creates are counted in their own transaction (``storage.writes.limits``). Every other write
is counted here, by one ``UpdateItem`` on an item of the author's own, made before the
write and apart from its transaction: it adds no contention between different authors,
and a write that then fails (a comment not found) has still used its turn.

One item per author and family of writes, ``AUTHOR#<digest> / RATE#<family>``, holds the
author's count in each window (an hour) in an attribute named after the window's index
(``w<index>``). A write adds one to the current window's count under the condition that
it stays within the limit, removes the count of the window before the previous one, and
gets the item back. The rate is then estimated over a sliding hour, as a weighted sum of
two fixed windows: the previous window's count, weighted by the share of it the sliding
hour still covers, plus the current window's. Over the limit, the add is taken back and
the write refused. A fixed window alone would let an author write twice the limit within
seconds across a boundary; the sliding estimate lets no more than the limit through in a
short span, and a sliding hour holds more than the limit only when the previous hour's
writes all came at its very end (twice the limit at most).

The item expires (TTL) a window after its last write. An author who comes back after
two windows, before DynamoDB got round to deleting it, leaves the count of a long-gone
window behind: a few bytes, which the item's expiry removes with the rest.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from contextlib import suppress
from dataclasses import dataclass, fields
from datetime import datetime
from enum import StrEnum

from storage.base.clock import utc_now
from storage.base.errors import ConditionFailed, StorageError, WriteRateLimited
from storage.base.expressions import Attr, Update
from storage.base.types import Item
from storage.engine.table import TableRef
from storage.model import keys
from storage.model.items import EXPIRES_ATTR

# Seconds of one window; limits are per hour.
WINDOW = 3600
# Storage calls the check makes when it lets a write through (one UpdateItem). A refused
# write makes one more (the add taken back) and no write at all, so a mutation's storage
# calls stay within the write's own bound plus this.
CHECK_CALLS = 1


class Family(StrEnum):
    """Writes that share one rate; the value names the item and the ``WriteRates`` field."""

    EDIT = "edit"  # updateComment
    DELETE = "delete"  # deleteComment by its author
    REPLY = "reply"  # replyToComment, deleteReply (merchants)
    REPORT = "report"  # reportComment
    VOTE = "vote"  # voteHelpful, a withdrawal included
    MODERATE = "moderate"  # moderateComment, and a moderator's deleteComment


@dataclass(frozen=True, slots=True)
class WriteRates:
    """Writes one author may make per hour, per family; None lifts one. Every family has a
    field (a test checks it), so no family goes unlimited by omission."""

    # A comment is rewritten rarely; each edit is also an event for every live subscriber
    # of the product.
    edit: int | None = 30
    # Deleting one's own comment: as many as an author may create.
    delete: int | None = 30
    # A merchant answers many customers' comments in one sitting.
    reply: int | None = 120
    # Reports move a comment back to the queue: a few a minute is already a lot.
    report: int | None = 60
    # Votes are cheap (an ADD on the author's own vote item) and readers vote as they read.
    vote: int | None = 300
    # Moderators work through the queue; bounded all the same, so that a leaked moderator
    # token cannot rewrite the site at the engine's speed.
    moderate: int | None = 1200

    def __post_init__(self) -> None:
        for value in (getattr(self, f.name) for f in fields(self)):
            if value is not None and (isinstance(value, bool) or value < 1):
                raise ValueError("write rates must be positive or None")

    def limit(self, family: Family) -> int | None:
        """The family's limit per hour (None: lifted)."""
        value: int | None = getattr(self, Family(family).value)
        return value


DEFAULT_RATES = WriteRates()
NO_RATES = WriteRates(**{f.value: None for f in Family})


async def spend(
    table: TableRef,
    author: str,
    family: Family,
    limit: int | None,
    *,
    clock: Callable[[], datetime] = utc_now,
) -> None:
    """Count one write of ``family`` by ``author``, or raise ``WriteRateLimited`` (counting
    nothing) when it would take the author over ``limit`` in a sliding hour. None: no
    limit, and no storage call."""
    if limit is None:
        return
    family = Family(family)
    now = clock().timestamp()
    index = math.floor(now / WINDOW)
    fraction = now / WINDOW - index
    current = _window(index)
    key = {"PK": {"S": keys.author_pk(author)}, "SK": {"S": keys.author_rate_sk(family.value)}}
    u = Update()
    u.add(current, 1)
    u.remove(_window(index - 2))
    u.set(EXPIRES_ATTR, (index + 2) * WINDOW)
    count = Attr(current)
    u.condition(count.not_exists() | count.lt(limit))
    request = u.request(table.name, key, return_old=True)
    try:
        response = await table.client.update_item(**request, ReturnValues="ALL_NEW")
    except ConditionFailed as exc:
        previous, made = _counts(exc.item or {}, index, limit)
        raise _refused(family, limit, previous, max(made, limit), fraction) from exc
    previous, made = _counts(response.get("Attributes") or {}, index, limit)
    if made < 1:
        made = limit + 1  # the add is not in the answer: assume the worst
    if previous * (1 - fraction) + made > limit:
        undo = Update()
        undo.add(current, -1)
        undo.condition(Attr(current).ge(1))
        # An add not taken back (the call failed) counts against the author, never for.
        with suppress(StorageError):
            await table.client.update_item(**undo.request(table.name, key))
        raise _refused(family, limit, previous, made - 1, fraction)


def retry_after(limit: int, previous: int, made: int, fraction: float) -> int:
    """Whole seconds until the sliding estimate lets one more write through, given the
    previous window's count, the current one's (``made``, this write not included) and how
    far into the current window it is (0 to 1)."""
    wait: float
    if made + 1 <= limit and previous > 0:
        # Within this window, once the previous one weighs little enough.
        wait = max(0.0, 1 - (limit - made - 1) / previous - fraction)
    elif made + 1 <= limit:
        wait = 0.0
    else:
        # In the next window, where this window's count is the previous one's.
        start = 1 - (limit - 1) / made if made > 0 else 0.0
        wait = 1 - fraction + max(0.0, start)
    return max(1, math.ceil(wait * WINDOW) + 1)


def _refused(
    family: Family, limit: int, previous: int, made: int, fraction: float
) -> WriteRateLimited:
    return WriteRateLimited(
        limit, retry_after(limit, previous, made, fraction), writes=_NOUNS[family]
    )


_NOUNS = {
    Family.EDIT: "edits",
    Family.DELETE: "deletions",
    Family.REPLY: "replies",
    Family.REPORT: "reports",
    Family.VOTE: "votes",
    Family.MODERATE: "moderation actions",
}


def _window(index: int) -> str:
    return f"w{index}"


def _counts(item: Item, index: int, limit: int) -> tuple[int, int]:
    """The previous and the current window's counts in a rate item: 0 when absent, the
    limit when not a number (written by something else: never read as room to write)."""
    return _number(item, _window(index - 1), limit), _number(item, _window(index), limit)


def _number(item: Item, name: str, worst: int) -> int:
    value = item.get(name)
    if value is None:
        return 0
    try:
        return int(value["N"])
    except (KeyError, TypeError, ValueError):
        return worst
