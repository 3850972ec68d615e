"""Erasing an author with 1,000 comments (and their votes and reports) while they keep
writing: wall time, passes and storage calls, with ``verify`` exact after.

    .venv/bin/python -m benchmarks.writes.erasure [--comments 1000] [--quick]

Starts DynamoDB Local in memory and loads, per author erased, ``--comments`` comments (one
product each) and as many comments of other authors on the same products; the author
votes on half of the others' comments and reports a tenth of them, and other viewers vote
on half of the author's. Then, in the same run:

- the baseline: another author's ``--comments`` comments deleted one by one through the
  delete path (``CONCURRENCY`` at a time, as the erasure's steps go), and one full scan of
  the table (``verify``);
- an erasure in DELETE mode while the author keeps writing (a create, a vote and a report
  every 20 ms, from two writers): the writers stop once the job's first pass has been
  made, and the job runs to its end; creates refused by the fence, passes and what each
  erased are recorded;
- an erasure in ANONYMIZE mode of a third author of the same size, with no writers.

Every erasure's calls are counted by operation (``storage.engine.metering``), and
``verify`` must be exact after each. Writes ``benchmarks/results/erasure-<stamp>.json``.
The machine is shared and noisy: wall times are single runs; the counts are exact.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from datetime import UTC, datetime
from typing import Any

from benchmarks.report import run_header, save_result
from server.dev.local_engine import LocalEngine
from storage.base.errors import AuthorErasing, StorageError
from storage.base.types import DynamoClient
from storage.engine.client import ClientSettings, open_client
from storage.engine.metering import Meter, MeteredClient
from storage.engine.table import TableRef
from storage.model.comments import NewComment, Vote
from storage.model.erasure import Mode
from storage.ops.create import create_table
from storage.ops.erasure import CONCURRENCY, run_erasure, start_erasure
from storage.ops.verify import verify
from storage.reads.author_data import find_author_data
from storage.writes import create_comment
from storage.writes.delete import delete_comment
from storage.writes.reports import report_comment
from storage.writes.votes import vote_helpful

TABLE = "erasure"
QUICK_COMMENTS = 100
LOAD_CONCURRENCY = 32
WRITE_EVERY = 0.02


def say(line: str) -> None:
    print(f"==> {line}", file=sys.stderr, flush=True)


async def _gather_bounded(calls: list[Any], limit: int) -> list[Any]:
    gate = asyncio.Semaphore(limit)

    async def one(call: Any) -> Any:
        async with gate:
            return await call

    return list(await asyncio.gather(*(one(c) for c in calls)))


def _new(author: str, product: str, n: int) -> NewComment:
    return NewComment(
        product_id=product,
        language=("en", "de", "fr")[n % 3],
        rating=1 + n % 5,
        body=f"review {n} of {product}",
        author_id=author,
        author_name=author.title(),
    )


async def load(table: TableRef, author: str, comments: int) -> list[str]:
    """The author's comments, others' on the same products, and the votes and reports."""
    prefix = f"{author}-p"
    mine = await _gather_bounded(
        [create_comment(table, _new(author, f"{prefix}{n}", n)) for n in range(comments)],
        LOAD_CONCURRENCY,
    )
    theirs = await _gather_bounded(
        [
            create_comment(table, _new(f"other-{n % 50}", f"{prefix}{n}", n + 1))
            for n in range(comments)
        ],
        LOAD_CONCURRENCY,
    )
    others = [r.comment.comment_id for r in theirs]
    calls: list[Any] = [
        vote_helpful(table, cid, voter=author, vote=Vote.HELPFUL) for cid in others[::2]
    ]
    calls += [
        vote_helpful(table, r.comment.comment_id, voter=f"voter-{n % 7}", vote=Vote.HELPFUL)
        for n, r in enumerate(mine[::2])
    ]
    calls += [report_comment(table, cid, reporter=author, reason="SPAM") for cid in others[::10]]
    await _gather_bounded(calls, LOAD_CONCURRENCY)
    return others


async def baseline(client: DynamoClient, name: str, author: str, comments: int) -> dict[str, Any]:
    table = TableRef(client, name)
    await load(table, author, comments)
    found = [i["commentId"]["S"] for i in (await find_author_data(table, author)).comments]
    meter = Meter()
    metered = TableRef(MeteredClient(client, meter), name)
    started = time.perf_counter()
    await _gather_bounded([delete_comment(metered, cid) for cid in found], CONCURRENCY)
    deleted = time.perf_counter() - started
    started = time.perf_counter()
    report = await verify(table)
    scanned = time.perf_counter() - started
    return {
        "deleted": len(found),
        "delete_seconds": round(deleted, 3),
        "delete_calls": dict(sorted(meter.calls.items())),
        "verify_scan_seconds": round(scanned, 3),
        "verify_exact": report.exact,
    }


async def erase(
    client: DynamoClient, name: str, author: str, comments: int, mode: Mode, *, writers: int
) -> dict[str, Any]:
    table = TableRef(client, name)
    others = await load(table, author, comments)
    meter = Meter()
    metered = TableRef(MeteredClient(client, meter), name)
    first_pass = asyncio.Event()
    refused = written = 0
    lines: list[str] = []

    def progress(line: str) -> None:
        lines.append(line)
        if line.startswith("pass "):
            first_pass.set()

    async def writer(w: int) -> None:
        nonlocal refused, written
        n = 0
        while not first_pass.is_set():
            n += 1
            target = others[(w * 7919 + n) % len(others)]
            try:
                await create_comment(table, _new(author, f"{author}-late-{w}-{n}", n))
                written += 1
            except AuthorErasing:
                refused += 1
            for step in (
                vote_helpful(table, target, voter=author, vote=Vote.NOT_HELPFUL),
                report_comment(table, target, reporter=author, reason="OFF_TOPIC"),
            ):
                try:
                    await step
                    written += 1
                except StorageError:
                    pass
            await asyncio.sleep(WRITE_EVERY)

    tasks = [asyncio.create_task(writer(w)) for w in range(writers)]
    await asyncio.sleep(0.2 if writers else 0)
    started = time.perf_counter()
    job = await start_erasure(metered, author, mode)
    if not writers:
        first_pass.set()
    done = await run_erasure(metered, job.request_id, progress=progress)
    seconds = time.perf_counter() - started
    await asyncio.gather(*tasks)
    report = await verify(table)
    passes = [line for line in lines if line.startswith("pass ")]
    return {
        "mode": mode.value,
        "comments": comments,
        "state": done.state.value,
        "counts": done.counts,
        "passes": len(passes),
        "pass_lines": passes,
        "seconds": round(seconds, 3),
        "calls": dict(sorted(meter.calls.items())),
        "total_calls": meter.total_calls,
        "write_units": round(meter.write_capacity, 1),
        "read_units": round(meter.read_capacity, 1),
        "writers": writers,
        "refused_creates": refused,
        "writes_before_the_cut": written,
        "verify_exact": report.exact,
        "verify": report.describe() if not report.exact else [],
    }


async def run(client: DynamoClient, comments: int, *, table_name: str = TABLE) -> dict[str, Any]:
    await create_table(client, table_name, stream=False)
    say(f"baseline: {comments} comments deleted through the delete path, one scan")
    base = await baseline(client, table_name, "baseline-author", comments)
    say(f"DELETE erasure of {comments} comments while the author writes")
    deleting = await erase(client, table_name, "deleted-author", comments, Mode.DELETE, writers=2)
    say(f"ANONYMIZE erasure of {comments} comments")
    anonymizing = await erase(
        client, table_name, "anonymized-author", comments, Mode.ANONYMIZE, writers=0
    )
    return {
        "baseline": base,
        "erasures": [deleting, anonymizing],
        "exact": base["verify_exact"]
        and deleting["verify_exact"]
        and anonymizing["verify_exact"]
        and deleting["state"] == anonymizing["state"] == "DONE",
    }


async def measure(engine: LocalEngine, comments: int) -> dict[str, Any]:
    settings = ClientSettings(endpoint_url=engine.endpoint_url, read_timeout=120.0)
    async with open_client(settings) as client:
        return await run(client, comments)


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--comments", type=int, default=1000)
    parser.add_argument("--quick", action="store_true", help="a smoke run: 100 comments")
    args = parser.parse_args()
    if args.quick:
        args.comments = QUICK_COMMENTS
    with LocalEngine() as engine:
        figures = asyncio.run(measure(engine, args.comments))
    when = datetime.now(UTC)
    result = {**run_header("benchmarks.writes.erasure", when), **figures}
    path = save_result("erasure", result, when)
    say(f"wrote {path}")
    if not figures["exact"]:
        raise SystemExit("the end state was not exact")


if __name__ == "__main__":
    main()
