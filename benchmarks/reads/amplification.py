"""Items read per item returned, ours against the blog's fan-out, on one skewed product.

    .venv/bin/python -m benchmarks.reads.amplification [--comments 5000] [--pages 40]

Starts an in-memory DynamoDB Local, writes one product's comments through the real create
path (J-shaped ratings, skewed languages, timestamps over three years), then walks the first
``--pages`` pages of every 2-, 3- and 4-rating filter with page size 20, both ways:

- ours: ``storage.reads.reader.list_comments`` (stats-guided limits, top-ups only where needed);
- the blog's fan-out: one query per requested rating with Limit = page size, merged, the
  same keyset cursor (so only the read budget differs).

Prints a table of medians and writes JSON next to this file under results/.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import random
import statistics
import time
from dataclasses import asdict, dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from benchmarks.reads.baselines import blog_fan_out
from server.dev.demo import LANGUAGES, RATINGS
from server.dev.local_engine import LocalEngine
from server.dev.progress import progress_bar
from storage.engine.client import ClientSettings, open_client
from storage.engine.table import TableRef
from storage.model import keys
from storage.model.comments import Direction, ListingFilter, NewComment, PageRequest
from storage.ops.create import create_table
from storage.reads.reader import get_counts, list_comments
from storage.writes import create_comment

PAGE = 20
RESULTS = Path(__file__).resolve().parent.parent / "results"


@dataclass
class PageCost:
    returned: int
    read: int
    rounds: int


async def seed(table: TableRef, product_id: str, n: int, rng: random.Random) -> None:
    start = datetime(2023, 1, 1, tzinfo=UTC)
    span = timedelta(days=3 * 365).total_seconds()
    ratings = rng.choices(list(RATINGS), weights=list(RATINGS.values()), k=n)
    languages = rng.choices(list(LANGUAGES), weights=list(LANGUAGES.values()), k=n)
    gate = asyncio.Semaphore(32)
    done = 0
    show = progress_bar(n, "seeded")

    async def one(i: int) -> None:
        nonlocal done
        moment = start + timedelta(seconds=rng.random() * span)
        new = NewComment(
            product_id,
            languages[i],
            ratings[i],
            f"comment {i}",
            f"user{i % 97}",
            created_at=keys.format_timestamp(moment),
        )
        async with gate:
            await create_comment(table, new)
        done += 1
        show(done)

    await asyncio.gather(*(one(i) for i in range(n)))


async def blog_page(
    table: TableRef, product_id: str, ratings: frozenset[int], position: str | None
) -> tuple[list[str], bool, PageCost]:
    """The blog's AP3 (``baselines.blog_fan_out``): one query per rating, Limit = page size."""
    page = await blog_fan_out(table, product_id, None, sorted(ratings), PAGE, position)
    return page.sort_keys, page.has_more, PageCost(len(page.sort_keys), page.items_read, 1)


async def walk_ours(
    table: TableRef, product_id: str, ratings: frozenset[int], pages: int
) -> tuple[list[str], list[PageCost]]:
    listing = ListingFilter(product_id, None, ratings)
    position: str | None = None
    seen: list[str] = []
    costs: list[PageCost] = []
    for _ in range(pages):
        page = await list_comments(table, listing, PageRequest(PAGE, Direction.FORWARD, position))
        keys_ = [c.sort_key for c in page.comments]
        seen += keys_
        costs.append(PageCost(len(keys_), page.items_read, page.rounds))
        if not page.has_more:
            break
        position = keys_[-1]
    return seen, costs


async def walk_blog(
    table: TableRef, product_id: str, ratings: frozenset[int], pages: int
) -> tuple[list[str], list[PageCost]]:
    position: str | None = None
    seen: list[str] = []
    costs: list[PageCost] = []
    for _ in range(pages):
        page, more, cost = await blog_page(table, product_id, ratings, position)
        seen += page
        costs.append(cost)
        if not more or not page:
            break
        position = page[-1]
    return seen, costs


@dataclass
class FilterRow:
    k: int
    ratings: list[int]
    pages: int
    ours_median: float
    blog_median: float
    ours_mean: float
    blog_mean: float
    ours_max_rounds: int
    ours_two_rounds_or_less: float
    ours_one_round: float


def amplification(costs: list[PageCost]) -> list[float]:
    return [c.read / c.returned for c in costs if c.returned]


async def run(comments: int, pages: int, seed_value: int) -> dict[str, Any]:
    rng = random.Random(seed_value)
    with LocalEngine() as engine:
        async with open_client(ClientSettings(endpoint_url=engine.endpoint_url)) as client:
            await create_table(client, "bench")
            table = TableRef(client, "bench")
            product = "hot-1"
            t0 = time.perf_counter()
            await seed(table, product, comments, rng)
            seeded_in = time.perf_counter() - t0
            counts = await get_counts(table, product, None)
            rows: list[FilterRow] = []
            for k in (2, 3, 4):
                for combo in itertools.combinations(sorted(RATINGS), k):
                    ratings = frozenset(combo)
                    ours_keys, ours = await walk_ours(table, product, ratings, pages)
                    blog_keys, blog = await walk_blog(table, product, ratings, pages)
                    # Same pages, or the comparison means nothing.
                    assert ours_keys == blog_keys[: len(ours_keys)], combo
                    rows.append(
                        FilterRow(
                            k=k,
                            ratings=list(combo),
                            pages=len(ours),
                            ours_median=statistics.median(amplification(ours)),
                            blog_median=statistics.median(amplification(blog)),
                            ours_mean=statistics.fmean(amplification(ours)),
                            blog_mean=statistics.fmean(amplification(blog)),
                            ours_max_rounds=max(c.rounds for c in ours),
                            ours_two_rounds_or_less=sum(c.rounds <= 2 for c in ours) / len(ours),
                            ours_one_round=sum(c.rounds == 1 for c in ours) / len(ours),
                        )
                    )
    by_k = {}
    for k in (2, 3, 4):
        mine = [r for r in rows if r.k == k]
        ours_m = statistics.median(r.ours_median for r in mine)
        blog_m = statistics.median(r.blog_median for r in mine)
        by_k[k] = {
            "ours": ours_m,
            "blog": blog_m,
            "ratio": blog_m / ours_m,
            "ours_mean": statistics.fmean(r.ours_mean for r in mine),
            "blog_mean": statistics.fmean(r.blog_mean for r in mine),
            "ours_one_round": statistics.fmean(r.ours_one_round for r in mine),
            "ours_max_rounds": max(r.ours_max_rounds for r in mine),
        }
    return {
        "when": datetime.now(UTC).isoformat(timespec="seconds"),
        "comments": comments,
        "counts_by_rating": list(counts.by_rating),
        "page_size": PAGE,
        "pages_per_filter": pages,
        "seed": seed_value,
        "seeded_seconds": round(seeded_in, 1),
        "filters": [asdict(r) for r in rows],
        "by_ratings_requested": by_k,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--comments", type=int, default=5000)
    parser.add_argument("--pages", type=int, default=40)
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    result = asyncio.run(run(args.comments, args.pages, args.seed))
    RESULTS.mkdir(exist_ok=True)
    out = RESULTS / f"read-amplification-{result['when'].replace(':', '')}.json"
    out.write_text(json.dumps(result, indent=2) + "\n")
    print(
        f"product: {result['comments']} comments, counts by rating 1..5 "
        f"{result['counts_by_rating']}; page size {PAGE}; first {args.pages} pages per filter"
    )
    print(
        f"{'ratings':>8} | {'blog median':>11} | {'ours median':>11} | {'blog/ours':>9} |"
        f" {'blog mean':>9} | {'ours mean':>9} | {'1 round':>7} | {'max rounds':>10}"
    )
    for k, row in result["by_ratings_requested"].items():
        print(
            f"{k:>8} | {row['blog']:>11.2f} | {row['ours']:>11.2f} | {row['ratio']:>9.2f} |"
            f" {row['blog_mean']:>9.2f} | {row['ours_mean']:>9.2f} |"
            f" {row['ours_one_round']:>7.0%} | {row['ours_max_rounds']:>10}"
        )
    print("items read per item returned: median (or mean) over filters of the per-page figure")
    print(f"written to {out}")


if __name__ == "__main__":
    main()
