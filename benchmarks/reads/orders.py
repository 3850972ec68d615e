"""Sort orders: items read per item returned, sequential rounds and latency, first pages
against page 500, ours against the obvious alternative.

    .venv/bin/python -m benchmarks.reads.orders [--quick] [--seed 7]

Starts DynamoDB Local in memory and bulk-loads one product of 60,000 comments (J-shaped
ratings, skewed languages, 30 % verified, helpful counts with many ties: most zero, a few
in the dozens). For every order x filter it walks ten pages of 20 from page 1 and ten from
page 500 with two readers, which must both return the brute-force answer:

- ours: ``storage.reads.reader.list_comments`` with the order (its stats read counted);
- filtered: the obvious alternative, one query on the order's broad index (the product's
  partition, newest or most-helpful first; for the rating orders, the product's rating
  partitions one after another, as there is no index sorted by rating) with a
  FilterExpression for the language, ratings and verified filters, re-issued with
  ``Limit = 21`` until the page is full.

Figures per page, medians over the pages: items read (ScannedCount) per item returned,
sequential storage rounds, and wall time (a noisy figure on a shared machine; quoted as
the ratio of page 500 to page 1 within the same run). Writes results/orders-<timestamp>.json
and docs/benchmarks/orders.md.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import random
import statistics
import sys
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Any

from benchmarks import data
from benchmarks.report import HERE, PAGES
from server.dev.demo import synthetic_comments
from server.dev.local_engine import LocalEngine
from storage.base.expressions import Attr, Condition, all_of, query_request
from storage.engine.client import ClientSettings, open_client
from storage.engine.metering import Meter, MeteredClient
from storage.engine.table import TableRef
from storage.model import keys, rules
from storage.model.comments import Comment, Direction, ListingFilter, Order, PageRequest
from storage.model.indexes import Index
from storage.model.items import VERIFIED_ATTR, item_to_comment
from storage.reads.planner import needs_stats
from storage.reads.reader import list_comments

PAGE = 20
PRODUCT = "orders-60k"
TABLE = "orders"
DEEP_PAGE = 500


@dataclass(frozen=True, slots=True)
class Filter:
    name: str
    language: str | None = None
    ratings: tuple[int, ...] | None = None
    verified_only: bool = False

    def listing(self) -> ListingFilter:
        ratings = None if self.ratings is None else frozenset(self.ratings)
        return ListingFilter(PRODUCT, self.language, ratings, self.verified_only)


FILTERS = [
    Filter("none"),
    Filter("language de", "de"),
    Filter("ratings 1,2", ratings=(1, 2)),
    Filter("verified", verified_only=True),
    Filter("de + ratings 4,5", "de", (4, 5)),
]


@dataclass(frozen=True, slots=True)
class PageCost:
    ids: list[str]
    positions: list[str]
    has_more: bool
    items_read: int
    rounds: int
    seconds: float
    strategy: str = ""

    @property
    def amplification(self) -> float:
        return self.items_read / max(1, len(self.ids))


Reader = Callable[[TableRef, Filter, Order, str | None], Awaitable[PageCost]]


def brute_force(comments: list[Comment], f: Filter, order: Order) -> list[Comment]:
    """The page order by sorting everything: newest first, then stably by the order's key."""
    chosen = [
        c
        for c in comments
        if c.published
        and (f.language is None or c.language == f.language)
        and (f.ratings is None or c.rating in f.ratings)
        and (c.verified or not f.verified_only)
    ]
    newest = sorted(chosen, key=lambda c: c.sort_key, reverse=True)
    keyed: dict[Order, Callable[[Comment], int]] = {
        Order.HIGHEST_RATING: lambda c: -c.rating,
        Order.LOWEST_RATING: lambda c: c.rating,
        Order.MOST_HELPFUL: lambda c: -c.helpful,
    }
    if order is Order.OLDEST:
        return newest[::-1]
    return sorted(newest, key=keyed[order]) if order in keyed else newest


def position_of(c: Comment, order: Order) -> str:
    """A comment's position in ``order``: what a cursor after it names."""
    if order.by_rating:
        return keys.rating_position(c.rating, c.sort_key)
    if order is Order.MOST_HELPFUL:
        return keys.helpful_sort_key(c.helpful, c.sort_key)
    return c.sort_key


async def ours(table: TableRef, f: Filter, order: Order, position: str | None) -> PageCost:
    meter = Meter()
    metered = TableRef(MeteredClient(table.client, meter), table.name)
    listing = f.listing()
    started = time.perf_counter()
    page = await list_comments(
        metered, listing, PageRequest(PAGE, Direction.FORWARD, position), order=order
    )
    seconds = time.perf_counter() - started
    # The stats read is a round of its own when the plan needs it first.
    rounds = page.rounds + (1 if needs_stats(listing, order) else 0)
    return PageCost(
        [c.comment_id for c in page.comments],
        list(page.positions),
        page.has_more,
        page.items_read,
        rounds,
        seconds,
        page.plan.strategy.value,
    )


async def filtered(table: TableRef, f: Filter, order: Order, position: str | None) -> PageCost:
    """The obvious alternative (see the module doc)."""
    started = time.perf_counter()
    want = PAGE + 1
    found: list[tuple[Comment, str]] = []
    read = rounds = 0
    if order.by_rating:
        ratings = sorted(f.ratings or rules.RATINGS, reverse=order is Order.HIGHEST_RATING)
        at, start = keys.split_rating_position(position) if position else (None, None)
        if at is not None:
            ahead = ratings.index(at)
            ratings = ratings[ahead:]
        condition = _condition(f, with_ratings=False)
        for rating in ratings:
            partition = (Index.BY_RATING, keys.rating_pk(PRODUCT, rating))
            got, n, calls = await _fill(
                table, partition, start if rating == at else None, want - len(found), condition
            )
            found += [(c, keys.rating_position(c.rating, k)) for c, k in got]
            read, rounds = read + n, rounds + calls
            if len(found) >= want:
                break
    else:
        index = Index.HELPFUL_ALL if order is Order.MOST_HELPFUL else Index.ALL
        partition = (index, keys.all_pk(PRODUCT))
        ascending = order is Order.OLDEST
        got, read, rounds = await _fill(
            table, partition, position, want, _condition(f, with_ratings=True), ascending
        )
        found = got
    seconds = time.perf_counter() - started
    page = found[:PAGE]
    return PageCost(
        [c.comment_id for c, _ in page],
        [k for _, k in page],
        len(found) > PAGE,
        read,
        rounds,
        seconds,
    )


def _condition(f: Filter, *, with_ratings: bool) -> Condition | None:
    terms = []
    if f.language is not None:
        terms.append(Attr("language").eq(f.language))
    if with_ratings and f.ratings:
        terms.append(Attr("rating").is_in(list(f.ratings)))
    if f.verified_only:
        terms.append(Attr(VERIFIED_ATTR).eq(True))
    return all_of(terms)


async def _fill(
    table: TableRef,
    partition: tuple[Index, str],
    position: str | None,
    want: int,
    condition: Condition | None,
    ascending: bool = False,
) -> tuple[list[tuple[Comment, str]], int, int]:
    """Query one partition with the filter, 21 items a call, until ``want`` matches or its
    end: (matches with their keys, items read, calls)."""
    index, pk = partition
    matches: list[tuple[Comment, str]] = []
    read = calls = 0
    cursor = position
    while len(matches) < want:
        key = Attr(index.partition_attr).eq(pk)
        if cursor is not None:
            sort = Attr(index.sort_attr)
            key &= sort.gt(cursor) if ascending else sort.lt(cursor)
        params = query_request(
            table.name, index=index.value, key=key, filter=condition, forward=ascending, limit=21
        )
        response = await table.client.query(**params)
        calls += 1
        read += int(response.get("ScannedCount", 0))
        matches += [(item_to_comment(i), i[index.sort_attr]["S"]) for i in response["Items"]]
        last = response.get("LastEvaluatedKey")
        if last is None:
            break
        cursor = last[index.sort_attr]["S"]
    return matches, read, calls


READERS: dict[str, Reader] = {"ours": ours, "filtered": filtered}


async def walk(
    table: TableRef, f: Filter, order: Order, expected: list[Comment], first: int, pages: int
) -> dict[str, list[PageCost]]:
    """Both readers over the same pages from page ``first``; each must be the expected one."""
    start = (first - 1) * PAGE
    position = position_of(expected[start - 1], order) if start else None
    walked: dict[str, list[PageCost]] = {name: [] for name in READERS}
    for n in range(pages):
        want = [c.comment_id for c in expected[start + n * PAGE : start + (n + 1) * PAGE]]
        if not want:
            break
        for name, reader in READERS.items():
            cost = await reader(table, f, order, position)
            if cost.ids != want:
                raise AssertionError(f"{name} read another page {first + n} ({order}, {f.name})")
            walked[name].append(cost)
        position = walked["ours"][-1].positions[-1]
    return walked


def _summary(costs: list[PageCost]) -> dict[str, Any]:
    strategies = sorted({c.strategy for c in costs if c.strategy})
    return {
        "amplification": round(statistics.median(c.amplification for c in costs), 3),
        "items_read": statistics.median(c.items_read for c in costs),
        "rounds": statistics.median(c.rounds for c in costs),
        "max_rounds": max(c.rounds for c in costs),
        "ms": round(1000 * statistics.median(c.seconds for c in costs), 2),
        **({"strategies": strategies} if strategies else {}),
    }


async def measure(table: TableRef, comments: list[Comment], pages: int) -> list[dict[str, Any]]:
    rows = []
    for order in Order:
        for f in FILTERS:
            expected = brute_force(comments, f, order)
            total_pages = len(expected) // PAGE
            deep = min(DEEP_PAGE, max(2, total_pages - pages))
            for depth, first in (("page 1", 1), (f"page {deep}", deep)):
                walked = await walk(table, f, order, expected, first, pages)
                rows.append(
                    {
                        "order": order.value,
                        "filter": f.name,
                        "matching": len(expected),
                        "depth": depth,
                        "first_page": first,
                        **{name: _summary(costs) for name, costs in walked.items()},
                    }
                )
            say(f"{order.value}, {f.name}: done")
    return rows


def product(seed: int, size: int) -> list[Comment]:
    rng = random.Random(seed)
    made = synthetic_comments([(PRODUCT, size, False)], rng)
    # Helpful counts: most comments none, a long tail, many ties at every count.
    return [
        replace(
            c,
            verified=rng.random() < 0.3,
            helpful=min(60, int(rng.paretovariate(1.2))) - 1 if rng.random() < 0.4 else 0,
        )
        for c in made
    ]


def say(message: str) -> None:
    print(f"==> {message}", file=sys.stderr, flush=True)


async def run(args: argparse.Namespace, engine: LocalEngine) -> dict[str, Any]:
    async with open_client(ClientSettings(endpoint_url=engine.endpoint_url)) as client:
        table = TableRef(client, TABLE)
        comments = product(args.seed, args.size)
        say(f"seeding {len(comments)} comments")
        started = time.perf_counter()
        await data.load(table, comments, "seeding the product")
        seeded = time.perf_counter() - started
        rows = await measure(table, comments, args.pages)
    return {"comments": len(comments), "seeded_seconds": round(seeded, 1), "rows": rows}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="6,000 comments, shallow pages")
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    args.size = 6_000 if args.quick else 60_000
    args.pages = 3 if args.quick else 10
    started = time.perf_counter()
    with LocalEngine() as engine:
        measured = asyncio.run(run(args, engine))
    when = datetime.now(UTC)
    results = {
        "when": when.isoformat(timespec="seconds"),
        "machine": f"{platform.machine()}, {platform.python_implementation()} "
        f"{platform.python_version()}, {len(os.sched_getaffinity(0))} cores",
        "engine": "DynamoDB Local",
        "quick": args.quick,
        "command": " ".join(["python -m benchmarks.reads.orders", *sys.argv[1:]]),
        "page_size": PAGE,
        "pages_per_walk": args.pages,
        **measured,
        "duration_seconds": round(time.perf_counter() - started, 1),
    }
    out_dir = HERE / "results"
    out_dir.mkdir(exist_ok=True)
    stamp = when.strftime("%Y%m%dT%H%M%SZ")
    name = f"orders-{stamp}{'-quick' if args.quick else ''}.json"
    (out_dir / name).write_text(json.dumps(results, indent=1) + "\n")
    path = write_report(results, name)
    say(f"wrote {out_dir / name} and {path} in {results['duration_seconds']} s")


def write_report(results: dict[str, Any], json_name: str) -> str:
    """docs/benchmarks/orders.md: one row per order x filter x depth, and the goals' verdicts."""
    rows = results["rows"]
    lines = [
        "# Sort orders: reads, rounds and depth",
        "",
        f"Generated by `{results['command']}` on {results['when']} ({results['machine']}, "
        f"{results['engine']}); raw figures in `benchmarks/results/{json_name}`. One product of "
        f"{results['comments']:,} comments; pages of {results['page_size']}, "
        f"{results['pages_per_walk']} pages per walk; medians over the pages.",
        "",
        "*filtered*: one query on the order's broad index with a FilterExpression, re-issued "
        "until the page is full (the rating orders: the rating partitions in turn, filtered).",
        "",
        "| order | filter | pages | ours: read/returned | rounds (max) | ms | strategy "
        "| filtered: read/returned | rounds | ms |",
        "|---|---|---|---:|---:|---:|---|---:|---:|---:|",
    ]
    for r in rows:
        o, f = r["ours"], r["filtered"]
        lines.append(
            f"| {r['order']} | {r['filter']} | {r['depth']} | {o['amplification']:.2f} "
            f"| {o['rounds']:g} ({o['max_rounds']}) | {o['ms']:.1f} "
            f"| {', '.join(o.get('strategies', []))} | {f['amplification']:.2f} "
            f"| {f['rounds']:g} | {f['ms']:.1f} |"
        )
    lines += ["", "## Goals", ""]
    for label, orders, goal in (
        ("rating orders", ("HIGHEST_RATING", "LOWEST_RATING"), 1.25),
        ("MOST_HELPFUL with filters", ("MOST_HELPFUL",), 1.5),
    ):
        picked = [
            r["ours"]["amplification"]
            for r in rows
            if r["order"] in orders and (label.startswith("rating") or r["filter"] != "none")
        ]
        median = statistics.median(picked)
        verdict = "met" if median <= goal else "not met"
        lines.append(
            f"- {label}: median read amplification {median:.2f} (goal <= {goal}): {verdict}"
        )
    for order in Order:
        first = [r for r in rows if r["order"] == order.value and r["first_page"] == 1]
        deep = [r for r in rows if r["order"] == order.value and r["first_page"] != 1]
        read_ratio = statistics.median(
            d["ours"]["items_read"] / max(1, f["ours"]["items_read"])
            for f, d in zip(first, deep, strict=True)
        )
        ms_ratio = statistics.median(
            d["ours"]["ms"] / max(0.01, f["ours"]["ms"]) for f, d in zip(first, deep, strict=True)
        )
        lines.append(
            f"- {order.value}: deep pages read {read_ratio:.2f}x the items of first pages "
            f"and take {ms_ratio:.2f}x their time (medians over the filters)"
        )
    path = PAGES / "orders.md"
    path.write_text("\n".join(lines) + "\n")
    return str(path)


if __name__ == "__main__":
    main()
