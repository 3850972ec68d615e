"""The privacy requests' commands: ``comments export-author`` and ``comments erase-author``.

They do what ``exportAuthor`` and ``eraseAuthor`` do, without the API's time bounds, with
progress on stderr: for large tables, and for erasures the API left RUNNING
(``--resume`` finishes every one of them). Kept apart from ``server.cli``, which adds them.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from server.dev.progress import note
from server.settings import StorageSettings
from server.settings.writes import WriteSettings
from storage.base.clock import utc_now
from storage.engine.client import open_client
from storage.engine.table import TableRef
from storage.model import keys
from storage.model.erasure import Job, Mode
from storage.ops.erasure import run_erasure, running_jobs, start_erasure
from storage.reads.author_data import export_document, find_author_data

# Exit status of an erasure left RUNNING (the author kept writing): run it again.
NOT_DONE = 3

AddConnection = Callable[[argparse.ArgumentParser], None]
Settings = Callable[[argparse.Namespace], StorageSettings]


def add_parsers(sub: Any, add_connection: AddConnection) -> None:
    """Add the two commands to the ``comments`` parser's subcommands."""
    export = sub.add_parser(
        "export-author",
        help="print everything an author made as JSON (a privacy request)",
        description="Print everything the author with this token subject made (comments in "
        "every status, votes, reports) as the JSON document exportAuthor answers. It scans "
        "the whole table once (docs/privacy.md).",
    )
    add_connection(export)
    export.add_argument("subject", help="the author's token subject (sub)")
    export.add_argument("--output", type=Path, help="write it to this file (default: stdout)")

    erase = sub.add_parser(
        "erase-author",
        help="erase an author's data (a privacy request); resumable; exit 3 when not done",
        description="Start (or go on with) the erasure of the author with this token "
        "subject: their comments deleted or anonymized (--mode, default $ERASURE_MODE), "
        "their votes and reports withdrawn, their limit and idempotency items removed; every "
        "count stays exact. With --resume instead of a subject, finish every erasure left "
        "RUNNING. Exit status: 0 when done, 3 when an erasure is still RUNNING (the author "
        "kept writing: run it again), 2 on any other error.",
    )
    add_connection(erase)
    erase.add_argument("subject", nargs="?", help="the author's token subject (sub)")
    erase.add_argument("--mode", choices=[m.value for m in Mode], help="DELETE or ANONYMIZE")
    erase.add_argument("--resume", action="store_true", help="finish every erasure left RUNNING")


async def export_author(args: argparse.Namespace, settings: StorageSettings) -> int:
    async with open_client(settings.client_settings()) as client:
        table = TableRef(client, settings.dynamodb_table)
        found = await find_author_data(
            table, args.subject, progress=lambda n: note(f"scanned {n} items")
        )
    document = export_document(args.subject, found, keys.format_timestamp(utc_now()))
    text = json.dumps(document, ensure_ascii=False, indent=2) + "\n"
    if args.output is None:
        sys.stdout.write(text)
    else:
        args.output.write_text(text, encoding="utf-8")
        note(f"wrote {args.output}")
    return 0


def _describe(job: Job) -> str:
    counts = ", ".join(f"{n} {kind}" for kind, n in job.counts.items())
    return f"erasure {job.request_id} ({job.mode.value}): {job.state.value}; {counts}"


async def erase_author(args: argparse.Namespace, settings: StorageSettings) -> int:
    if (args.subject is None) == (not args.resume):
        raise ValueError("name a subject, or --resume (not both)")
    mode = Mode(args.mode) if args.mode else WriteSettings().default_erasure_mode
    async with open_client(settings.client_settings()) as client:
        table = TableRef(client, settings.dynamodb_table)
        if args.resume:
            jobs = await running_jobs(table)
            note(f"{len(jobs)} erasures RUNNING")
        else:
            jobs = [await start_erasure(table, args.subject, mode)]
        status = 0
        for job in jobs:
            note(f"erasure {job.request_id} ({job.mode.value})")
            done = await run_erasure(table, job.request_id, progress=note)
            print(_describe(done))
            if not done.done:
                status = NOT_DONE
    return status
