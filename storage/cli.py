"""Command line for the storage layer: run the engine, create the table, verify counters, explain.

Configuration comes from the environment (``DYNAMODB_ENDPOINT_URL``, ``DYNAMODB_TABLE``,
``AWS_REGION``) or the matching options.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import sys
from collections.abc import Sequence
from pathlib import Path

from storage.client import ClientSettings, open_client
from storage.cursor import encode_cursor
from storage.errors import StorageError
from storage.local_engine import EngineError, LocalEngine
from storage.model import ListingFilter, PageRequest
from storage.reads import list_comments
from storage.table import TableRef, create_table
from storage.verify import Report, repair, verify


def _add_connection(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--endpoint-url",
        default=os.environ.get("DYNAMODB_ENDPOINT_URL"),
        help="DynamoDB endpoint (default: $DYNAMODB_ENDPOINT_URL, else AWS)",
    )
    parser.add_argument(
        "--table",
        default=os.environ.get("DYNAMODB_TABLE", "comments"),
        help="table name (default: $DYNAMODB_TABLE or 'comments')",
    )
    parser.add_argument("--region", default=os.environ.get("AWS_REGION", "us-east-1"))


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="comments", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)

    engine = sub.add_parser("engine", help="run DynamoDB Local in the foreground")
    engine.add_argument("--port", type=int, default=8000)
    engine.add_argument(
        "--data-dir",
        type=Path,
        default=None,
        help="keep data in this directory (default: in memory)",
    )

    create = sub.add_parser("create-table", help="create the table and indexes (idempotent)")
    _add_connection(create)

    check = sub.add_parser("verify-stats", help="recount counters and leaderboard from comments")
    _add_connection(check)
    check.add_argument("--repair", action="store_true", help="rewrite items that drifted")

    explain = sub.add_parser("explain", help="plan and read one page, printing the EXPLAIN")
    _add_connection(explain)
    explain.add_argument("product_id")
    explain.add_argument("--language")
    explain.add_argument("--ratings", help="comma-separated ratings, e.g. 1,2")
    explain.add_argument("--first", type=int)
    explain.add_argument("--after")
    explain.add_argument("--last", type=int)
    explain.add_argument("--before")
    return parser


def _settings(args: argparse.Namespace) -> ClientSettings:
    return ClientSettings(endpoint_url=args.endpoint_url, region=args.region)


async def _create(args: argparse.Namespace) -> int:
    async with open_client(_settings(args)) as client:
        created = await create_table(client, args.table)
    print(f"table {args.table!r} {'created' if created else 'already exists'}; indexes active")
    return 0


def _print_report(report: Report) -> None:
    print(f"{report.comments} comments, {report.stats_items} stats items checked")
    for drift in report.drifts:
        print(f"  DRIFT {drift.describe()}")
    if report.exact:
        print("all counters and leaderboard entries are exact")


async def _verify(args: argparse.Namespace) -> int:
    def progress(scanned: int) -> None:
        print(f"\rscanned {scanned} items", end="", file=sys.stderr, flush=True)

    async with open_client(_settings(args)) as client:
        table = TableRef(client, args.table)
        report = await verify(table, progress=progress)
        print(file=sys.stderr)
        _print_report(report)
        if report.exact or not args.repair:
            return 0 if report.exact else 1
        fixed = await repair(table, report)
    print(f"repaired {fixed.repaired} items, skipped {fixed.skipped} that changed meanwhile")
    return 0 if fixed.skipped == 0 else 1


async def _explain(args: argparse.Namespace) -> int:
    ratings = None if not args.ratings else frozenset(int(r) for r in args.ratings.split(","))
    listing = ListingFilter(args.product_id, args.language, ratings)
    page = PageRequest.from_relay(args.first, args.after, args.last, args.before)
    async with open_client(_settings(args)) as client:
        result = await list_comments(TableRef(client, args.table), listing, page)
    print(result.plan.explain())
    for q in result.executed:
        print(
            f"  round {q.round}: {q.partition_key} limit {q.limit} read {q.items_read}"
            f" ({q.capacity_units} RCU)"
        )
    print(f"  {len(result.comments)} returned, {result.items_read} read, more: {result.has_more}")
    for c in result.comments:
        print(f"{c.created_at} {c.rating}* {c.language} {c.comment_id} {c.title or ''}")
    if result.comments:
        print(f"endCursor: {encode_cursor(result.comments[-1].sort_key)}")
    return 0


def _engine(args: argparse.Namespace) -> int:
    with LocalEngine(port=args.port, data_dir=args.data_dir) as engine:
        where = args.data_dir or "memory"
        print(f"DynamoDB Local (pid {engine.pid}) at {engine.endpoint_url}, data in {where}")
        print("Ctrl-C stops it")
        stop = asyncio.Event()

        async def wait() -> None:
            loop = asyncio.get_running_loop()
            for sig in (signal.SIGINT, signal.SIGTERM):
                loop.add_signal_handler(sig, stop.set)
            await stop.wait()

        asyncio.run(wait())
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        if args.command == "engine":
            return _engine(args)
        handler = {"create-table": _create, "verify-stats": _verify, "explain": _explain}
        return asyncio.run(handler[args.command](args))
    except (EngineError, StorageError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
