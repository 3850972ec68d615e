"""A simulation of the leaderboard's index partitions under many 5-star creates.

Each create is one TransactWriteItems of the comment (its real item, ``comment_to_item``,
with every index key a published comment has) and the product's ``S`` item with its
leaderboard entry in the product's home shard (``storage.model.leaderboard``), sent to the
benchmark's in-memory DynamoDB (``testing.fake_dynamo``) through ``ThrottledDynamo``: every index
partition a write puts an entry in draws one write unit (items under 1 KB) from a token
bucket of ``PARTITION_WCU`` units per second holding at most a tenth of a second of them
(DynamoDB caps a partition's rate; the bucket only smooths arrivals), in simulated time.
A write whose index partition has no unit left is refused whole, as DynamoDB's
back-pressure from an index refuses the table write behind it.

Creates arrive as a Poisson process at a given rate over products whose popularity is Zipf
distributed; the figure is the share of creates refused on their first attempt, by shard
count, beside the capacity model's prediction (``benchmarks.scale.model``) for the same
products. Not in CI (a test checks the logic on a small run)::

    .venv/bin/python -m benchmarks.scale.simulation

What it leaves out: the stats items' own table partition, and the one-writer-at-a-time
contention of a product's conditioned ``count_5`` writes (see docs/scale.md), which bite a
single hot product long before its index partitions do.
"""

from __future__ import annotations

import argparse
import asyncio
import bisect
import random
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from benchmarks.scale.model import (
    PARTITION_WCU,
    shard_shares,
    throttled_fraction,
    zipf_weights,
)
from storage.base.errors import Throttled
from storage.base.types import Item, Response
from storage.engine.wrapping import ClientWrapper
from storage.model import keys
from storage.model.comments import NewComment
from storage.model.indexes import Index
from storage.model.items import comment_to_item
from storage.model.leaderboard import home_partition, is_leader_partition
from testing.fake_dynamo import FakeDynamo

TABLE = "comments"
# A partition's bucket holds this many seconds of its rate.
BURST_SECONDS = 0.1
# Each index and the attributes of its keys.
_INDEX_KEYS = [(index.value, index.partition_attr, index.sort_attr) for index in Index]


@dataclass(slots=True)
class Clock:
    """Simulated time in seconds."""

    now: float = 0.0


@dataclass(slots=True)
class TokenBucket:
    """``rate`` units a second, at most ``capacity`` kept."""

    rate: float
    capacity: float
    tokens: float
    last: float = 0.0

    def refill(self, now: float) -> None:
        self.tokens = min(self.capacity, self.tokens + (now - self.last) * self.rate)
        self.last = now


@dataclass(slots=True)
class Tally:
    attempts: int = 0
    refused: int = 0
    # Refusals by the kind of partition that ran out: the leaderboard's or another index's.
    refused_by: Counter[str] = field(default_factory=Counter)


class ThrottledDynamo(ClientWrapper):
    """The fake DynamoDB behind per-index-partition write limits, in simulated time."""

    def __init__(
        self,
        inner: FakeDynamo,
        clock: Clock,
        wcu: float = PARTITION_WCU,
        *,
        burst: float = BURST_SECONDS,
        counted_from: float = 0,
    ) -> None:
        super().__init__(inner)
        self.clock = clock
        self.wcu = wcu
        self.burst = burst
        # Writes before this time are not counted: the buckets start full, and their burst
        # would hide the steady state.
        self.counted_from = counted_from
        self.buckets: dict[tuple[str, str], TokenBucket] = {}
        self.tally = Tally()

    async def _call(self, operation: str, kwargs: dict[str, Any]) -> Response:
        if operation == "transact_write_items":
            counted = self.clock.now >= self.counted_from
            self.tally.attempts += counted
            draws = [p for action in kwargs["TransactItems"] for p in _index_partitions(action)]
            short = [p for p in draws if self._bucket(p).tokens < 1]
            if short:
                if counted:
                    self.tally.refused += 1
                    leader = any(is_leader_partition(p[1]) for p in short)
                    self.tally.refused_by["leaderboard" if leader else "other"] += 1
                raise Throttled("an index partition is over its write capacity", "Throttling")
            for p in draws:
                self.buckets[p].tokens -= 1
        return await super()._call(operation, kwargs)

    def _bucket(self, partition: tuple[str, str]) -> TokenBucket:
        bucket = self.buckets.get(partition)
        if bucket is None:
            size = self.wcu * self.burst
            bucket = self.buckets[partition] = TokenBucket(self.wcu, size, size)
        bucket.refill(self.clock.now)
        return bucket


def _index_partitions(action: dict[str, Any]) -> list[tuple[str, str]]:
    """The index partitions a Put puts an entry in (an item under 1 KB: one unit each)."""
    item: Item = action.get("Put", {}).get("Item", {})
    return [
        (index, item[pk]["S"])
        for index, pk, sk in _INDEX_KEYS
        if pk in item and sk in item and "S" in item[pk]
    ]


@dataclass(frozen=True, slots=True)
class Outcome:
    shards: int
    rate: float
    attempts: int
    refused: int
    refused_by_leaderboard: int
    predicted: float

    @property
    def refused_share(self) -> float:
        return self.refused / self.attempts if self.attempts else 0.0


async def simulate(
    shards: int,
    rate: float,
    *,
    seconds: float = 6.0,
    warmup: float = 2.0,
    products: int = 10_000,
    zipf: float = 1.0,
    seed: int = 1,
    wcu: float = PARTITION_WCU,
    burst: float = BURST_SECONDS,
) -> Outcome:
    """``rate`` 5-star creates a second for ``seconds`` of simulated time over ``products``
    products, their leaderboard spread over ``shards`` shards; creates in the first
    ``warmup`` seconds are sent but not counted. ``wcu``: each index partition's write
    units a second (a smaller limit with a proportionally smaller rate runs faster and gives
    the same shares)."""
    rng = random.Random(seed)
    weights = zipf_weights(products, zipf)
    pids = [f"product-{n}" for n in range(products)]
    cumulative = []
    total = 0.0
    for w in weights:
        total += w
        cumulative.append(total)
    clock = Clock()
    client = ThrottledDynamo(FakeDynamo(), clock, wcu, burst=burst, counted_from=warmup)
    fives: dict[str, int] = {}
    t = rng.expovariate(rate)
    n = 0
    while t < seconds:
        clock.now = t
        pid = pids[bisect.bisect_left(cumulative, rng.random() * total)]
        five = fives.get(pid, 0) + 1
        try:
            await client.transact_write_items(TransactItems=_create(pid, five, shards, n))
        except Throttled:
            pass  # refused whole: the count stays as it was
        else:
            fives[pid] = five
        n += 1
        t += rng.expovariate(rate)
    # The model's fraction depends on the rate over the limit only.
    predicted = throttled_fraction(rate * PARTITION_WCU / wcu, shard_shares(weights, pids, shards))
    tally = client.tally
    return Outcome(
        shards, rate, tally.attempts, tally.refused, tally.refused_by["leaderboard"], predicted
    )


def _create(product_id: str, five: int, shards: int, n: int) -> list[dict[str, Any]]:
    """The puts of one 5-star create: the comment, and the S item with its entry."""
    comment = NewComment(product_id, "en", 5, "t", f"author-{n % 1000}").stored_as(
        f"{n:032x}", "2026-11-23T00:00:00.000Z", None
    )
    stats: Item = {
        "PK": {"S": keys.product_pk(product_id)},
        "SK": {"S": keys.STATS_ALL},
        "count_5": {"N": str(five)},
        Index.BY_LANG_AND_RATING.partition_attr: {"S": home_partition(product_id, shards)},
        Index.BY_LANG_AND_RATING.sort_attr: {"S": keys.leader_sort_key(five)},
    }
    return [
        {"Put": {"TableName": TABLE, "Item": comment_to_item(comment)}},
        {"Put": {"TableName": TABLE, "Item": stats}},
    ]


async def run(
    shard_counts: Sequence[int],
    rates: Sequence[float],
    seconds: float,
    warmup: float,
    products: int,
) -> list[Outcome]:
    return [
        await simulate(shards, rate, seconds=seconds, warmup=warmup, products=products)
        for shards in shard_counts
        for rate in rates
    ]


def table(outcomes: Sequence[Outcome]) -> str:
    lines = [
        "| shards | 5-star creates/s | creates | refused | by the leaderboard | model |",
        "|---|---|---|---|---|---|",
    ]
    for o in outcomes:
        lines.append(
            f"| {o.shards} | {o.rate:,.0f} | {o.attempts:,} | {o.refused_share:.1%} | "
            f"{o.refused_by_leaderboard:,} | {o.predicted:.1%} |"
        )
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shards", type=int, nargs="+", default=[1, 4, 8, 16])
    parser.add_argument("--rates", type=float, nargs="+", default=[500, 900, 1100, 2000, 4000])
    parser.add_argument("--seconds", type=float, default=6.0, help="simulated seconds")
    parser.add_argument(
        "--warmup", type=float, default=2.0, help="simulated seconds not counted (burst)"
    )
    parser.add_argument("--products", type=int, default=10_000)
    args = parser.parse_args(argv)
    outcomes = asyncio.run(run(args.shards, args.rates, args.seconds, args.warmup, args.products))
    print(
        f"{args.products:,} products, Zipf(1) popularity, {args.seconds:g} simulated seconds "
        f"(the first {args.warmup:g} not counted), {PARTITION_WCU:,.0f} WCU per index "
        f"partition ({BURST_SECONDS:g} s of burst)"
    )
    print()
    print(table(outcomes))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
