"""Moving a product between groups at 10,000 comments: wall time, passes, storage calls and
write units, with both groups exact at the end, and a move interrupted and resumed.

    .venv/bin/python -m benchmarks.writes.group_move [--comments 10000] [--repeats 1] [--quick]

Starts DynamoDB Local in memory and loads one product whose published comments carry facet
values at the facet reads' rates (``benchmarks.reads.facet_data``), placed in group A: the
comments store A, their entries and counters are A's as well as the product's
(``testing.facet_items``) and A holds them all (``HELD#A``); the membership is set to A
first and its move certified (nothing to move) before any figure is taken. Then:

- timed moves (``--repeats``, alternately to B and back to A), each ``move_product`` run
  while three writers create, edit and delete comments of the product (one call each
  every 50 ms): wall time, seconds per page of 100 comments (the median over a move's
  pages is the figure least moved by a noisy machine), comments moved, passes, storage
  calls by operation, and the write units DynamoDB Local reports
  (``storage.engine.metering``);
- the same moves priced by AWS's rules (``benchmarks.scale.capacity.CapacityProbe``, as
  ``benchmarks.writes.facet_costs`` prices): the probe reads every item a write touches
  before and after it, which is too slow for every transaction of 10,000, so it prices
  every ``SAMPLE``-th transaction, and the total is the sample's mean times the
  transactions made. The baseline, in the same run: a create of the same comments (their
  text and values) on a product in a group, and one comment's move alone;
- an interrupted move: cancelled in the middle of a page once about half the comments are
  moved, its transactions in flight cut off, the counts checked there, then run again:
  what the resumed run read and moved.

After every move the end state is checked exactly: what each group holds of the product
(held counts and the groups' own counters) equals a brute-force count of the comments,
and ``verify`` is exact. The machine is shared and noisy: wall times are medians, and only
the counts are exact. Writes ``benchmarks/results/group-move-<stamp>.json`` and (not with
``--quick``) ``docs/benchmarks/group-move.md`` (``benchmarks.writes.group_move_report``).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import platform
import random
import statistics
import sys
import time
from collections import Counter
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from benchmarks.reads import facet_data
from benchmarks.report import save_result
from benchmarks.scale.capacity import Account, CapacityProbe
from benchmarks.writes.costs import Authors
from benchmarks.writes.group_move_report import write_page
from server.dev.local_engine import LocalEngine
from storage.base.errors import StorageError
from storage.base.types import DynamoClient, Response
from storage.engine.client import ClientSettings, open_client
from storage.engine.metering import Meter, MeteredClient
from storage.engine.table import TableRef
from storage.engine.wrapping import ClientWrapper
from storage.model.comments import Comment, NewComment
from storage.model.groups import COUNT_ATTR, held_key
from storage.model.items import is_comment_item, item_to_comment
from storage.ops.create import create_table
from storage.ops.group_move import PAGE, finish_move, held_counts, move_comment, move_product
from storage.ops.verify import scan_pages, verify
from storage.writes import create_comment
from storage.writes.delete import delete_comment
from storage.writes.edit import Edit, edit_comment
from storage.writes.membership import MembershipMemory, change_membership

TABLE = "group_move"
PRODUCT = "move-product"
GROUPS = ("move-group-a", "move-group-b")
# The baseline's creates: a product of its own in a group of its own.
BASELINE_PRODUCT = "move-baseline-product"
BASELINE_GROUP = "move-baseline-group"
BASELINE_COMMENTS = 30
WRITERS = 3
WRITER_PAUSE = 0.05
# The probe prices every SAMPLE-th transaction of a move.
SAMPLE = 50
QUICK_COMMENTS = 200


class SampledProbe(ClientWrapper):
    """Every ``every``-th TransactWriteItems through a ``CapacityProbe``, the rest as is."""

    def __init__(self, inner: DynamoClient, every: int) -> None:
        super().__init__(inner)
        self.probe = CapacityProbe(inner)
        self.every = every
        self.transactions = 0
        self.priced = 0

    async def _call(self, operation: str, kwargs: dict[str, Any]) -> Response:
        if operation != "transact_write_items":
            return await super()._call(operation, kwargs)
        self.transactions += 1
        if self.transactions % self.every:
            return await super()._call(operation, kwargs)
        self.priced += 1
        return await self.probe.transact_write_items(**kwargs)


class Cutter(ClientWrapper):
    """Sets ``reached`` when the ``at``-th TransactWriteItems starts."""

    def __init__(self, inner: DynamoClient, at: int) -> None:
        super().__init__(inner)
        self.at = at
        self.started = 0
        self.reached = asyncio.Event()

    async def _call(self, operation: str, kwargs: dict[str, Any]) -> Response:
        if operation == "transact_write_items":
            self.started += 1
            if self.started >= self.at:
                self.reached.set()
        return await super()._call(operation, kwargs)


@dataclass(slots=True)
class Writers:
    """A few writers creating, editing and deleting comments of the product, lightly."""

    table: TableRef
    existing: list[Comment]
    rng: random.Random
    authors: Authors = field(default_factory=Authors)
    done: Counter[str] = field(default_factory=Counter)

    async def run(self, stop: asyncio.Event) -> None:
        await asyncio.gather(*(self._one(stop) for _ in range(WRITERS)))

    async def _one(self, stop: asyncio.Event) -> None:
        while not stop.is_set():
            action = self.rng.choice(("create", "create", "edit", "delete"))
            try:
                await self._do(action)
                self.done[action] += 1
            except StorageError:
                self.done[f"{action} refused"] += 1
            await asyncio.sleep(WRITER_PAUSE)

    async def _do(self, action: str) -> None:
        if action == "create" or not self.existing:
            c = self.rng.choice(self.existing) if self.existing else None
            values = c.facets if c is not None else frozenset()
            new = NewComment(
                PRODUCT,
                "en",
                self.rng.randint(1, 5),
                "Written during a move.",
                self.authors(),
                facets=values,
            )
            self.existing.append((await create_comment(self.table, new)).comment)
            return
        c = self.existing.pop(self.rng.randrange(len(self.existing)))
        if action == "delete":
            await delete_comment(self.table, c.comment_id, author_id=c.author_id)
            return
        change = Edit(rating=c.rating % 5 + 1)
        edited = await edit_comment(self.table, c.comment_id, change, author_id=c.author_id)
        self.existing.append(edited)


async def exact_state(table: TableRef) -> dict[str, Any]:
    """The product's published comments per stored group, by brute force over a scan,
    against what each group holds of it and the group's own counters; and ``verify``."""
    brute: Counter[str] = Counter()
    counted: dict[str, int] = {}
    async for page in scan_pages(table):
        for item in page.get("Items", []):
            pk, sk = item["PK"]["S"], item["SK"]["S"]
            if is_comment_item(item):
                c = item_to_comment(item)
                if c.product_id == PRODUCT and c.published:
                    brute[c.group_id or "none"] += 1
            elif pk.startswith("GROUP#") and sk == "F#*":
                ratings = [int(v["N"]) for k, v in item.items() if k.startswith("c#*#")]
                counted[pk.removeprefix("GROUP#")] = sum(ratings)
    held = await held_counts(table, PRODUCT)
    report = await verify(table)
    groups = {
        g: {"brute_force": brute.get(g, 0), "held": held.get(g, 0), "counters": counted.get(g, 0)}
        for g in GROUPS
    }
    exact = (
        report.exact
        and brute.get("none", 0) == 0
        and all(f["brute_force"] == f["held"] == f["counters"] for f in groups.values())
    )
    return {"groups": groups, "verify_exact": report.exact, "exact": exact}


async def prepare(table: TableRef, n: int, seed: int) -> list[Comment]:
    """The product in group A with ``n`` published comments placed there, certified."""
    await create_table(table.client, table.name, stream=False)
    await change_membership(table, PRODUCT, GROUPS[0])
    data = facet_data.comments([(PRODUCT, n)], seed)
    data = [replace(c, group_id=GROUPS[0] if c.published else None) for c in data]
    await facet_data.load(table, data, quiet=True, verify_all=False)
    held = sum(c.published for c in data)
    item = {**held_key(PRODUCT, GROUPS[0]), COUNT_ATTR: {"N": str(held)}}
    await table.client.put_item(TableName=table.name, Item=item)
    done = await finish_move(table, PRODUCT)
    if done.moved or done.total != held:
        raise AssertionError(f"the load is not placed in group A: {done.describe()}")
    return data


async def move(
    table: TableRef, target: str, data: list[Comment], seed: int, probe: SampledProbe | None
) -> dict[str, Any]:
    """One move to ``target`` while the writers write; its figures (priced when probed)."""
    meter = Meter()
    inner: DynamoClient = table.client if probe is None else probe
    metered = TableRef(MeteredClient(inner, meter), table.name)
    writers = Writers(table, list(data[:2_000]), random.Random(seed))
    stop = asyncio.Event()
    writing = asyncio.create_task(writers.run(stop))
    pages: list[float] = []
    started = last = time.perf_counter()

    def page(line: str) -> None:
        nonlocal last
        if "pass 1:" in line:  # a page of the index read and its comments moved
            now = time.perf_counter()
            pages.append(round(now - last, 3))
            last = now

    result = await move_product(metered, PRODUCT, target, progress=page)
    seconds = time.perf_counter() - started
    stop.set()
    await writing
    return {
        "to": target,
        "seconds": round(seconds, 2),
        "moved": result.moved,
        "passes": result.passes,
        "total": result.total,
        "comments_per_second": round(result.moved / seconds, 1),
        "page_seconds": pages,
        "calls": dict(sorted(meter.calls.items())),
        "items_read": meter.items_read,
        "engine_wcu": round(meter.write_capacity, 1),
        "engine_wcu_per_comment": round(meter.write_capacity / max(1, result.moved), 2),
        "writers": dict(sorted(writers.done.items())),
    }


def priced(probe: SampledProbe, moved: int) -> dict[str, Any]:
    """The move's write units by AWS's rules, from the probe's sample of its transactions."""
    a = probe.probe.account
    per = (a.aws_write_table + a.aws_write_indexes) / max(1, probe.priced)
    total = per * probe.transactions
    return {
        "transactions": probe.transactions,
        "priced": probe.priced,
        "wcu_per_transaction": round(per, 2),
        "wcu_table_per_transaction": round(a.aws_write_table / max(1, probe.priced), 2),
        "wcu_indexes_per_transaction": round(a.aws_write_indexes / max(1, probe.priced), 2),
        "wcu_total": round(total),
        "wcu_per_comment": round(total / max(1, moved), 2),
    }


async def baseline(table: TableRef, data: list[Comment], seed: int, n: int) -> dict[str, Any]:
    """AWS's units of a create of the same comments on a product in a group, and of one
    comment's move alone, priced as ``benchmarks.writes.facet_costs`` prices them."""
    await change_membership(table, BASELINE_PRODUCT, BASELINE_GROUP)
    memory = table.memory(MembershipMemory)
    rng = random.Random(seed)
    authors = Authors()
    creates: list[float] = []
    made: list[Comment] = []
    for c in rng.sample([c for c in data if c.published], n):
        new = NewComment(
            BASELINE_PRODUCT,
            c.language,
            c.rating,
            c.body,
            authors(),
            title=c.title,
            verified=c.verified,
            facets=c.facets,
            incentivized=c.incentivized,
        )
        probe = CapacityProbe(table.client)
        made.append((await create_comment(TableRef(probe, table.name).keep(memory), new)).comment)
        creates.append(_units(probe.account))
    _, into = await change_membership(table, BASELINE_PRODUCT, BASELINE_GROUP + "-2")
    moves: list[float] = []
    for c in made:
        probe = CapacityProbe(table.client)
        await move_comment(TableRef(probe, table.name), c.comment_id, into)
        moves.append(_units(probe.account))
    await finish_move(table, BASELINE_PRODUCT)
    return {
        "comments": n,
        "create_wcu": statistics.median(creates),
        "one_move_wcu": statistics.median(moves),
    }


def _units(a: Account) -> float:
    return float(a.aws_write_table + a.aws_write_indexes)


async def interrupted(table: TableRef, target: str, total: int) -> dict[str, Any]:
    """A move cancelled in the middle of a page once about half the comments are moved,
    its transactions in flight cut off, checked there, then run again (no writers: what
    the resumed run moved is then exactly what was left)."""
    # A third into a page past the middle, but well within the comments there are to move
    # (a small run has less than a page): the membership change and the moves in flight
    # (up to the move's concurrency) start after the cut point too, and a cut point near
    # the end was reached by the move's last transaction or not at all.
    cut = Cutter(table.client, max(1, total // 2 + min(PAGE // 3, total // 4)))
    first = asyncio.create_task(move_product(TableRef(cut, table.name), PRODUCT, target))
    reached = asyncio.create_task(cut.reached.wait())
    # Whichever comes first: a move that ends before its cut point is not waited on forever.
    await asyncio.wait({first, reached}, return_when=asyncio.FIRST_COMPLETED)
    reached.cancel()
    first.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await first
    await asyncio.sleep(1.0)  # a transaction the engine had already taken commits meanwhile
    at_cancel = await held_counts(table, PRODUCT)
    state = await exact_state(table)
    meter = Meter()
    started = time.perf_counter()
    resumed = await move_product(
        TableRef(MeteredClient(table.client, meter), table.name), PRODUCT, target
    )
    seconds = time.perf_counter() - started
    left = sum(n for g, n in at_cancel.items() if g != target)
    return {
        "to": target,
        "held_at_cancel": dict(sorted(at_cancel.items())),
        "exact_at_cancel": state["exact"],
        "resumed": {
            "seconds": round(seconds, 2),
            "changed_membership": resumed.changed,
            "moved": resumed.moved,
            "passes": resumed.passes,
            "items_read": meter.items_read,
            "calls": dict(sorted(meter.calls.items())),
            "engine_wcu": round(meter.write_capacity, 1),
        },
        "cut_at": cut.at,
        "cut_reached": cut.reached.is_set(),
        "left_at_cancel": left,
        "redone": resumed.moved - left,  # comments moved twice: none, if exact
    }


async def run(
    client: DynamoClient,
    comments: int,
    repeats: int,
    seed: int,
    *,
    table_name: str = TABLE,
    baseline_comments: int = BASELINE_COMMENTS,
) -> dict[str, Any]:
    """Every measurement, on a new table ``table_name``; the figures, as the results file
    holds them."""
    table = TableRef(client, table_name)
    started = time.perf_counter()
    data = await prepare(table, comments, seed)
    loaded = time.perf_counter() - started
    say(f"loaded {comments} comments in group A in {loaded:.0f} s")
    start = await exact_state(table)
    timed = []
    for n in range(repeats):
        target = GROUPS[(n + 1) % 2]
        probe = SampledProbe(table.client, SAMPLE)
        one = await move(table, target, data, seed + n, probe)
        one["aws"] = priced(probe, one["moved"])
        one["end"] = await exact_state(table)
        say(
            f"move to {target}: {one['seconds']} s, {one['moved']} moved, "
            f"{one['aws']['wcu_per_comment']} WCU a comment"
        )
        timed.append(one)
    base = await baseline(table, data, seed, baseline_comments)
    per_comment = statistics.median(r["aws"]["wcu_per_comment"] for r in timed)
    total = sum(f["held"] for f in timed[-1]["end"]["groups"].values())
    cut = await interrupted(table, GROUPS[(repeats + 1) % 2], total)
    cut["end"] = await exact_state(table)
    say(f"interrupted move: {cut['resumed']['moved']} moved when resumed")
    return {
        "comments": comments,
        "load_seconds": round(loaded, 1),
        "start": start,
        "timed": timed,
        "median_seconds": statistics.median(r["seconds"] for r in timed),
        "median_comments_per_second": statistics.median(r["comments_per_second"] for r in timed),
        "median_page_seconds": statistics.median(p for r in timed for p in r["page_seconds"]),
        "median_wcu_per_comment": per_comment,
        "baseline": base,
        "wcu_per_comment_vs_create": round(per_comment / base["create_wcu"], 2),
        "wcu_per_comment_vs_one_move": round(per_comment / base["one_move_wcu"], 2),
        "interrupted": cut,
        "exact": all(r["end"]["exact"] for r in [*timed, cut])
        and start["exact"]
        and cut["exact_at_cancel"],
    }


async def measure(engine: LocalEngine, comments: int, repeats: int, seed: int) -> dict[str, Any]:
    # A scan page of a large table takes DynamoDB Local longer than the app's 5 s.
    settings = ClientSettings(endpoint_url=engine.endpoint_url, read_timeout=120.0)
    async with open_client(settings) as client:
        return await run(client, comments, repeats, seed)


def say(line: str) -> None:
    print(f"==> {line}", file=sys.stderr, flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--comments", type=int, default=10_000)
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--seed", type=int, default=11)
    parser.add_argument("--quick", action="store_true", help="a smoke run: 200 comments")
    args = parser.parse_args()
    if args.quick:
        args.comments = QUICK_COMMENTS
    with LocalEngine() as engine:
        figures = asyncio.run(measure(engine, args.comments, args.repeats, args.seed))
    when = datetime.now(UTC)
    result = {
        "when": when.isoformat(timespec="seconds"),
        "machine": f"{platform.machine()}, {platform.python_implementation()} "
        f"{platform.python_version()}",
        "command": " ".join(["python -m benchmarks.writes.group_move", *sys.argv[1:]]),
        **figures,
    }
    path = save_result("group-move", result, when)
    say(f"wrote {path}")
    if not args.quick:  # the page shows the full run only
        source = str(path.relative_to(Path(__file__).resolve().parents[2]))
        say(f"wrote {write_page(result, source)}")
    if not figures["exact"]:
        raise SystemExit("the end state was not exact")


if __name__ == "__main__":
    main()
