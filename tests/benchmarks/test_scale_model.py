"""The capacity model's arithmetic against cases computed by hand, and a small run of the
leaderboard simulation against the model's prediction."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchmarks.scale.model import (
    Figures,
    Traffic,
    cost_per_million_views,
    hot_product,
    leaderboard_read_units,
    leaderboard_write_ceiling,
    monthly_cost,
    page_storage_ms,
    processes,
    read_units,
    report,
    saturation_rate,
    shard_shares,
    throttled_fraction,
    write_units,
)
from benchmarks.scale.simulation import TokenBucket, simulate

DOC = Path(__file__).resolve().parents[2] / "docs" / "scale.md"

SHOP = Traffic(
    "shop",
    page_views=100,
    reviews=10,
    products=1000,
    languages=2,
    filtered_share=0.2,
    five_star_share=0.6,
    cache_hit=0.5,
    leaderboard_views=10,
    leaderboard_shards=4,
)


def test_read_units_by_hand() -> None:
    # A page: 0.8 x 2.0 + 0.2 x 2.5 = 2.1; a leaderboard: 4 x 0.5 + 1 = 3.
    assert leaderboard_read_units(4) == 3.0
    assert read_units(SHOP) == pytest.approx(0.5 * (100 * 2.1 + 10 * 3))  # 120


def test_write_units_and_cost_by_hand() -> None:
    assert write_units(SHOP) == pytest.approx(10 * (0.6 * 21 + 0.4 * 20))  # 206
    # 30 days: 120 x 2.592 x $0.125 + 206 x 2.592 x $0.625.
    assert monthly_cost(SHOP) == pytest.approx(38.88 + 333.72)
    # $ per second 120e-6 x 0.125 + 206e-6 x 0.625 = 1.4375e-4, over 100 views a second.
    assert cost_per_million_views(SHOP) == pytest.approx(1.4375)


def test_processes_by_hand() -> None:
    # 0.5 x (100 + 10) + 10 = 65 requests a second x 8.52 ms = 0.55 of a core: the floor of 2.
    assert processes(SHOP) == 2
    busy = Traffic("busy", page_views=1000, reviews=0, products=1, languages=1)
    assert processes(busy) == 15  # 8.52 cores at 60 %: 14.2
    assert processes(busy, Figures(cpu_ms_per_request=3.0), utilisation=1.0) == 3


def test_page_latency_by_hand() -> None:
    assert page_storage_ms() == 5.0  # one round of 5 ms
    assert page_storage_ms(cold=True) == 10.0
    assert page_storage_ms(Figures(call_ms=8.0, rounds_per_page=1.2)) == pytest.approx(9.6)


def test_partition_limits_by_hand() -> None:
    assert leaderboard_write_ceiling(4) == 4000
    shares = [0.5, 0.25, 0.25]
    assert saturation_rate(shares) == 2000
    assert throttled_fraction(2000, shares) == 0
    assert throttled_fraction(4000, shares) == pytest.approx((2000 - 1000) / 4000)
    assert throttled_fraction(4000, [1.0]) == pytest.approx(0.75)
    hot = hot_product()
    assert hot.creates_by_partition == 250  # 1,000 WCU / (2 items x 2 in a transaction)
    assert hot.creates_by_index_partition == 1000
    assert hot.five_star_creates_by_contention == pytest.approx(50)  # 1 s / (5 + 15 ms)
    assert hot.creates_by_contention == pytest.approx(1000 / 15)
    assert hot.uncached_page_views == 2000  # 3,000 RCU / 1.5 for the page's query


def test_shard_shares_are_the_products_weights() -> None:
    pids = [f"p{n}" for n in range(20)]
    assert shard_shares([1.0] * 20, pids, 1) == [pytest.approx(1.0)]
    shares = shard_shares([float(n + 1) for n in range(20)], pids, 4)
    assert len(shares) == 4
    assert sum(shares) == pytest.approx(1.0)


def test_the_report_prints_every_table() -> None:
    text = report()
    assert "$0.125 per million read units" in text
    assert "| marketplace |" in text
    assert "saturates at 5-star writes/s" in text


def test_docs_scale_quotes_the_model_as_it_computes() -> None:
    quoted = DOC.read_text()
    rows = [line for line in report().splitlines() if line.startswith("|")]
    assert rows
    assert [row for row in rows if row not in quoted] == []


def test_a_token_bucket_refills_in_simulated_time() -> None:
    bucket = TokenBucket(rate=1000, capacity=1000, tokens=0)
    bucket.refill(0.25)
    assert bucket.tokens == pytest.approx(250)
    bucket.refill(5.0)
    assert bucket.tokens == 1000  # never more than a second of them


async def test_one_shard_saturates_where_the_model_says() -> None:
    # Partitions of 100 units a second (the shares are those of 1,000 at ten times the
    # rate): 200 5-star creates a second on one partition, the model says 50 % refused; at
    # 90 a second nothing is; four shards take 200.
    over = await simulate(1, 200, seconds=3.0, warmup=1.0, products=50, wcu=100)
    assert over.predicted == pytest.approx(0.5)
    assert 0.4 < over.refused_share < 0.6
    assert over.refused_by_leaderboard == over.refused
    under = await simulate(1, 90, seconds=3.0, warmup=1.0, products=50, wcu=100)
    assert under.refused == 0
    spread = await simulate(4, 200, seconds=3.0, warmup=1.0, products=200, wcu=100)
    assert spread.predicted == 0
    assert spread.refused_share < 0.02
