"""The ``comments`` command: serve the API, manage the table and data, mint dev tokens.

Configuration comes from the environment, read once through ``server.settings`` (see the
manual, docs/configuration.md); the matching options win over it.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import signal
import sys
import time
from collections.abc import Sequence
from contextlib import suppress
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from resolvers.auth import mint
from resolvers.authors import author_key, configured_key, printed_key
from resolvers.errors import ApiError
from resolvers.pages import page_request
from schema import build_schema
from server import privacy_commands
from server.dev.demo import DEMO_PRODUCTS, DEMO_SEED, demo_comments
from server.dev.demo_facets import facet_reviews
from server.dev.local_engine import EngineError, LocalEngine
from server.dev.progress import note, progress_bar, progress_count
from server.dev.seeding import seed_demo
from server.feeds import add_parser as add_export_parser
from server.feeds import main as export_main
from server.http.app import create_app
from server.http.head_limits import HeadLimits, guarded_protocol
from server.observability.logs import configure_logging, uvicorn_log_config
from server.runtime import DEV_TOKEN_LIFETIME
from server.secret_file import dev_secret_path, secret_from_file
from server.settings import (
    DEV_CORS_ORIGINS,
    MAX_WORKERS,
    DevelopmentSettings,
    Settings,
    StorageSettings,
    TokenSettings,
)
from server.shutdown import Drain, Leaving, Server
from server.webhooks import commands as webhook_commands
from storage.base.errors import (
    GroupMoveUnfinished,
    InvalidInput,
    StorageError,
    StorageUnavailable,
)
from storage.engine.client import open_client
from storage.engine.table import TableRef
from storage.model.catalogue import split_lines
from storage.model.comments import ListingFilter, Order
from storage.model.facets import Scope
from storage.model.layout_version import CODE_LAYOUT
from storage.model.leaderboard import MAX_SHARDS, validate_shards
from storage.model.problems import InvalidFields
from storage.model.topics import Tagger, Taxonomy
from storage.ops.catalogue_groups import CatalogueProblem, apply_catalogue
from storage.ops.create import create_table
from storage.ops.group_move import move_product
from storage.ops.importer import CONCURRENCY, InvalidLine, import_comments, jsonl_lines
from storage.ops.migrate import migrate
from storage.ops.remap import remap_answers
from storage.ops.reshard import reshard_leaders
from storage.ops.retag import PAGE_ITEMS as RETAG_PAGE_ITEMS
from storage.ops.retag import retag_comments
from storage.ops.verify import ReadPace, Report, repair, verify
from storage.reads.cursor import Ordering, encode_cursor
from storage.reads.reader import list_comments
from storage.writes.facet_settings import SettingsChanged, read_taxonomy, save_taxonomy
from storage.writes.tagging import SETTLE_SECONDS

# Options that override a setting: the option's name in argparse -> the settings field.
_STORAGE_OPTIONS = {
    "endpoint_url": "dynamodb_endpoint_url",
    "table": "dynamodb_table",
    "region": "aws_region",
}
# migrate-table's exit status when it stopped before the end for safety (it says why).
MIGRATION_STOPPED = 3
# taxonomy load's exit status when the file or the revision was refused (it says why).
REFUSED = 1
_TOKEN_OPTIONS = {"secret": "jwt_secret", "issuer": "jwt_issuer", "audience": "jwt_audience"}
_SERVE_OPTIONS = {"host": "host", "port": "port", "workers": "workers"}


def _default(field: str) -> Any:
    """The default the settings declare for ``field`` (for help texts)."""
    return Settings.model_fields[field].default


def _add_connection(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--endpoint-url", help="DynamoDB endpoint (default: $DYNAMODB_ENDPOINT_URL, else AWS)"
    )
    parser.add_argument(
        "--table",
        help=f"table name (default: $DYNAMODB_TABLE or {_default('dynamodb_table')!r})",
    )
    parser.add_argument(
        "--region", help=f"AWS region (default: $AWS_REGION or {_default('aws_region')})"
    )


def _given(args: argparse.Namespace, options: dict[str, str]) -> dict[str, Any]:
    """The settings fields the command line gives; they win over the environment."""
    values = {field: getattr(args, option) for option, field in options.items()}
    return {field: value for field, value in values.items() if value is not None}


def storage_settings(args: argparse.Namespace) -> StorageSettings:
    """Where the table is: the environment's storage settings under the options given."""
    return StorageSettings(**_given(args, _STORAGE_OPTIONS))


def token_settings(args: argparse.Namespace) -> TokenSettings:
    """How tokens are signed and checked: the environment's settings under the options."""
    return TokenSettings(**_given(args, _TOKEN_OPTIONS))


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="comments", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)

    serve = sub.add_parser(
        "serve", help="run the API (starts DynamoDB Local with demo data unless an endpoint is set)"
    )
    serve.add_argument("--host", help=f"default: $HOST or {_default('host')}")
    serve.add_argument("--port", type=int, help=f"default: $PORT or {_default('port')}")
    serve.add_argument(
        "--workers",
        type=int,
        help=f"worker processes, 1 to {MAX_WORKERS} (default: $WORKERS or 1: no extra process)",
    )

    seed = sub.add_parser("seed", help="write synthetic demo data (new products only)")
    _add_connection(seed)
    seed.add_argument(
        "--products",
        type=int,
        default=DEMO_PRODUCTS,
        help=f"products besides the hot one (default {DEMO_PRODUCTS})",
    )
    seed.add_argument(
        "--seed", type=int, default=DEMO_SEED, help="random seed (same data each time)"
    )

    token = sub.add_parser("token", help="mint a development JWT (HS256, secret $JWT_SECRET)")
    token.add_argument("sub", help="author id")
    token.add_argument(
        "--name", help="display name shown on comments (default: none, shown as Anonymous)"
    )
    token.add_argument("--moderator", action="store_true", help="add the moderator role")
    token.add_argument("--merchant", action="store_true", help="add the merchant role")
    token.add_argument(
        "--purchases",
        help="comma-separated product ids the author bought (their comments are verified)",
    )
    hours = DEV_TOKEN_LIFETIME / 3600
    token.add_argument("--hours", type=float, default=hours, help=f"lifetime (default {hours:g})")
    token.add_argument("--secret", help="default: $JWT_SECRET")
    token.add_argument("--issuer", help="iss (default: $JWT_ISSUER)")
    token.add_argument("--audience", help="aud (default: $JWT_AUDIENCE)")

    sub.add_parser(
        "author-id-key",
        help="print the key the public author ids are made with (pin it as AUTHOR_ID_KEY)",
        description="Print the key the public author ids are made with now: AUTHOR_ID_KEY's, "
        "else the one derived from JWT_SECRET (or, in development, the secret serve keeps). "
        "Set as AUTHOR_ID_KEY before JWT_SECRET is rotated, it keeps every author's id; it "
        "cannot sign tokens, but keep it as a secret.",
    )

    export = sub.add_parser("export-schema", help="print the GraphQL schema (SDL)")
    export.add_argument("--output", type=Path, help="write to this file instead")

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

    migrate = sub.add_parser(
        "migrate-table",
        help="bring the table to this release's layout: indexes, stream and TTL, then (once "
        "no older process writes) the keys old comments lack; resumable; exit 3 when it "
        "stopped before the end, saying why",
    )
    _add_connection(migrate)
    migrate.add_argument(
        "--wait",
        type=float,
        default=3600.0,
        help="seconds to wait for each index to be built before giving up; running the "
        "command again resumes (default 3600)",
    )
    migrate.add_argument(
        "--expand-only",
        action="store_true",
        help="add indexes, stream and TTL only (the step before deploying a new release); "
        "old code goes on working",
    )
    migrate.add_argument(
        "--fence",
        action="store_true",
        help="go on while processes of an older layout run: they stop writing (their writes "
        "fail) until they are replaced",
    )
    migrate.add_argument(
        "--legacy-processes-gone",
        action="store_true",
        help="confirm that no process of a release from before layout versions serves the "
        "table any more (their processes cannot be seen)",
    )
    migrate.add_argument(
        "--leaderboard-shards",
        type=int,
        metavar="N",
        help=f"spread the leaderboard over N index partitions (1 to {MAX_SHARDS}; a table "
        "without a recorded number has 1) and move every entry; safe to interrupt and to run "
        "again, and the leaderboard stays exact meanwhile",
    )

    check = sub.add_parser("verify-stats", help="recount counters and leaderboard from comments")
    _add_connection(check)
    check.add_argument("--repair", action="store_true", help="rewrite items that drifted")
    check.add_argument(
        "--json", action="store_true", help="print the report as JSON on stdout (for scripts)"
    )
    check.add_argument(
        "--max-read-units",
        type=float,
        metavar="N",
        help="read at most N capacity units a second on average (default: as fast as the "
        "table answers); keeps a scan of a production table from taking its traffic's share",
    )

    imports = sub.add_parser(
        "import",
        help="import existing reviews from JSON Lines, once each (exit 1: some lines skipped)",
        description="Import existing reviews from a JSON Lines file, one review per line, with "
        "exact counters. Each review is imported once, by its externalId: running the same "
        "import again (after a crash, say) skips what is in and completes the rest. Invalid "
        "lines, a repeated externalId, and reviews imported before with other content "
        "(conflicts: the stored review is left as it is) are reported on stderr with their "
        "line numbers and skipped. Exit status: 0 when every line is in, 1 when some lines "
        "were skipped (all others are in), 2 on any other error (run it again to finish).",
    )
    _add_connection(imports)
    imports.add_argument("file", type=Path, help="the JSON Lines file (FILE.jsonl)")
    imports.add_argument(
        "--concurrency",
        type=int,
        default=CONCURRENCY,
        help=f"products written at once (default {CONCURRENCY})",
    )

    taxonomy = sub.add_parser("taxonomy", help="the shop's topic taxonomy")
    taxonomy_sub = taxonomy.add_subparsers(dest="taxonomy_command", required=True)
    load = taxonomy_sub.add_parser(
        "load",
        help="store a taxonomy file (exit 1: refused, saying where)",
        description="Store the topic taxonomy in FILE (JSON, the format storage/model/topics.py "
        "documents) as the shop's, on the condition that the stored one is still the revision "
        "read (or --revision's). Problems are printed with their path "
        "(topics[3].words.de[2]). Exit status: 0 stored (or the same already), 1 refused (the "
        "file, or a change made meanwhile: run again), 2 any other error. Comments tagged "
        "before follow once `comments retag` has run.",
    )
    _add_connection(load)
    load.add_argument("file", type=Path, help="the taxonomy (FILE.json)")
    load.add_argument(
        "--revision",
        type=int,
        metavar="N",
        help="the revision the file was made from: refused if the stored one is another "
        "(default: the revision stored when the command reads it)",
    )

    webhook_commands.add_parser(sub, _add_connection)

    retag = sub.add_parser(
        "retag",
        help="re-tag comments tagged with another taxonomy than the stored one; resumable",
        description="Re-tag every comment whose topics were tagged with a taxonomy other than "
        "the stored one, one conditioned transaction per comment, so counters stay exact "
        "throughout. It waits until every process has taken the stored taxonomy, keeps its "
        "place in the table after every page (an interrupted run is finished by the next), "
        "and prints progress on stderr. Exit status: 0 done, 2 on an error (run it again).",
    )
    _add_connection(retag)
    retag.add_argument(
        "--page-items",
        type=int,
        default=RETAG_PAGE_ITEMS,
        help=f"items scanned per page, between checkpoints (default {RETAG_PAGE_ITEMS})",
    )
    retag.add_argument(
        "--settle-seconds",
        type=float,
        default=SETTLE_SECONDS,
        help="seconds after the taxonomy was saved before the scan starts, so that no write "
        f"tagged with the one before commits behind it (default {SETTLE_SECONDS:g})",
    )

    move = sub.add_parser(
        "move-group",
        help="put a product in a group (or none) and move its published comments there; "
        "resumable; exit 3 when it stopped before the end",
        description="Put a product in a group, or in no group without --group, and move its "
        "published comments' group entries and counters there, one transaction per comment. "
        "Both groups stay exact throughout, writes may go on meanwhile, and an interrupted "
        "move is finished by running the same command again. Exit status: 0 when the group "
        "holds all the product's published comments, 3 when the move stopped before that "
        "(run it again), 2 on any other error.",
    )
    _add_connection(move)
    move.add_argument("product_id")
    move.add_argument("--group", metavar="GROUP_ID", help="the group (default: no group)")

    remap = sub.add_parser(
        "remap-answers",
        help="move (or drop) the answers of retired attribute values; resumable",
        description="Move every stored answer of retired attribute values of a product (one "
        "outside any group) or a group to a value its definitions offer, or drop them, one "
        "transaction per comment, exact while writes go on; then take the values out of the "
        "retired ones. Each --move is KEY:VALUE=TO (TO empty drops). Exit status: 0 when "
        "done, 1 when the remap is refused (each problem printed with its path), 3 when "
        "answers kept appearing (run it again), 2 on any other error.",
    )
    _add_connection(remap)
    where = remap.add_mutually_exclusive_group(required=True)
    where.add_argument("--product", metavar="PRODUCT_ID")
    where.add_argument("--group", metavar="GROUP_ID")
    remap.add_argument("--move", action="append", required=True, metavar="KEY:VALUE=TO")

    catalogue = sub.add_parser(
        "apply-catalogue",
        help="put every product of a catalogue file in its group, moving comments "
        "(exit 1: some lines had problems)",
        description="Read a catalogue file (JSON Lines, docs/facets.md) and put each product "
        "in the group its line names (in none when it names none), moving its comments. "
        "Products the file does not name are left as they are. Problems are reported on "
        "stderr with their line numbers and the other lines still apply; running the same "
        "file again finishes what an interrupted run left. Exit status: 0 when every line "
        "applied, 1 when some had problems, 2 on any other error.",
    )
    _add_connection(catalogue)
    catalogue.add_argument("file", type=Path, help="the catalogue file (JSON Lines)")

    add_export_parser(sub, _add_connection)
    privacy_commands.add_parsers(sub, _add_connection)

    explain = sub.add_parser("explain", help="plan and read one page, printing the EXPLAIN")
    _add_connection(explain)
    explain.add_argument("product_id")
    explain.add_argument("--language")
    explain.add_argument("--ratings", help="comma-separated ratings, e.g. 1,2")
    explain.add_argument("--verified-only", action="store_true", help="verified purchases only")
    explain.add_argument(
        "--order",
        choices=[o.value for o in Order],
        default=Order.NEWEST.value,
        help="sort order (default NEWEST)",
    )
    explain.add_argument("--first", type=int)
    explain.add_argument("--after")
    explain.add_argument("--last", type=int)
    explain.add_argument("--before")
    return parser


async def _create(args: argparse.Namespace) -> int:
    settings = storage_settings(args)
    name = settings.dynamodb_table
    async with open_client(settings.client_settings()) as client:
        created = await create_table(client, name)
    print(f"table {name!r} {'created' if created else 'already exists'}; indexes active")
    return 0


def _print_report(report: Report) -> None:
    print(f"{report.comments} comments, {report.stats_items} stats items checked")
    for line in report.describe():
        print(f"  DRIFT {line}")
    print(f"leaderboard layout: {report.layout.describe()}")
    for product_id in report.moving:
        print(f"  group move unfinished: {product_id} (move-group {product_id} finishes it)")
    if report.exact:
        print("all counters and leaderboard entries are exact")


async def _migrate(args: argparse.Namespace) -> int:
    if args.leaderboard_shards is not None:
        validate_shards(args.leaderboard_shards)  # before anything is changed
    settings = storage_settings(args)

    def say(line: str) -> None:
        print(line, file=sys.stderr)

    async with open_client(settings.client_settings()) as client:
        table = TableRef(client, settings.dynamodb_table)
        done = await migrate(
            table,
            progress=say,
            wait_seconds=args.wait,
            expand_only=args.expand_only,
            fence=args.fence,
            legacy_processes_gone=args.legacy_processes_gone,
        )
        shards = args.leaderboard_shards
        moved = None
        if shards is not None and done.stopped is None:
            moved = await reshard_leaders(table, shards, progress=say)
    for line in done.describe():
        print(line)
    if moved is not None and moved.already_done:
        print(f"the leaderboard already has {moved.shards} shards")
    elif moved is not None:
        print(f"the leaderboard has {moved.shards} shards; moved {moved.moved} entries")
    if done.stopped is not None:
        print(f"NOT DONE: {done.stopped}")
        # Done as far as asked (--expand-only): 0; stopped for safety: 3, so that a
        # deployment pipeline cannot take a half-done migration for a finished one.
        return 0 if args.expand_only else MIGRATION_STOPPED
    print(f"the table is at layout {CODE_LAYOUT}")
    return 0


async def _verify(args: argparse.Namespace) -> int:
    progress = progress_count("scanned {} items")
    pace = None if args.max_read_units is None else ReadPace(args.max_read_units)
    settings = storage_settings(args)
    async with open_client(settings.client_settings()) as client:
        table = TableRef(client, settings.dynamodb_table)
        report = await verify(table, progress=progress, pace=pace)
        progress.end()
        if not report.exact and args.repair:
            report = await repair(table, report)
    if args.json:
        print(json.dumps(report.to_json(), indent=2))
    else:
        _print_report(report)
        if args.repair and not report.exact:
            print(
                f"repaired {report.repaired} items, skipped {report.skipped} that changed meanwhile"
            )
    if report.exact:
        return 0
    return 0 if args.repair and report.skipped == 0 else 1


def _taxonomy_load(args: argparse.Namespace) -> int:
    path: Path = args.file
    try:
        data = path.read_bytes()
    except OSError as exc:
        print(f"error: cannot read {path}: {exc.strerror or exc}", file=sys.stderr)
        return 2
    try:
        taxonomy = Taxonomy.from_json(data)
    except InvalidInput as exc:
        print(f"{path}: {exc}", file=sys.stderr)
        print("nothing was stored", file=sys.stderr)
        return REFUSED
    return asyncio.run(_store_taxonomy(args, taxonomy))


async def _store_taxonomy(args: argparse.Namespace, taxonomy: Taxonomy) -> int:
    fingerprint = Tagger.for_taxonomy(taxonomy).fingerprint
    settings = storage_settings(args)
    async with open_client(settings.client_settings()) as client:
        table = TableRef(client, settings.dynamodb_table)
        stored = await read_taxonomy(table, consistent=True)
        revision = stored.revision if args.revision is None else args.revision
        if stored.taxonomy == taxonomy and revision == stored.revision:
            print(f"the stored taxonomy (revision {stored.revision}) is this one already")
            return 0
        try:
            saved = await save_taxonomy(table, taxonomy, revision=revision)
        except SettingsChanged:
            print(
                f"refused: the stored taxonomy is at revision {stored.revision}, not {revision}"
                if revision != stored.revision
                else "refused: the taxonomy was changed meanwhile; read it and run again",
                file=sys.stderr,
            )
            return REFUSED
    print(
        f"stored {len(taxonomy.topics)} topics as revision {saved.revision} "
        f"(fingerprint {fingerprint[:16]})"
    )
    print("comments tagged with the one before follow once `comments retag` has run")
    return 0


async def _retag(args: argparse.Namespace) -> int:
    if args.page_items < 1 or args.settle_seconds < 0:
        print(
            "error: --page-items must be at least 1, --settle-seconds not negative", file=sys.stderr
        )
        return 2

    def say(line: str) -> None:
        print(line, file=sys.stderr, flush=True)

    settings = storage_settings(args)
    async with open_client(settings.client_settings()) as client:
        table = TableRef(client, settings.dynamodb_table)
        try:
            done = await retag_comments(
                table,
                progress=say,
                page_items=args.page_items,
                settle_seconds=args.settle_seconds,
            )
        except StorageError as exc:
            print(f"\nerror: {exc}", file=sys.stderr)
            print(
                "every comment re-tagged so far is exact: run the same command again to "
                "finish from the last checkpoint",
                file=sys.stderr,
            )
            return 2
    print(done.describe())
    return 0


async def _move_group(args: argparse.Namespace) -> int:
    settings = storage_settings(args)
    async with open_client(settings.client_settings()) as client:
        table = TableRef(client, settings.dynamodb_table)
        try:
            result = await move_product(
                table, args.product_id, args.group, progress=lambda line: note(line)
            )
        except GroupMoveUnfinished as exc:
            print(f"NOT DONE: {exc}")
            return MIGRATION_STOPPED
    print(result.describe())
    return 0


async def _remap_answers(args: argparse.Namespace) -> int:
    moves = []
    for text in args.move:
        key, colon, rest = text.partition(":")
        value, equals, to = rest.partition("=")
        if not (colon and equals):
            print(f"error: --move {text!r} is not KEY:VALUE=TO", file=sys.stderr)
            return 2
        moves.append({"key": key, "value": value, "to": to or None})
    scope = Scope.product(args.product) if args.product else Scope.group(args.group)
    settings = storage_settings(args)
    async with open_client(settings.client_settings()) as client:
        table = TableRef(client, settings.dynamodb_table)
        try:
            done = await remap_answers(table, scope, moves, progress=lambda line: note(line))
        except InvalidFields as exc:
            for problem in exc.problems:
                print(f"{problem.dotted}: {problem.message} ({problem.code})")
            return 1
        except SettingsChanged as exc:
            print(f"NOT DONE: {exc}; run it again")
            return MIGRATION_STOPPED
        except StorageUnavailable as exc:
            print(f"NOT DONE: {exc}")
            return MIGRATION_STOPPED
    print(done.describe())
    return 0


async def _apply_catalogue(args: argparse.Namespace) -> int:
    def problem(found: CatalogueProblem) -> None:
        note(found.describe())

    path: Path = args.file
    settings = storage_settings(args)
    try:
        stream = path.open(encoding="utf-8", newline="")
    except OSError as exc:
        print(f"error: cannot read {path}: {exc.strerror or exc}", file=sys.stderr)
        return 2
    with stream:
        chunks = iter(lambda: stream.read(1 << 16), "")
        async with open_client(settings.client_settings()) as client:
            table = TableRef(client, settings.dynamodb_table)
            outcome = await apply_catalogue(
                table, split_lines(chunks), progress=lambda line: note(line), on_problem=problem
            )
    print(outcome.describe())
    if outcome.problems:
        print(f"{len(outcome.problems)} lines had problems (listed on stderr with their numbers)")
        return 1
    return 0


async def _export_feed(args: argparse.Namespace) -> int:
    settings = storage_settings(args)
    return await export_main(args, settings.client_settings(), settings.dynamodb_table)


async def _explain(args: argparse.Namespace) -> int:
    ratings = None if not args.ratings else frozenset(int(r) for r in args.ratings.split(","))
    listing = ListingFilter(args.product_id, args.language, ratings, args.verified_only)
    order = Order(args.order)
    ordering = Ordering.of(order)
    page = page_request(args.first, args.after, args.last, args.before, ordering=ordering)
    settings = storage_settings(args)
    async with open_client(settings.client_settings()) as client:
        table = TableRef(client, settings.dynamodb_table)
        result = await list_comments(table, listing, page, order=order)
    print(result.plan.explain())
    for q in result.executed:
        print(
            f"  round {q.round}: {q.partition_key} limit {q.limit} read {q.items_read}"
            f" ({q.capacity_units} RCU)"
        )
    print(f"  {len(result.comments)} returned, {result.items_read} read, more: {result.has_more}")
    for c in result.comments:
        print(
            f"{c.created_at} {c.rating}* {c.language} {c.helpful} helpful {c.comment_id} "
            f"{c.title or ''}"
        )
    if result.positions:
        print(f"endCursor: {encode_cursor(result.positions[-1], ordering)}")
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


def _count_lines(path: Path) -> int:
    """Lines in the file (a last one without a line break included), read in chunks."""
    lines, last = 0, b"\n"
    with path.open("rb") as stream:
        while chunk := stream.read(1 << 20):
            lines += chunk.count(b"\n")
            last = chunk[-1:]
    return lines + (last != b"\n")


async def _import(args: argparse.Namespace) -> int:
    def report(bad: InvalidLine) -> None:
        note(bad.describe())

    path: Path = args.file
    try:
        total = _count_lines(path)
    except OSError as exc:
        print(f"error: cannot read {path}: {exc.strerror or exc}", file=sys.stderr)
        return 2
    if args.concurrency < 1:
        print("error: --concurrency must be at least 1", file=sys.stderr)
        return 2
    settings = storage_settings(args)
    started = time.perf_counter()
    with path.open("rb") as stream:
        async with open_client(settings.client_settings()) as client:
            table = TableRef(client, settings.dynamodb_table)
            try:
                summary = await import_comments(
                    table,
                    jsonl_lines(stream),
                    concurrency=args.concurrency,
                    progress=progress_bar(total, "importing"),
                    on_invalid=report,
                )
            except StorageError as exc:
                print(f"\nerror: {exc}", file=sys.stderr)
                print(
                    "every batch is written whole or not at all: run the same command again "
                    "to import the rest",
                    file=sys.stderr,
                )
                return 2
    elapsed = time.perf_counter() - started
    print(
        f"imported {summary.imported}, already imported {summary.already_imported}, "
        f"invalid {summary.invalid}, conflicts {summary.conflicts} ({summary.lines} lines) "
        f"in {elapsed:.1f} s, {summary.lines / max(elapsed, 1e-9):.0f} lines/s"
    )
    if summary.placed:
        placed = len(summary.placed)
        print(f"placed the imported comments of {placed} grouped products in their groups")
    if summary.skipped:
        print(f"{summary.skipped} lines were skipped (listed on stderr with their numbers)")
        return 1
    return 0


async def _seed(args: argparse.Namespace) -> int:
    comments = list(demo_comments(args.products, args.seed))
    reviews = facet_reviews(args.seed)
    progress = progress_bar(len(comments) + len(reviews), "writing comments")
    settings = storage_settings(args)
    async with open_client(settings.client_settings()) as client:
        await create_table(client, settings.dynamodb_table)
        table = TableRef(client, settings.dynamodb_table)
        try:
            written = await seed_demo(table, comments, reviews, progress=progress)
        except InvalidInput as exc:
            print(f"\nerror: {exc}", file=sys.stderr)
            return 2
    products = {c.product_id for c in comments} | {r.new.product_id for r in reviews}
    print(f"seeded {written} comments on {len(products)} products")
    return 0


def _signing_secret(settings: TokenSettings) -> str | None:
    """JWT_SECRET, or in development the secret `serve` keeps in DATA_DIR; None (said on
    stderr) when there is neither."""
    if settings.jwt_secret:
        return settings.jwt_secret
    kept = dev_secret_path(DevelopmentSettings().data_dir)
    try:
        return secret_from_file(kept, create=False)
    except ValueError:
        print(
            "error: set JWT_SECRET (or JWT_SECRET_FILE) to the server's secret; in development, "
            f"start `comments serve` once (it keeps its secret in {kept})",
            file=sys.stderr,
        )
        return None


def _author_id_key(args: argparse.Namespace) -> int:
    settings = TokenSettings()
    if settings.author_id_key is not None:
        key = configured_key(settings.author_id_key)
    elif (secret := _signing_secret(settings)) is not None:
        key = author_key(secret)
    else:
        return 2
    print(printed_key(key))
    return 0


def _token(args: argparse.Namespace) -> int:
    settings = token_settings(args)
    secret = _signing_secret(settings)
    if secret is None:
        return 2
    ttl = int(args.hours * 3600)
    cap = settings.jwt_max_lifetime
    if cap and ttl > cap:
        print(f"error: the server accepts tokens of at most {cap / 3600:g} h", file=sys.stderr)
        return 2
    roles = ["moderator"] if args.moderator else []
    roles += ["merchant"] if args.merchant else []
    purchases = [p for p in (args.purchases or "").split(",") if p]
    token = mint(
        secret,
        args.sub,
        name=args.name,
        roles=roles,
        purchases=purchases,
        ttl_seconds=ttl,
        issuer=settings.jwt_issuer,
        audience=settings.jwt_audience,
    )
    print(token)
    return 0


def _export(args: argparse.Namespace) -> int:
    sdl = build_schema().as_str() + "\n"
    if args.output is None:
        sys.stdout.write(sdl)
    else:
        args.output.write_text(sdl)
        print(f"wrote {args.output}", file=sys.stderr)
    return 0


# Seconds between the server's pings on a WebSocket (uvicorn's default, said here).
WS_PING_SECONDS = 20.0


def head_limits(settings: Settings) -> HeadLimits:
    """The limits on a request head that the HTTP protocol enforces (server.http.head_limits)."""
    return HeadLimits(
        max_bytes=settings.max_header_bytes,
        max_headers=settings.max_headers,
        timeout=settings.header_timeout,
    )


def uvicorn_options(settings: Settings) -> dict[str, Any]:
    """uvicorn.run's options for these settings: the HTTP protocol with the head limits
    (server.http.head_limits), h11's own cap as a backstop, the connection limits, no Server
    header."""
    return {
        "http": guarded_protocol(settings.uvicorn_http, head_limits(settings)),
        **_shared_options(settings),
    }


def _shared_options(settings: Settings) -> dict[str, Any]:
    """uvicorn's options but the protocol, which worker processes make themselves."""
    log_config = uvicorn_log_config(settings.log_format)
    return {
        "host": settings.host,
        "port": settings.port,
        "loop": settings.uvicorn_loop,
        "h11_max_incomplete_event_size": settings.max_header_bytes,
        "timeout_keep_alive": settings.keep_alive_timeout,
        # uvicorn's default waits for requests in progress without a bound, until the
        # platform kills the process mid-answer; bounded, the drain ends on our terms.
        "timeout_graceful_shutdown": settings.shutdown_timeout_seconds,
        # uvicorn counts WebSockets among its connections: they get places of their own
        # (the app refuses sockets past MAX_WEBSOCKETS), so HTTP keeps MAX_CONNECTIONS.
        "limit_concurrency": settings.max_connections + settings.max_websockets,
        "server_header": False,
        # As JSON, the request line (server.observability.middleware) is the access log.
        "access_log": settings.access_log and settings.log_format == "text",
        **({} if log_config is None else {"log_config": log_config}),
        # A WebSocket message may be as large as a request body, not uvicorn's 16 MiB.
        "ws_max_size": settings.max_body_bytes,
        # uvicorn's own: a dead connection is found within two intervals, and a proxy in
        # front (deploy/nginx.conf) sees traffic on an idle socket within one.
        "ws_ping_interval": WS_PING_SECONDS,
        "ws_ping_timeout": WS_PING_SECONDS,
        # The client's address in scope["client"] (and the access log) by the rule the app
        # applies itself (server.http.forwarded), from the same setting.
        "proxy_headers": True,
        "forwarded_allow_ips": settings.trusted_proxies.uvicorn(),
    }


def _serve(args: argparse.Namespace) -> int:
    import uvicorn
    from uvicorn.config import STARTUP_FAILURE

    from server import workers

    settings = Settings(**_given(args, _SERVE_OPTIONS))
    if "cors_origins" not in settings.model_fields_set and not settings.production:
        # Development: the usual frontend dev servers may call it (as under docker compose).
        settings = settings.model_copy(update={"cors_origins": list(DEV_CORS_ORIGINS)})
    configure_logging(settings.log_format)
    if settings.workers > 1:
        options = {"log_level": "info", **_shared_options(settings)}
        return workers.serve(settings, options, head_limits(settings))
    # uvicorn.run's one-process path, on the server that drains before it stops accepting.
    drain = Drain()
    app = create_app(settings, drain=drain)
    config = uvicorn.Config(app, log_level="info", **uvicorn_options(settings))
    server = Server(config, Leaving(drain, settings.shutdown_delay_seconds))
    with suppress(KeyboardInterrupt):
        server.run()
    return 0 if server.started else STARTUP_FAILURE


def _problems(error: ValidationError) -> list[str]:
    """What is wrong with the configuration, one line per problem, named as the environment
    variable; never the value given, which may be a secret."""
    problems = []
    for found in error.errors(include_url=False, include_input=False):
        message = found["msg"].removeprefix("Value error, ")
        name = ".".join(str(part) for part in found["loc"]).upper()
        problems.append(message if not name or message.startswith(name) else f"{name}: {message}")
    return problems


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        if args.command == "engine":
            return _engine(args)
        sync = {
            "token": _token,
            "author-id-key": _author_id_key,
            "export-schema": _export,
            "serve": _serve,
        }
        if args.command in sync:
            return sync[args.command](args)
        handler = {
            "create-table": _create,
            "migrate-table": _migrate,
            "verify-stats": _verify,
            "explain": _explain,
            "seed": _seed,
            "import": _import,
            "move-group": _move_group,
            "remap-answers": _remap_answers,
            "apply-catalogue": _apply_catalogue,
            "retag": _retag,
            "export": _export_feed,
        }
        if args.command == "taxonomy":
            return _taxonomy_load(args)
        if args.command == "export-author":
            return asyncio.run(privacy_commands.export_author(args, storage_settings(args)))
        if args.command == "erase-author":
            return asyncio.run(privacy_commands.erase_author(args, storage_settings(args)))
        if args.command == "webhooks":
            return asyncio.run(webhook_commands.run(args, storage_settings(args)))
        return asyncio.run(handler[args.command](args))
    except ValidationError as exc:
        for problem in _problems(exc):
            print(f"error: {problem}", file=sys.stderr)
        return 2
    except (EngineError, StorageError, ApiError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
