"""Import rate: reviews per second through ``storage.ops.importer``, first run and re-run.

    .venv/bin/python -m benchmarks.writes.import_rate [--lines 100000] [--products 2000]

Starts an in-memory DynamoDB Local, writes ``--lines`` generated reviews to a temporary
JSON Lines file (products of skewed popularity, six languages, ratings skewed to 4 and 5,
10 % verified, some pending and rejected, three years of timestamps, in no order), imports
it, checks every count with ``verify`` (counters, leaderboard, the moderation queue's count,
the authors' per-product counts), then imports the same file again (every line already
imported). A progress bar for each run goes to stderr. Prints both rates and the peak
memory of this process, and writes JSON next to this file under results/.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import resource
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from typing import Any

from server.dev.demo import LANGUAGES, PHRASES, RATINGS
from server.dev.local_engine import LocalEngine
from server.dev.progress import progress_bar
from storage.engine.client import ClientSettings, open_client
from storage.engine.table import TableRef
from storage.model import rules
from storage.ops.create import create_table
from storage.ops.importer import (
    CONCURRENCY,
    WINDOW_LINES,
    ImportSummary,
    import_comments,
    jsonl_lines,
)
from storage.ops.verify import verify

RESULTS = Path(__file__).resolve().parent.parent / "results"
# PENDING and REJECTED share of the reviews; the rest are PUBLISHED.
STATUSES = {"PUBLISHED": 0.92, "PENDING": 0.05, "REJECTED": 0.03}
VERIFIED = 0.10


@dataclass
class Run:
    seconds: float
    imported: int
    already_imported: int
    invalid: int
    conflicts: int

    @property
    def rate(self) -> float:
        return (self.imported + self.already_imported) / self.seconds


def generate(path: Path, lines: int, products: int, rng: random.Random) -> None:
    """``lines`` reviews; product popularity falls off as 1/rank^0.8 (a few products have
    thousands of reviews, most have a dozen)."""
    product_ids = [f"sku-{n:05d}" for n in range(products)]
    weights = [1 / (rank + 1) ** 0.8 for rank in range(products)]
    start = datetime(2022, 1, 1, tzinfo=UTC)
    span = timedelta(days=3 * 365).total_seconds()
    chosen = rng.choices(product_ids, weights=weights, k=lines)
    languages = rng.choices(list(LANGUAGES), weights=list(LANGUAGES.values()), k=lines)
    ratings = rng.choices(list(RATINGS), weights=list(RATINGS.values()), k=lines)
    statuses = rng.choices(list(STATUSES), weights=list(STATUSES.values()), k=lines)
    with path.open("w", encoding="utf-8") as out:
        for n in range(lines):
            language = languages[n]
            phrases = PHRASES[language]
            moment = start + timedelta(seconds=rng.random() * span)
            offset = timedelta(hours=rng.choice([0, 1, 2, -5]))
            review: dict[str, Any] = {
                "externalId": f"shop-{n:07d}",
                "productId": chosen[n],
                "rating": ratings[n],
                "language": rules.canonical_language(language),
                "body": ". ".join(rng.choices(phrases, k=rng.randint(1, 12))) + ".",
                "author": f"customer-{rng.randrange(lines // 3)}",
                "createdAt": moment.astimezone(timezone(offset)).isoformat(),
                "status": statuses[n],
                "verified": rng.random() < VERIFIED,
            }
            if rng.random() < 0.7:
                review["title"] = rng.choice(phrases)
            if rng.random() < 0.8:
                review["authorName"] = f"Customer {rng.randrange(10_000)}"
            out.write(json.dumps(review, ensure_ascii=False) + "\n")


async def import_file(
    table: TableRef, path: Path, lines: int, label: str, args: argparse.Namespace
) -> Run:
    started = time.perf_counter()
    with path.open("rb") as stream:
        summary: ImportSummary = await import_comments(
            table,
            jsonl_lines(stream),
            window_lines=args.window_lines,
            concurrency=args.concurrency,
            progress=progress_bar(lines, label),
        )
    seconds = time.perf_counter() - started
    return Run(
        seconds,
        summary.imported,
        summary.already_imported,
        summary.invalid,
        summary.conflicts,
    )


async def measure(endpoint: str, path: Path, args: argparse.Namespace) -> dict[str, Any]:
    # A strongly consistent scan page of 100,000 comments can take DynamoDB Local longer
    # than the API's 5 s read timeout on a busy machine.
    settings = ClientSettings(endpoint_url=endpoint, read_timeout=120.0)
    async with open_client(settings) as client:
        await create_table(client, "import_rate")
        table = TableRef(client, "import_rate")
        first = await import_file(table, path, args.lines, "import", args)
        print(
            f"first run: {first.imported} imported in {first.seconds:.1f} s, "
            f"{first.imported / first.seconds:.0f} comments/s; verifying",
            file=sys.stderr,
        )
        report = await verify(table)
        print(f"verify: {'exact' if report.exact else report.describe()[:5]}", file=sys.stderr)
        again = await import_file(table, path, args.lines, "again ", args)
    return {
        "first": first,
        "again": again,
        "exact": report.exact,
        "comments": report.comments,
        "stats_items": report.stats_items,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--lines", type=int, default=100_000)
    parser.add_argument("--products", type=int, default=2_000)
    parser.add_argument("--concurrency", type=int, default=CONCURRENCY)
    parser.add_argument("--window-lines", type=int, default=WINDOW_LINES)
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "reviews.jsonl"
        generate(path, args.lines, args.products, random.Random(args.seed))
        size = path.stat().st_size
        print(f"generated {args.lines} lines ({size / 2**20:.1f} MiB)", file=sys.stderr)
        with LocalEngine() as engine:
            result = asyncio.run(measure(engine.endpoint_url, path, args))
    first: Run = result["first"]
    again: Run = result["again"]
    peak_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(
        f"first run:  {first.imported} imported in {first.seconds:.1f} s, "
        f"{first.imported / first.seconds:.0f} comments/s"
    )
    print(
        f"second run: {again.already_imported} already imported in {again.seconds:.1f} s, "
        f"{again.rate:.0f} lines/s"
    )
    print(
        f"verify: {result['comments']} comments, counters "
        f"{'exact' if result['exact'] else 'NOT exact'}; peak memory {peak_mib:.0f} MiB"
    )
    RESULTS.mkdir(exist_ok=True)
    stamp = datetime.now(UTC).strftime("%Y-%m-%dT%H%M%S%z")
    out = RESULTS / f"import-rate-{stamp}.json"
    record = {
        "when": stamp,
        "options": vars(args),
        "file_bytes": size,
        "first": {**asdict(first), "comments_per_second": first.imported / first.seconds},
        "again": {**asdict(again), "lines_per_second": again.rate},
        "exact": result["exact"],
        "peak_rss_mib": round(peak_mib),
    }
    out.write_text(json.dumps(record, indent=2) + "\n")
    print(f"wrote {out}", file=sys.stderr)
    return 0 if result["exact"] and first.imported + first.invalid == args.lines else 1


if __name__ == "__main__":
    sys.exit(main())
