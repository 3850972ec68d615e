"""A capacity model: from the project's measured costs to a shop's traffic.

Pure functions over two inputs: ``Figures``, what one page, one write and one request cost
(measured by the benchmarks, see the sources below), and ``Traffic``, a shop's load. They
give the capacity units, the processes, the monthly bill at on-demand prices, and how far
each DynamoDB limit is. ``python -m benchmarks.scale.model`` prints the tables of
docs/scale.md; tests/benchmarks/test_scale_model.py checks the arithmetic against
hand-computed cases.

Sources of the figures (docs/benchmarks/results.md, run of 2026-11-23):
- read units per page: "Read capacity per page", ours (the counters' read included):
  2.0 for a product page (stats and the newest 20 comments), 2.5 to 3.5 for filtered pages;
- write units per create: "Write cost against part 1's design": 21 WCU for a 5-star
  create (20 for other ratings), of which the two stats items (``S`` and ``S#<lang>``, under
  1 KB each, doubled in a transaction) are 4, and the leaderboard entry 1 (the 11th index
  entry of a 5-star create);
- CPU per request: "HTTP", ours, mixed workload, one worker: 8.52 ms;
- storage rounds per warm page: 1 (99 % of filtered pages, target 1).

Assumed, not measured here (DynamoDB Local is not AWS): the per-partition limits AWS
documents, on-demand prices, and the latency of one storage call on AWS.
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Sequence
from dataclasses import dataclass

from storage.model.leaderboard import shard_of

# AWS's documented per-partition throughput (also per GSI partition), per second.
PARTITION_WCU = 1000.0
PARTITION_RCU = 3000.0
ITEM_MAX_BYTES = 400 * 1024
TRANSACTION_ITEMS = 100
TRANSACTION_BYTES = 4 * 1024 * 1024
SECONDS_PER_MONTH = 30 * 24 * 3600


@dataclass(frozen=True, slots=True)
class Prices:
    """On-demand prices in dollars. Assumed: us-east-1, Standard table class, as listed on
    https://aws.amazon.com/dynamodb/pricing/on-demand/ in 2025 (after the November 2024
    reduction); check them before relying on any figure."""

    per_million_reads: float = 0.125  # read request units
    per_million_writes: float = 0.625  # write request units


@dataclass(frozen=True, slots=True)
class Figures:
    """What one thing costs, as measured (see the module doc)."""

    rru_product_page: float = 2.0
    rru_filtered_page: float = 2.5
    wru_create_five: float = 21.0
    wru_create_other: float = 20.0
    # Of a create's units, those on the product's table partition: S and S#<lang>, 1 KB
    # or less each, twice in a transaction.
    wru_stats_per_create: float = 4.0
    # The leaderboard entry's index write when a 5-star count changes.
    wru_leader_entry: float = 1.0
    # A leaderboard read: one query per shard of `first` stats items (10 items of about
    # 300 bytes: one 4 KB block, eventually consistent), plus the layout item read
    # strongly consistent (1 unit).
    rru_leader_query: float = 0.5
    rru_layout_read: float = 1.0
    cpu_ms_per_request: float = 8.52
    rounds_per_page: float = 1.0
    # Assumed latency of one storage call on AWS in the same region (not measured here).
    call_ms: float = 5.0
    # Assumed latency of one TransactWriteItems on AWS (not measured here).
    transaction_ms: float = 15.0


@dataclass(frozen=True, slots=True)
class Traffic:
    """A shop's load. Page views are product pages (stats and first comments) or filtered
    ones; ``cache_hit`` is the share a CDN or nginx answers without the API."""

    name: str
    page_views: float  # per second
    reviews: float  # creates per second
    products: int
    languages: int
    filtered_share: float = 0.2
    five_star_share: float = 0.6
    cache_hit: float = 0.0
    leaderboard_views: float = 0.0  # per second, before the cache
    leaderboard_shards: int = 1


def read_units(traffic: Traffic, figures: Figures = Figures()) -> float:
    """Read request units per second: the pages and leaderboards the cache lets through."""
    miss = 1.0 - traffic.cache_hit
    page = (
        1 - traffic.filtered_share
    ) * figures.rru_product_page + traffic.filtered_share * figures.rru_filtered_page
    board = leaderboard_read_units(traffic.leaderboard_shards, figures)
    return miss * (traffic.page_views * page + traffic.leaderboard_views * board)


def leaderboard_read_units(shards: int, figures: Figures = Figures()) -> float:
    """One leaderboard read outside a migration: a query per shard and the layout."""
    return shards * figures.rru_leader_query + figures.rru_layout_read


def write_units(traffic: Traffic, figures: Figures = Figures()) -> float:
    """Write request units per second of the reviews."""
    five = traffic.five_star_share
    per_create = five * figures.wru_create_five + (1 - five) * figures.wru_create_other
    return traffic.reviews * per_create


def monthly_cost(
    traffic: Traffic, figures: Figures = Figures(), prices: Prices = Prices()
) -> float:
    """Dollars a month of request units (storage and data transfer not included)."""
    reads = read_units(traffic, figures) * SECONDS_PER_MONTH / 1e6 * prices.per_million_reads
    writes = write_units(traffic, figures) * SECONDS_PER_MONTH / 1e6 * prices.per_million_writes
    return reads + writes


def cost_per_million_views(
    traffic: Traffic, figures: Figures = Figures(), prices: Prices = Prices()
) -> float:
    """Dollars of request units per million page views, the reviews written meanwhile
    included."""
    if traffic.page_views <= 0:
        raise ValueError("no page views")
    per_second = monthly_cost(traffic, figures, prices) / SECONDS_PER_MONTH
    return per_second / traffic.page_views * 1e6


def processes(traffic: Traffic, figures: Figures = Figures(), utilisation: float = 0.6) -> int:
    """API processes (one per core) for the requests the cache lets through, each kept at
    ``utilisation`` of its core; at least 2, so one can fail."""
    requests = (1 - traffic.cache_hit) * (traffic.page_views + traffic.leaderboard_views)
    requests += traffic.reviews
    busy = requests * figures.cpu_ms_per_request / 1000
    return max(2, math.ceil(busy / utilisation))


def page_storage_ms(figures: Figures = Figures(), cold: bool = False) -> float:
    """Storage latency of a page: its sequential rounds (one warm, at most two cold: the
    counters first) times one call's latency."""
    rounds = 2.0 if cold else figures.rounds_per_page
    return rounds * figures.call_ms


def leaderboard_write_ceiling(shards: int, figures: Figures = Figures()) -> float:
    """5-star changes per second the leaderboard takes before an index partition throttles,
    when they spread evenly over the shards."""
    return shards * PARTITION_WCU / figures.wru_leader_entry


def shard_shares(weights: Sequence[float], product_ids: Sequence[str], shards: int) -> list[float]:
    """Each shard's share of the 5-star writes, products weighted by their write rates."""
    total = sum(weights)
    shares = [0.0] * shards
    for weight, pid in zip(weights, product_ids, strict=True):
        shares[shard_of(pid, shards)] += weight / total
    return shares


def saturation_rate(shares: Sequence[float], figures: Figures = Figures()) -> float:
    """The table-wide 5-star write rate at which the busiest shard reaches its partition's
    limit."""
    return PARTITION_WCU / figures.wru_leader_entry / max(shares)


def throttled_fraction(rate: float, shares: Sequence[float], figures: Figures = Figures()) -> float:
    """The share of 5-star writes a steady ``rate`` loses to throttling (fluid model: each
    shard passes at most its partition's limit, the rest is throttled)."""
    limit = PARTITION_WCU / figures.wru_leader_entry
    return sum(max(0.0, rate * s - limit) for s in shares) / rate


@dataclass(frozen=True, slots=True)
class HotProduct:
    """The limits of one product's writes and reads, per second."""

    creates_by_partition: float  # its stats items' table partition
    creates_by_index_partition: float  # each of its listing index partitions
    five_star_creates_by_contention: float  # one conditioned S write at a time
    creates_by_contention: float  # one transaction on its stats items at a time
    uncached_page_views: float  # its `all` index partition and its S item's partition


def hot_product(figures: Figures = Figures(), query_rru: float = 1.5) -> HotProduct:
    """Where one product's load meets a limit. ``query_rru``: the page's query, the rest of
    ``rru_product_page`` being the stats item's read."""
    stats_read = figures.rru_product_page - query_rru
    return HotProduct(
        creates_by_partition=PARTITION_WCU / figures.wru_stats_per_create,
        creates_by_index_partition=PARTITION_WCU / 1.0,
        five_star_creates_by_contention=1000 / (figures.call_ms + figures.transaction_ms),
        creates_by_contention=1000 / figures.transaction_ms,
        uncached_page_views=min(PARTITION_RCU / query_rru, PARTITION_RCU / stats_read),
    )


SCENARIOS: tuple[Traffic, ...] = (
    Traffic("small shop", 20, 0.02, 5_000, 2, leaderboard_views=0.2),
    Traffic("mid-size shop", 500, 0.5, 100_000, 5, cache_hit=0.8, leaderboard_views=5),
    Traffic("large shop", 5_000, 5, 1_000_000, 10, cache_hit=0.9, leaderboard_views=50),
    Traffic(
        "marketplace",
        100_000,
        200,
        100_000_000,
        30,
        cache_hit=0.95,
        leaderboard_views=1_000,
        leaderboard_shards=4,
    ),
)


def zipf_weights(products: int, s: float = 1.0) -> list[float]:
    """Write rates of products ranked by popularity, Zipf with exponent ``s``."""
    return [1 / (rank**s) for rank in range(1, products + 1)]


def _table(header: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


def report(figures: Figures = Figures(), prices: Prices = Prices()) -> str:
    """The tables of docs/scale.md."""
    out = [
        f"Prices assumed: ${prices.per_million_reads:.3f} per million read units, "
        f"${prices.per_million_writes:.3f} per million write units.",
        "",
        _table(
            [
                "scenario",
                "page views/s",
                "cache hits",
                "reviews/s",
                "RRU/s",
                "WRU/s",
                "$/month (requests)",
                "$ per million views",
                "processes",
                "5-star changes/s vs leaderboard ceiling",
            ],
            [
                [
                    t.name,
                    f"{t.page_views:,.0f}",
                    f"{t.cache_hit:.0%}",
                    f"{t.reviews:g}",
                    f"{read_units(t, figures):,.1f}",
                    f"{write_units(t, figures):,.1f}",
                    f"{monthly_cost(t, figures, prices):,.0f}",
                    f"{cost_per_million_views(t, figures, prices):.3f}",
                    processes(t, figures),
                    f"{t.reviews * t.five_star_share:g} vs "
                    f"{leaderboard_write_ceiling(t.leaderboard_shards, figures):,.0f}"
                    f" ({t.leaderboard_shards} shard{'s' if t.leaderboard_shards > 1 else ''})",
                ]
                for t in SCENARIOS
            ],
        ),
        "",
    ]
    out += [
        f"Storage latency of a page at {figures.call_ms:g} ms a call: "
        f"{page_storage_ms(figures):g} ms warm (one round), "
        f"{page_storage_ms(figures, cold=True):g} ms cold (two).",
        "",
    ]
    hot = hot_product(figures)
    out += [
        _table(
            ["one product's limit", "per second"],
            [
                [
                    "creates, its stats items' partition (1,000 WCU / 4)",
                    f"{hot.creates_by_partition:,.0f}",
                ],
                [
                    "creates, each of its listing index partitions (1 WCU each)",
                    f"{hot.creates_by_index_partition:,.0f}",
                ],
                [
                    "5-star creates, one conditioned write at a time (read + transaction)",
                    f"{hot.five_star_creates_by_contention:.0f}",
                ],
                ["creates, one transaction at a time", f"{hot.creates_by_contention:.0f}"],
                ["uncached views of its first page", f"{hot.uncached_page_views:,.0f}"],
            ],
        ),
        "",
    ]
    weights = zipf_weights(10_000)
    pids = [f"product-{n}" for n in range(len(weights))]
    rows = []
    for shards in (1, 4, 8, 16):
        shares = shard_shares(weights, pids, shards)
        rows.append(
            [
                shards,
                f"{max(shares):.3f}",
                f"{saturation_rate(shares, figures):,.0f}",
                f"{throttled_fraction(2000, shares, figures):.1%}",
                f"{throttled_fraction(4000, shares, figures):.1%}",
            ]
        )
    out += [
        "Leaderboard shards, 10,000 products with Zipf(1) write rates:",
        "",
        _table(
            [
                "shards",
                "busiest shard's share",
                "saturates at 5-star writes/s",
                "throttled at 2,000/s",
                "throttled at 4,000/s",
            ],
            rows,
        ),
    ]
    return "\n".join(out)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--read-price", type=float, default=Prices().per_million_reads)
    parser.add_argument("--write-price", type=float, default=Prices().per_million_writes)
    args = parser.parse_args(argv)
    print(report(prices=Prices(args.read_price, args.write_price)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
