"""Facet reads: items read per item returned, storage calls and rounds, first pages against
page 500, ours against the blog's filtered fan-out.

    .venv/bin/python -m benchmarks.reads.facet_reads [--quick] [--seed 7]
    .venv/bin/python -m benchmarks.reads.facet_reads --page-from benchmarks/results/<file>

Starts DynamoDB Local in memory and loads two products (36,000 and 3,000 comments) with
facet values at realistic rates (``benchmarks.reads.facet_data``). For every filter (one
facet value with a language and ratings; two values, the second kept by about 10 %, 30 %
or 60 % of the first's comments) it walks twenty pages of 20 from page 1 and twenty from page
500 (or as deep as the listing goes), with two readers, which must both return the
brute-force answer:

- ours: ``storage.reads.facet_reader.read_facet_listing`` (the counters read with the page,
  the plan over the primary value's entries), one process's memory over the whole run: a
  listing's first page is its cold page, every later one is planned from the snapshot of
  the counters (warm); each walk is then read again, when the process knows each page's
  head;
- the blog: ``baselines.blog_fan_out``, one query per rating partition of the product with
  ``contains(facets, :v)`` as a FilterExpression and Limit = page size, each partition
  re-queried until it holds a page of matches or ends.

Last, the one-value walks are read again by processes holding each listing's counters,
at several head-rooms z of the proportioned limits (``SWEEP``): items read against rounds.

Figures per page, medians over a walk's pages: items read (ScannedCount of the queries) per
item returned, storage calls (the counters' TransactGetItems included), sequential storage
rounds, and the calls the API's cost estimator (``schema.cost``) allows the same request.
Nothing here is a timing. Writes ``benchmarks/results/facet-reads-<stamp>.json`` and
``docs/benchmarks/facets.md`` (``benchmarks.reads.facet_report``, which also gives the
results page its targets).
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import json
import math
import platform
import statistics
import sys
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from graphql import GraphQLSchema, parse

from benchmarks.reads import facet_data
from benchmarks.reads.baselines import blog_fan_out
from benchmarks.reads.facet_data import Filter
from benchmarks.reads.facet_report import target_rows, write_page
from benchmarks.report import save_result
from schema import build_schema
from schema.cost import estimate
from server.dev.local_engine import LocalEngine
from storage.base.types import DynamoClient
from storage.engine.client import ClientSettings, open_client
from storage.engine.metering import Meter, MeteredClient
from storage.engine.table import TableRef
from storage.model import rules
from storage.model.comments import Comment, Direction, PageRequest
from storage.model.facets import FacetValue
from storage.ops.create import create_table
from storage.reads.facet_reader import facet_listing_counts, read_facet_listing
from storage.reads.planner import DEFAULT_TUNING, Tuning
from storage.reads.snapshots import PlanMemory

PAGE = 20
DEEP_PAGE = 500
TABLE = "facet_reads"
PRODUCTS = (("facets-36k", 36_000), ("facets-3k", 3_000))
QUICK_PRODUCTS = (("facets-quick", 1_200),)

YES = FacetValue.attribute("would-recommend", "yes")
SMALL = FacetValue.attribute("fit", "small")
REGULAR = FacetValue.attribute("fit", "regular")
SOUND = FacetValue.topic("sound")
BATTERY = FacetValue.topic("battery-life")

ONE_VALUE = (
    Filter("would recommend: yes, en, 4-5 stars", (YES,), "en", (4, 5)),
    Filter("fit: small, de, 1-3 stars", (SMALL,), "de", (1, 2, 3)),
    Filter("topic sound, en, 1-2 stars", (SOUND,), "en", (1, 2)),
    Filter("topic battery life, fr, 4-5 stars", (BATTERY,), "fr", (4, 5)),
)
# The second value's share of the first's comments, as the data set draws them.
TWO_VALUES = (
    (0.10, Filter("battery life + fit: small, en", (BATTERY, SMALL), "en")),
    (0.30, Filter("battery life + fit: regular, en", (BATTERY, REGULAR), "en")),
    (0.58, Filter("battery life + would recommend: yes, en", (BATTERY, YES), "en")),
)

# Head-rooms of the sweep (``Tuning.z``; the default is 0.25).
SWEEP = (0.0, 0.25, 0.5, 1.0, 2.0)


@dataclass(frozen=True, slots=True)
class PageCost:
    sort_keys: list[str]
    has_more: bool
    items_read: int
    calls: int
    rounds: int
    planned: int = 0  # queries of the first round (ours)
    warm: bool = False  # planned from the process's snapshot of the counters (ours)
    strategy: str = ""

    @property
    def amplification(self) -> float:
        return self.items_read / max(1, len(self.sort_keys))


Reader = Callable[[TableRef, Filter, str, str | None], Awaitable[PageCost]]


def ours(memory: PlanMemory, tuning: Tuning = DEFAULT_TUNING) -> Reader:
    """Our reader, in a process whose memory is ``memory``."""

    async def read(table: TableRef, f: Filter, product: str, position: str | None) -> PageCost:
        meter = Meter()
        metered = TableRef(MeteredClient(table.client, meter), table.name).keep(memory)
        listing = f.listing(product)
        warm = memory.facet_counts(listing) is not None
        request = PageRequest(PAGE, Direction.FORWARD, position)
        _, page = await read_facet_listing(metered, listing, request, tuning=tuning)
        return PageCost(
            [c.sort_key for c in page.comments],
            page.has_more,
            page.items_read,
            meter.total_calls,
            page.storage_rounds,
            len(page.plan.queries),
            warm,
            page.plan.strategy.value,
        )

    return read


async def blog(table: TableRef, f: Filter, product: str, position: str | None) -> PageCost:
    """The blog's fan-out over the product's rating partitions, filtered on the values."""
    ratings = sorted(f.ratings or rules.RATINGS)
    tokens = [v.token for v in f.values]
    page = await blog_fan_out(table, product, f.language, ratings, PAGE, position, facets=tokens)
    return PageCost(page.sort_keys, page.has_more, page.items_read, page.calls, page.rounds)


async def walk(
    table: TableRef,
    readers: dict[str, Reader],
    f: Filter,
    product: str,
    expected: list[str],
    first: int,
    pages: int,
) -> dict[str, list[PageCost]]:
    """Every reader over the same ``pages`` pages from page ``first``; each page must be
    the expected one."""
    start = (first - 1) * PAGE
    position = expected[start - 1] if start else None
    walked: dict[str, list[PageCost]] = {name: [] for name in readers}
    for n in range(pages):
        want = expected[start + n * PAGE : start + (n + 1) * PAGE]
        if not want:
            break
        for name, reader in readers.items():
            cost = await reader(table, f, product, position)
            more = start + (n + 1) * PAGE < len(expected)
            if cost.sort_keys != want or cost.has_more != more:
                raise AssertionError(f"{name} read another page {first + n} of {f.name}")
            walked[name].append(cost)
        position = want[-1]
    return walked


def summary(costs: list[PageCost]) -> dict[str, Any]:
    strategies = sorted({c.strategy for c in costs if c.strategy})
    warm = [c for c in costs if c.warm]
    return {
        "pages": len(costs),
        "amplification": round(statistics.median(c.amplification for c in costs), 3),
        "items_read": statistics.median(c.items_read for c in costs),
        "calls": statistics.median(c.calls for c in costs),
        "max_calls": max(c.calls for c in costs),
        "rounds": statistics.median(c.rounds for c in costs),
        "max_rounds": max(c.rounds for c in costs),
        "planned": statistics.median(c.planned for c in costs),
        "warm_pages": len(warm),
        "warm_one_round": sum(c.rounds == 1 for c in warm),
        "full_pages": sum(len(c.sort_keys) == PAGE or not c.has_more for c in costs),
        **({"strategies": strategies} if strategies else {}),
        "per_page": {
            "amplification": [round(c.amplification, 3) for c in costs],
            "calls": [c.calls for c in costs],
            "rounds": [c.rounds for c in costs],
        },
    }


def estimated_calls(f: Filter) -> int:
    """The storage calls the API's cost estimator allows ``Product.comments`` with ``f``."""
    query = (
        "query($language: String, $ratings: [Int!], $facets: CommentFacets, $first: Int) {"
        ' product(productId: "p") { comments(language: $language, ratings: $ratings,'
        " facets: $facets, first: $first) { nodes { id } } } }"
    )
    bare = 'query { product(productId: "p") { productId } }'
    schema = _schema()
    variables = f.api_arguments(PAGE)
    found = estimate(schema, parse(query), None, variables).points
    return found - estimate(schema, parse(bare), None, None).points


@functools.cache
def _schema() -> GraphQLSchema:
    return build_schema()._schema


async def measure(
    table: TableRef, comments: list[Comment], products: list[str], pages: int
) -> list[dict[str, Any]]:
    memory = PlanMemory()
    first_pass = {"ours": ours(memory), "blog": blog}
    again = {"ours": ours(memory)}
    rows = []
    filters = [(None, f) for f in ONE_VALUE] + list(TWO_VALUES)
    for product in products:
        mine = [c for c in comments if c.product_id == product]
        for share, f in filters:
            expected = _expected(mine, f, product)
            if not expected:
                continue
            counts = await facet_listing_counts(table, f.listing(product))
            if share is None and counts.total(f.listing(product)) != len(expected):
                raise AssertionError(f"the counters of {f.name} are not exact")
            primary = [c for c in mine if Filter("", f.values[:1], f.language).matches(c)]
            depths = _depths(expected, pages)
            walks = [
                (d, await walk(table, first_pass, f, product, expected, d, pages)) for d in depths
            ]
            for first, walked in walks:
                read_again = await walk(table, again, f, product, expected, first, pages)
                rows.append(
                    {
                        "product": product,
                        "filter": f.name,
                        "values": len(f.values),
                        "second_share": share,
                        "selectivity": round(len(expected) / len(primary), 3)
                        if share is not None
                        else None,
                        "matching": len(expected),
                        "first_page": first,
                        "estimated_calls": estimated_calls(f),
                        "ours": summary(walked["ours"]),
                        "ours_again": summary(read_again["ours"]),
                        "blog": summary(walked["blog"]),
                    }
                )
            say(f"{product}, {f.name}: {len(expected)} comments, pages {depths}")
    return rows


def _depths(expected: list[str], pages: int) -> list[int]:
    """Page 1, and page ``DEEP_PAGE`` (or as deep as the listing goes) when that is further
    than a walk from page 1 reaches."""
    deep = min(DEEP_PAGE, math.ceil(len(expected) / PAGE) - pages + 1)
    return [1] + ([deep] if deep > pages else [])


def _expected(comments: list[Comment], f: Filter, product: str) -> list[str]:
    return sorted(
        (c.sort_key for c in comments if c.product_id == product and f.matches(c)), reverse=True
    )


async def sweep(
    table: TableRef, comments: list[Comment], products: list[str], pages: int
) -> list[dict[str, Any]]:
    """The one-value walks met for the first time by a process holding each listing's
    counters (every page warm), at several head-rooms z: items read against rounds."""
    rows = []
    for z in SWEEP:
        memory = PlanMemory()
        reader = {"ours": ours(memory, Tuning(z=z))}
        costs: list[PageCost] = []
        for product in products:
            for f in ONE_VALUE:
                expected = _expected(comments, f, product)
                if not expected:
                    continue
                await facet_listing_counts(
                    TableRef(table.client, table.name).keep(memory), f.listing(product)
                )
                for first in _depths(expected, pages):
                    costs += (await walk(table, reader, f, product, expected, first, pages))["ours"]
        rows.append(
            {
                "z": z,
                "pages": len(costs),
                "amplification": round(statistics.median(c.amplification for c in costs), 3),
                "mean_amplification": round(statistics.fmean(c.amplification for c in costs), 3),
                "one_round": round(sum(c.rounds == 1 for c in costs) / len(costs), 3),
                "calls": round(statistics.fmean(c.calls for c in costs), 2),
            }
        )
    return rows


def say(message: str) -> None:
    print(f"==> {message}", file=sys.stderr, flush=True)


async def run(
    client: DynamoClient,
    products: tuple[tuple[str, int], ...],
    pages: int,
    seed: int,
    table_name: str = TABLE,
) -> dict[str, Any]:
    """Load the products into a new table ``table_name`` and measure every filter."""
    await create_table(client, table_name, stream=False)
    table = TableRef(client, table_name)
    comments = facet_data.comments(products, seed)
    say(f"seeding {len(comments)} comments")
    started = time.perf_counter()
    small = quiet(products)
    entries = await facet_data.load(table, comments, quiet=small, verify_all=small)
    seeded = time.perf_counter() - started
    rows = await measure(table, comments, [p for p, _ in products], pages)
    say("the head-room sweep")
    swept = await sweep(table, comments, [p for p, _ in products], pages)
    return {
        "comments": len(comments),
        "facet_items": entries,
        "seeded_seconds": round(seeded, 1),
        "rows": rows,
        "headroom_sweep": swept,
    }


def quiet(products: tuple[tuple[str, int], ...]) -> bool:
    """No progress bars for a small load."""
    return sum(n for _, n in products) < 5_000


async def _main(url: str, products: tuple[tuple[str, int], ...], pages: int, seed: int) -> Any:
    async with open_client(ClientSettings(endpoint_url=url)) as client:
        return await run(client, products, pages, seed)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="1,200 comments, three pages a walk")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--page-from", type=Path, help="only rewrite the page from a results file")
    args = parser.parse_args()
    if args.page_from is not None:
        saved = {**json.loads(args.page_from.read_text()), "file": args.page_from.name}
        say(f"wrote {write_page(saved)}")
        return
    products = QUICK_PRODUCTS if args.quick else PRODUCTS
    pages = 3 if args.quick else 20
    started = time.perf_counter()
    with LocalEngine() as engine:
        measured = asyncio.run(_main(engine.endpoint_url, products, pages, args.seed))
    when = datetime.now(UTC)
    result = {
        "when": when.isoformat(timespec="seconds"),
        "machine": f"{platform.machine()}, {platform.python_implementation()} "
        f"{platform.python_version()}",
        "engine": "DynamoDB Local",
        "quick": args.quick,
        "command": " ".join(["python -m benchmarks.reads.facet_reads", *sys.argv[1:]]),
        "seed": args.seed,
        "page_size": PAGE,
        "deep_page": DEEP_PAGE,
        "pages_per_walk": pages,
        "products": dict(products),
        **measured,
        "duration_seconds": round(time.perf_counter() - started, 1),
    }
    path = save_result("facet-reads", result, when, tag="quick" if args.quick else "")
    result["file"] = path.name
    for t, m, ok in target_rows(result):
        print(f"{'met' if ok else 'NOT MET'}: {t}: {m}")
    if not args.quick:
        say(f"wrote {path} and {write_page(result)}")
    else:
        say(f"wrote {path}")


if __name__ == "__main__":
    main()
