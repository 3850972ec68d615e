"""Read amplification of verified-only listings: ours against the blog's design with a filter.

Two products of the same size, one with 10 % of its comments by verified purchasers and one
with 50 % (verified independently of rating and language), bulk-loaded with exact counters.
For each product and filter (verified only; with a language; with a rating set; with both)
three readers walk the same pages of 20, from the first page and from a deep one, and must
return the same comments, which must be the brute-force answer:

- ours: ``storage.reads.reader.list_comments`` (stats read, plan over the verified indexes);
- the blog with a filter: ``baselines.blog_fan_out(verified_only=True)``;
- a naive filter: ``baselines.naive_filter(verified_only=True)``.

Every figure is per page and read from storage's own answers: items read (ScannedCount of
the index queries) per item returned, and read capacity of all the page's calls (ours
includes its stats read) as the engine reports it.
"""

from __future__ import annotations

import math
import random
import statistics
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, replace
from typing import Any

from benchmarks import data
from benchmarks.reads.baselines import BaselinePage, blog_fan_out, naive_filter
from server.dev.demo import synthetic_comments
from storage.base.types import DynamoClient
from storage.engine.metering import Meter, MeteredClient
from storage.engine.table import TableRef
from storage.model.comments import Comment, Direction, ListingFilter, PageRequest
from storage.reads.reader import list_comments

PAGE = 20
SHARES = {"verified-10": 0.10, "verified-50": 0.50}


@dataclass(frozen=True, slots=True)
class Filter:
    name: str
    language: str | None = None
    ratings: tuple[int, ...] | None = None

    def matches(self, c: Comment) -> bool:
        return (
            c.verified
            and (self.language is None or c.language == self.language)
            and (self.ratings is None or c.rating in self.ratings)
        )


FILTERS = [
    Filter("verified only"),
    Filter("verified, language de", "de"),
    Filter("verified, ratings 1,2", ratings=(1, 2)),
    Filter("verified, de + ratings 4,5", "de", (4, 5)),
]


@dataclass(frozen=True, slots=True)
class PageCost:
    sort_keys: list[str]
    has_more: bool
    items_read: int
    read_units: float
    calls: int
    rounds: int
    strategy: str = ""

    @property
    def amplification(self) -> float:
        return self.items_read / len(self.sort_keys)


Reader = Callable[[TableRef, Filter, str, str | None], Awaitable[PageCost]]


def product_comments(seed: int, size: int) -> list[Comment]:
    """The products of ``SHARES``, ``size`` comments each, verified at their share."""
    rng = random.Random(seed)
    out: list[Comment] = []
    for product, share in SHARES.items():
        made = synthetic_comments([(product, size, False)], rng)
        out += [replace(c, verified=rng.random() < share) for c in made]
    return out


async def ours(table: TableRef, f: Filter, product: str, position: str | None) -> PageCost:
    listing = ListingFilter(product, f.language, frozenset(f.ratings or ()), verified_only=True)
    metered, meter = _metered(table)
    page = await list_comments(metered, listing, PageRequest(PAGE, Direction.FORWARD, position))
    return PageCost(
        [c.sort_key for c in page.comments],
        page.has_more,
        page.items_read,
        meter.read_capacity,
        meter.total_calls,
        page.rounds + 1,  # the stats read comes first
        page.plan.strategy.value,
    )


def _baseline(run: Callable[..., Awaitable[BaselinePage]]) -> Reader:
    async def read(table: TableRef, f: Filter, product: str, position: str | None) -> PageCost:
        metered, meter = _metered(table)
        ratings = sorted(f.ratings) if f.ratings else None
        page = await run(metered, product, f.language, ratings, PAGE, position, verified_only=True)
        return PageCost(
            page.sort_keys,
            page.has_more,
            page.items_read,
            meter.read_capacity,
            meter.total_calls,
            page.rounds,
        )

    return read


READERS: dict[str, Reader] = {
    "ours": ours,
    "blog": _baseline(blog_fan_out),
    "naive": _baseline(naive_filter),
}


def _metered(table: TableRef) -> tuple[TableRef, Meter]:
    meter = Meter()
    client: DynamoClient = MeteredClient(table.client, meter)
    return TableRef(client, table.name), meter


async def walk(
    table: TableRef, f: Filter, product: str, expected: list[str], first_page: int, pages: int
) -> dict[str, list[PageCost]]:
    """Every reader over the same ``pages`` pages from ``first_page`` (1-based); each page
    must be the expected one."""
    start = (first_page - 1) * PAGE
    position = expected[start - 1] if start else None
    walked: dict[str, list[PageCost]] = {name: [] for name in READERS}
    for n in range(pages):
        want = expected[start + n * PAGE : start + (n + 1) * PAGE]
        if not want:
            break
        for name, reader in READERS.items():
            cost = await reader(table, f, product, position)
            if cost.sort_keys != want:
                raise AssertionError(f"{name} read another page {first_page + n} of {f.name}")
            walked[name].append(cost)
        position = want[-1]
    return walked


def _summary(costs: list[PageCost]) -> dict[str, Any]:
    strategies = sorted({c.strategy for c in costs if c.strategy})
    return {
        "amplification": statistics.median(c.amplification for c in costs),
        "items_read": statistics.median(c.items_read for c in costs),
        "read_units": statistics.median(c.read_units for c in costs),
        "calls": statistics.median(c.calls for c in costs),
        "rounds": statistics.median(c.rounds for c in costs),
        **({"strategies": strategies} if strategies else {}),
    }


async def measure(table: TableRef, comments: list[Comment], pages: int) -> list[dict[str, Any]]:
    """Medians per product, filter and depth over ``pages`` pages."""
    rows = []
    for product, share in SHARES.items():
        mine = [c for c in comments if c.product_id == product]
        for f in FILTERS:
            expected = sorted((c.sort_key for c in mine if f.matches(c)), reverse=True)
            total_pages = math.ceil(len(expected) / PAGE)
            deep = min(100, max(2, total_pages // 2))
            for depth, first in (("first pages", 1), ("deep pages", deep)):
                walked = await walk(table, f, product, expected, first, pages)
                rows.append(
                    {
                        "product": product,
                        "verified_share": share,
                        "filter": f.name,
                        "matching": len(expected),
                        "depth": depth,
                        "pages": f"{first}-{first + len(walked['ours']) - 1}",
                        **{name: _summary(costs) for name, costs in walked.items()},
                    }
                )
    return rows


async def load(table: TableRef, comments: list[Comment]) -> None:
    await data.load(table, comments, "seeding verified products")
