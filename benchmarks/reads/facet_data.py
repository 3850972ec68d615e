"""The facet reads' data set: products whose comments answer the shop's questions and
mention topics at realistic, varied rates, loaded with their facet entries and counters.

Comments come from the project's seeder (``server.dev.demo.synthetic_comments``: J-shaped
ratings, skewed languages, three years of timestamps), then get facet values, each drawn
on its own so that two values are independent unless said:

- ``would-recommend`` answered by 90 %, "yes" as likely as the rating makes it (5 stars:
  97 %, 1 star: 5 %): about 58 % of all comments say yes;
- ``fit`` answered by half: small 10 % of all comments, regular 30 %, large 10 %;
- ``comfort`` (a scale) answered by 30 %;
- topics: sound 30 %, comfort 15 %, price 10 %, battery life 6 %, delivery 4 %,
  packaging 2 %;
- 30 % verified purchases, 5 % incentivized.

The comments go in through the bulk loader (``storage.ops.bulk``, exact counters), which
writes no facet items; their entries and counter items are then written as the write path
would write them, built by the model's own functions (``facet_moves``, ``entry_items``),
and ``verify-stats`` (``storage.ops.verify``) recounts everything before any figure is
taken, so the listings read are exactly those a real table would hold. (Its scan of a
large table outlasts DynamoDB Local's patience, so the long form checks what it reads
instead: every page against a brute-force answer, every listing's counters against a
count of the comments.)
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Sequence
from dataclasses import dataclass, replace

from server.dev.demo import synthetic_comments
from server.dev.progress import progress_bar
from storage.base.types import Item
from storage.engine.batch import BATCH_WRITE_MAX, batch_write
from storage.engine.retry import DEFAULT_BACKOFF
from storage.engine.table import TableRef
from storage.model.comments import Comment, ListingFilter
from storage.model.facets import FacetValue
from storage.ops.bulk import load_new_products
from storage.ops.verify import verify
from testing.facet_items import facet_items

RECOMMEND = {5: 0.97, 4: 0.90, 3: 0.50, 2: 0.15, 1: 0.05}
FIT = {"small": 0.2, "regular": 0.6, "large": 0.2}
FIT_ANSWERED = 0.5
COMFORT = {"1": 0.05, "2": 0.10, "3": 0.25, "4": 0.35, "5": 0.25}
TOPICS = {
    "sound": 0.30,
    "comfort": 0.15,
    "price": 0.10,
    "battery-life": 0.06,
    "delivery": 0.04,
    "packaging": 0.02,
}
VERIFIED = 0.30
INCENTIVIZED = 0.05


@dataclass(frozen=True, slots=True)
class Filter:
    """A facet listing, as a shopper asks for it: values, a language, ratings."""

    name: str
    values: tuple[FacetValue, ...]
    language: str | None = None
    ratings: tuple[int, ...] | None = None

    def listing(self, product_id: str) -> ListingFilter:
        ratings = None if self.ratings is None else frozenset(self.ratings)
        return ListingFilter(product_id, self.language, ratings, facets=frozenset(self.values))

    def matches(self, c: Comment) -> bool:
        return (
            c.published
            and (self.language is None or c.language == self.language)
            and (self.ratings is None or c.rating in self.ratings)
            and all(v in c.facets for v in self.values)
        )

    def api_arguments(self, page: int) -> dict[str, object]:
        """The arguments of ``Product.comments`` asking for this listing."""
        attributes = [
            {"key": v.key, "value": v.value} for v in self.values if v.token.startswith("a:")
        ]
        topics = [v.key for v in self.values if v.token.startswith("t:")]
        facets: dict[str, object] = {"attributes": attributes}
        if topics:
            (facets["topic"],) = topics  # the API takes one topic
        args: dict[str, object] = {"first": page, "facets": facets}
        if self.language is not None:
            args["language"] = self.language
        if self.ratings is not None:
            args["ratings"] = list(self.ratings)
        return args


def _with_facets(c: Comment, rng: random.Random) -> Comment:
    values: set[FacetValue] = set()
    if rng.random() < 0.9:
        said = "yes" if rng.random() < RECOMMEND[c.rating] else "no"
        values.add(FacetValue.attribute("would-recommend", said))
    if rng.random() < FIT_ANSWERED:
        (fit,) = rng.choices(list(FIT), weights=list(FIT.values()))
        values.add(FacetValue.attribute("fit", fit))
    if rng.random() < 0.3:
        (comfort,) = rng.choices(list(COMFORT), weights=list(COMFORT.values()))
        values.add(FacetValue.attribute("comfort", comfort))
    mentioned = [t for t, share in TOPICS.items() if rng.random() < share]
    values |= {FacetValue.topic(t) for t in mentioned[:4]}
    return replace(
        c,
        facets=frozenset(values),
        verified=rng.random() < VERIFIED,
        incentivized=rng.random() < INCENTIVIZED,
    )


def comments(products: Sequence[tuple[str, int]], seed: int) -> list[Comment]:
    """The products' comments, deterministic per seed."""
    rng = random.Random(seed)
    made = synthetic_comments([(pid, n, False) for pid, n in products], rng)
    return [_with_facets(c, rng) for c in made]


async def load(
    table: TableRef, data: list[Comment], *, quiet: bool = False, verify_all: bool = True
) -> int:
    """Load ``data`` (new products) with its facet items, then (``verify_all``) check that
    every counter, entry and key is exact; the number of facet items written."""
    shown = None if quiet else progress_bar(len(data), "seeding comments")
    await load_new_products(table, data, progress=shown, concurrency=16)
    items = facet_items(data)
    gate = asyncio.Semaphore(16)
    done = 0
    show = None if quiet else progress_bar(len(items), "seeding facet entries and counters")

    async def write(chunk: list[Item]) -> None:
        nonlocal done
        async with gate:
            puts = [{"PutRequest": {"Item": item}} for item in chunk]
            await batch_write(table, puts, DEFAULT_BACKOFF)
        done += len(chunk)
        if show is not None:
            show(done)

    chunks = [items[n : n + BATCH_WRITE_MAX] for n in range(0, len(items), BATCH_WRITE_MAX)]
    await asyncio.gather(*(write(chunk) for chunk in chunks))
    if not verify_all:
        return len(items)
    report = await verify(table)
    if not report.exact:
        raise AssertionError(f"the loaded table is not exact: {report}")
    return len(items)
