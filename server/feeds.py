"""``comments export``: the reviews as a feed file for another service (Google's product
review feed), resumable, with a progress line on stderr.

The command's options and its body live here so that ``server.cli`` only registers it;
the export itself is ``storage.ops.feeds.export``.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, date, datetime
from pathlib import Path
from typing import TextIO

from storage.base.errors import StorageError
from storage.engine.client import ClientSettings, open_client
from storage.engine.table import TableRef
from storage.model import keys
from storage.model.catalogue import CatalogueLine, LineProblem, split_lines
from storage.ops.feeds.catalogue_index import CatalogueIndex
from storage.ops.feeds.export import (
    FORMAT,
    MAX_FILE_BYTES,
    MIN_FILE_BYTES,
    PAGE_ITEMS,
    SEGMENTS,
    SEGMENTS_MAX,
    FeedOptions,
    Progress,
    export_feed,
)
from storage.ops.feeds.files import copy_out
from storage.ops.feeds.google import Publisher
from storage.ops.feeds.urls import (
    PRODUCT_PLACEHOLDERS,
    REVIEW_PLACEHOLDERS,
    InvalidTemplate,
    UrlTemplate,
)

# How often, in a log, the progress line is written (a terminal redraws it every page).
LOG_SECONDS = 10.0
NAME_MAX = 200  # characters of a publisher's or aggregator's name


def add_parser(
    sub: argparse._SubParsersAction,  # type: ignore[type-arg]
    add_connection: Callable[[argparse.ArgumentParser], None],
) -> None:
    """Register ``export`` on the command's subparsers."""
    export = sub.add_parser(
        "export",
        help="write the published reviews as a feed file (Google's product review feed); resumable",
        description="Write every published review (or, with --since, every review changed "
        "since then) as Google's product review feed, schema 2.4, to --output or stdout. "
        "The table is scanned in parallel segments, in constant memory, with a progress line "
        "on stderr. With --output the file is replaced atomically at the end, and an "
        "interrupted export is finished by running the same command again (a checkpoint "
        "beside the output keeps its place). It ends by printing the --since for the next "
        "incremental feed. Exit status: 0 written, 2 on an error (run it again to resume).",
    )
    add_connection(export)
    export.add_argument("--format", required=True, choices=[FORMAT], help="the feed's format")
    export.add_argument(
        "--output", type=Path, help="write to this file (atomically; resumable) instead of stdout"
    )
    export.add_argument(
        "--since",
        metavar="TIME",
        help="an incremental feed: only reviews changed since TIME (ISO-8601 with a "
        "timezone, or a date, meaning its midnight UTC); default: every published review",
    )
    export.add_argument(
        "--catalogue",
        type=Path,
        metavar="FILE",
        help="the catalogue file (JSON Lines) naming each product's GTIN, MPN, SKU, brand, "
        "name and page",
    )
    export.add_argument(
        "--review-url-template",
        required=True,
        metavar="URL",
        help="each review's page, e.g. 'https://shop.example/p/{productId}#review-{commentId}' "
        "(with {commentId} the page is the review's own, else a page of several)",
    )
    export.add_argument(
        "--product-url-template",
        required=True,
        metavar="URL",
        help="each product's page, e.g. 'https://shop.example/p/{productId}'; a catalogue "
        "line's url wins",
    )
    export.add_argument("--publisher-name", required=True, help="the shop's name in the feed")
    export.add_argument("--publisher-favicon", metavar="URL", help="the shop's favicon URL")
    export.add_argument(
        "--aggregator-name", help="the review aggregator's name, when one provides the feed"
    )
    export.add_argument(
        "--segments",
        type=int,
        default=SEGMENTS,
        help=f"parallel scan segments, 1 to {SEGMENTS_MAX} (default {SEGMENTS})",
    )
    export.add_argument(
        "--page-items",
        type=int,
        default=PAGE_ITEMS,
        help=f"items scanned per call, between checkpoints (default {PAGE_ITEMS})",
    )
    export.add_argument(
        "--max-file-bytes",
        type=int,
        default=MAX_FILE_BYTES,
        help=f"a larger feed is split into numbered files beside --output (FILE-1.xml, "
        f"FILE-2.xml...), each a whole feed (default {MAX_FILE_BYTES:,}, Google's limit; "
        "0: one file of any size; stdout is always one feed)",
    )


def parse_since(text: str) -> str:
    """``--since`` as a stored timestamp; a date is its midnight UTC."""
    try:
        if len(text) == 10:
            moment = datetime.combine(date.fromisoformat(text), datetime.min.time(), UTC)
        else:
            moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError as exc:
        raise ValueError(f"--since {text!r} is not an ISO-8601 date or time") from exc
    if moment.tzinfo is None:
        raise ValueError(f"--since {text!r} needs a timezone (such as Z)")
    return keys.format_timestamp(moment)


def _name(value: str | None, option: str) -> str | None:
    if value is None:
        return None
    value = value.strip()
    if not value or len(value) > NAME_MAX or any(ord(ch) < 32 for ch in value):
        raise ValueError(f"{option} is 1 to {NAME_MAX} characters on one line")
    return value


def options_from(args: argparse.Namespace, catalogue_version: str) -> FeedOptions:
    """The feed's options from the command line; ValueError says what is wrong."""
    if args.max_file_bytes and args.max_file_bytes < MIN_FILE_BYTES:
        raise ValueError(f"--max-file-bytes is 0 or at least {MIN_FILE_BYTES:,}")
    favicon = None
    if args.publisher_favicon is not None:
        favicon = UrlTemplate.parse(args.publisher_favicon, frozenset()).text
    publisher = Publisher(
        _name(args.publisher_name, "--publisher-name") or "",
        favicon,
        _name(args.aggregator_name, "--aggregator-name"),
    )
    return FeedOptions(
        publisher,
        UrlTemplate.parse(args.review_url_template, REVIEW_PLACEHOLDERS),
        UrlTemplate.parse(args.product_url_template, PRODUCT_PLACEHOLDERS),
        since=None if args.since is None else parse_since(args.since),
        segments=args.segments,
        page_items=args.page_items,
        catalogue_version=catalogue_version,
        # One stream has no files to split into.
        max_file_bytes=None
        if args.output is None or args.max_file_bytes == 0
        else args.max_file_bytes,
    )


class ProgressLine:
    """Reviews written, items scanned and the rate: redrawn on a terminal after every
    page, written as a whole line every LOG_SECONDS in a log."""

    def __init__(self, out: TextIO | None = None) -> None:
        self.out = out or sys.stderr
        try:
            self.terminal = self.out.isatty()
        except ValueError:
            self.terminal = False
        self.last = -LOG_SECONDS
        self.drawn = False

    def __call__(self, p: Progress) -> None:
        rate = p.reviews / max(p.seconds, 1e-9)
        line = (
            f"exported {p.reviews} reviews, scanned {p.scanned} items, "
            f"segments done {p.segments_done}/{p.segments}, {rate:.0f} reviews/s"
        )
        if self.terminal:
            print(f"\r{line}", end="", file=self.out, flush=True)
            self.drawn = True
        elif p.seconds - self.last >= LOG_SECONDS or p.segments_done == p.segments:
            print(line, file=self.out, flush=True)
            self.last = p.seconds

    def end(self) -> None:
        if self.drawn:
            print(file=self.out, flush=True)
            self.drawn = False


@contextmanager
def _catalogue(path: Path | None) -> Iterator[tuple[Callable[[str], CatalogueLine | None], str]]:
    """A look-up of the catalogue's products (none without a file) and its version."""
    if path is None:
        yield (lambda _: None), ""
        return

    def problem(found: LineProblem) -> None:
        print(f"catalogue line {found.line} skipped: {found.reason}", file=sys.stderr)

    stat = path.stat()
    version = f"{path.resolve()}:{stat.st_size}:{stat.st_mtime_ns}"
    with CatalogueIndex() as index, path.open(encoding="utf-8", newline="") as stream:
        started = time.monotonic()
        index.load(split_lines(iter(lambda: stream.read(1 << 16), "")), problem)
        print(
            f"catalogue: {index.products} products indexed in "
            f"{time.monotonic() - started:.1f} s ({index.problems} lines skipped)",
            file=sys.stderr,
        )
        yield index.get, version


async def main(args: argparse.Namespace, client_settings: ClientSettings, table_name: str) -> int:
    """Run ``comments export`` with the connection the command line and environment give."""
    try:
        with _catalogue(args.catalogue) as (lookup, version):
            options = options_from(args, version)
            progress = ProgressLine()
            async with open_client(client_settings) as client:
                table = TableRef(client, table_name)
                try:
                    if args.output is not None:
                        done = await export_feed(
                            table, args.output, options, lookup, progress=progress
                        )
                    else:
                        with tempfile.TemporaryDirectory(prefix="feed-") as work:
                            target = Path(work) / "feed.xml"
                            done = await export_feed(
                                table, target, options, lookup, progress=progress
                            )
                            await asyncio.to_thread(copy_out, target, sys.stdout.buffer)
                            sys.stdout.flush()
                finally:
                    progress.end()
    except InvalidTemplate as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except StorageError as exc:
        print(f"error: {exc}", file=sys.stderr)
        if args.output is not None:
            print(
                f"{args.output} is as it was; the checkpoint beside it keeps the export's "
                "place: run the same command again to finish",
                file=sys.stderr,
            )
        return 2
    except OSError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(done.describe(), file=sys.stderr)
    return 0
