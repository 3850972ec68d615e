"""``comments webhooks list-failed`` and ``comments webhooks replay``: the deliveries given
up on after the retry horizon, listed, and sent again (the same webhook-id, signed with
the endpoint's secrets in use now), in each product's order; a replayed one that succeeds
is forgotten."""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from datetime import UTC, datetime

from server.settings import HttpSettings, StorageSettings, WebhookSettings
from server.webhooks.delivery import Deliverer
from server.webhooks.transport import Policy, Sender
from storage.engine.client import open_client
from storage.engine.table import TableRef
from storage.reads.webhooks import failed_deliveries, get_endpoint, get_event
from storage.writes.webhook_lanes import forget_failed

# Exit status when some replayed deliveries failed again.
FAILED_AGAIN = 1


def add_parser(
    sub: argparse._SubParsersAction,  # type: ignore[type-arg]
    add_connection: Callable[[argparse.ArgumentParser], None],
) -> None:
    hooks = sub.add_parser("webhooks", help="webhook deliveries that failed: list, replay")
    hooks_sub = hooks.add_subparsers(dest="webhooks_command", required=True)
    listing = hooks_sub.add_parser(
        "list-failed",
        help="the deliveries given up on after the retry horizon, per endpoint",
        description="Print, one per line, the deliveries of an endpoint kept as failed: the "
        "product (or * for shop-wide events), the sequence number, when it was given up and "
        "why. Exit status: 0, or 2 on an error.",
    )
    replay = hooks_sub.add_parser(
        "replay",
        help="send the failed deliveries of an endpoint again",
        description="Send again, in each product's order, the deliveries of an endpoint kept "
        "as failed (failed at or after --since), with their webhook-id, signed with the "
        "endpoint's secrets in use now; one that succeeds is forgotten. The address rules of "
        "delivery apply. Exit status: 0 every one was delivered, 1 some failed again, 2 an "
        "error.",
    )
    for parser in (listing, replay):
        add_connection(parser)
        parser.add_argument("--endpoint", required=True, metavar="ID", help="the endpoint (ep_...)")
        parser.add_argument(
            "--since",
            metavar="WHEN",
            help="only deliveries given up at or after WHEN (ISO-8601, e.g. 2026-11-28T10:00Z)",
        )


def _since(raw: str | None) -> float:
    if raw is None:
        return 0.0
    when = datetime.fromisoformat(raw.replace("Z", "+00:00"))
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return when.timestamp()


async def run(args: argparse.Namespace, settings: StorageSettings) -> int:
    since = _since(args.since)
    async with open_client(settings.client_settings()) as client:
        table = TableRef(client, settings.dynamodb_table)
        failed = await failed_deliveries(table, args.endpoint, since=since)
        if args.webhooks_command == "list-failed":
            for f in failed:
                at = datetime.fromtimestamp(f.failed_at, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
                print(f"{f.scope}\t{f.sequence}\t{at}\t{f.reason}")
            print(f"{len(failed)} failed deliveries", file=sys.stderr)
            return 0
        return await _replay(table, args.endpoint, failed)


async def _replay(table: TableRef, endpoint_id: str, failed: list) -> int:  # type: ignore[type-arg]
    endpoint = await get_endpoint(table, endpoint_id)
    if endpoint is None:
        print("error: no endpoint has this id", file=sys.stderr)
        return 2
    hooks = WebhookSettings()
    loopback = hooks.webhook_allow_loopback
    allowed = not HttpSettings().production if loopback is None else loopback
    sender = Sender(
        Policy(allow_loopback=allowed, allow_http=allowed),
        connect_seconds=hooks.webhook_connect_seconds,
        read_seconds=hooks.webhook_read_seconds,
    )
    deliverer = Deliverer(table, f"replay:{time.time()}", sender)
    delivered = again = 0
    try:
        for f in sorted(failed, key=lambda f: (f.scope, f.sequence)):
            event = await get_event(table, f.scope, f.sequence)
            if event is None:  # past the log's keeping: nothing to send
                print(f"{f.scope} {f.sequence}: no longer kept, skipped", file=sys.stderr)
                continue
            outcome = await deliverer.send(endpoint, event, None)
            if outcome is None:
                await forget_failed(table, endpoint_id, f.scope, f.sequence)
                delivered += 1
            else:
                print(f"{f.scope} {f.sequence}: {outcome}", file=sys.stderr)
                again += 1
    finally:
        await sender.aclose()
    print(f"replayed {delivered}, failed again {again}")
    return FAILED_AGAIN if again else 0
