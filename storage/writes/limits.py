"""Per-author write limits, kept in DynamoDB so that they hold across processes.

Two items per author, both written in the transaction of the comment itself, so a limit
counts exactly the comments that exist (per product) or were created (per hour):

- ``AUTHOR#<digest> / PRODUCT#<product>``: how many comments the author has on the product.
  A create adds one under the condition that it stays within the limit; a delete of a
  comment that holds a slot gives it back.
- ``AUTHOR#<digest> / HOUR#<yyyy-mm-ddThh>``: comments created in that UTC hour, with a TTL.
  A fixed window: an author can write up to twice the rate across an hour boundary.

The other writes' rates (edits, votes...) are counted apart, before each write, by
``storage.writes.rates``; ``WriteLimits`` carries them so that one value configures all.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta

from storage.base.expressions import Attr, Update
from storage.engine.table import TableRef
from storage.model import keys
from storage.model.items import EXPIRES_ATTR, SLOT_COUNT_ATTR
from storage.writes.rates import DEFAULT_RATES, NO_RATES, WriteRates
from storage.writes.transaction import Part

PER_PRODUCT = "author-product"
PER_HOUR = "author-hour"


@dataclass(frozen=True, slots=True)
class WriteLimits:
    """Limits per author; None lifts one. ``rates`` are the other writes' (see
    ``storage.writes.rates``)."""

    # Comments one author may have on one product (review platforms allow one).
    per_product: int | None = 1
    # Comments one author may create per clock hour (UTC), across all products.
    per_hour: int | None = 30
    rates: WriteRates = field(default=DEFAULT_RATES)

    def __post_init__(self) -> None:
        for value in (self.per_product, self.per_hour):
            if value is not None and (isinstance(value, bool) or value < 1):
                raise ValueError("write limits must be positive or None")


NO_LIMITS = WriteLimits(per_product=None, per_hour=None, rates=NO_RATES)
DEFAULT_LIMITS = WriteLimits()


def product_part(
    table: TableRef, author: str, product_id: str, delta: int, limit: int | None
) -> Part:
    """Count a comment of ``author`` on the product in (+1) or out (-1)."""
    u = Update()
    n = Attr(SLOT_COUNT_ATTR)
    u.add(SLOT_COUNT_ATTR, delta)
    if delta > 0 and limit is not None:
        u.condition(n.not_exists() | n.le(limit - delta))
    elif delta < 0:
        u.condition(n.ge(-delta))
    key = {
        "PK": {"S": keys.author_pk(author)},
        "SK": {"S": keys.author_product_sk(product_id)},
    }
    return Part(PER_PRODUCT, {"Update": u.request(table.name, key)})


def hour_of(moment: datetime) -> datetime:
    return moment.replace(minute=0, second=0, microsecond=0)


def hour_part(table: TableRef, author: str, now: datetime, limit: int) -> Part:
    """Count a new comment in the author's current hour, within ``limit``."""
    hour = hour_of(now)
    u = Update()
    n = Attr(SLOT_COUNT_ATTR)
    u.add(SLOT_COUNT_ATTR, 1)
    # Kept an hour past its window, then left to TTL.
    u.set(EXPIRES_ATTR, int((hour + timedelta(hours=2)).timestamp()))
    u.condition(n.not_exists() | n.lt(limit))
    key = {
        "PK": {"S": keys.author_pk(author)},
        "SK": {"S": keys.author_hour_sk(hour.strftime("%Y-%m-%dT%H"))},
    }
    return Part(PER_HOUR, {"Update": u.request(table.name, key)})


def seconds_to_next_hour(now: datetime) -> int:
    return max(1, int((hour_of(now) + timedelta(hours=1) - now).total_seconds()) + 1)
