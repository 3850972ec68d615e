"""Write cost against the series' first design: ours, and part 1's copies made by a stream.

    .venv/bin/python -m benchmarks.writes.part1 [--quick] [--seed 7]

Starts DynamoDB Local in memory with two tables: ours, holding a product of 500 comments
(so its counters and leaderboard entry exist, as in steady state), and part 1's
(``benchmarks.writes.part1_design``), with its stream and the consumer that keeps the copies. Each
transition runs on both, alternately, ``repeats`` times on fresh comments (prepared by
writes that are not measured), every write priced by AWS's rules (``benchmarks.scale.capacity``):

- ours: the real write path (``benchmarks.writes.costs``), one call of it: the comment, its
  index entries, the counters and author limits it moves, and the transaction's doubling;
- part 1: the client's write of the primary item, then the consumer draining the stream:
  every copy it puts or deletes, and every entry of the GSI those writes change.

Stream reads are not table capacity: GetRecords is billed per call as a streams read
request unit (up to 1 MB), and is free when the reader is a Lambda trigger, as in part 1;
the calls are counted beside the figures, never added to WCU. Figures are medians over the
repeats. Writes ``results/part1-<timestamp>.json`` and prints the section.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import random
import statistics
import sys
import time
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from itertools import count
from typing import Any

from benchmarks import data
from benchmarks.report import HERE
from benchmarks.scale.capacity import Account, CapacityProbe, write_units
from benchmarks.writes import costs as write_costs
from benchmarks.writes.part1_design import (
    LAYOUT,
    PUBLISHED,
    Part1Comments,
    Review,
    StreamConsumer,
    copies,
    create_table,
    open_streams,
)
from server.dev.demo import synthetic_comments
from server.dev.local_engine import LocalEngine
from storage.base.types import DynamoClient, Item
from storage.engine.client import ClientSettings, open_client
from storage.engine.table import TableRef

OURS_TABLE = "writecost_ours"
PART1_TABLE = "writecost_part1"
PRODUCT = write_costs.PRODUCT

Run = Callable[[Part1Comments], Awaitable[None]]


def say(message: str) -> None:
    print(f"==> {message}", file=sys.stderr, flush=True)


@dataclass(slots=True)
class Baseline:
    """Part 1's table, its consumer, and fresh reviews for the transitions."""

    client: DynamoClient
    table: str
    consumer: StreamConsumer
    product: str = PRODUCT
    _n: Iterator[int] = field(default_factory=lambda: count(1), init=False)
    _start: datetime = field(default_factory=lambda: datetime.now(UTC), init=False)

    def review(self, rating: int = 3, language: str = "en") -> Review:
        n = next(self._n)
        moment = self._start + timedelta(milliseconds=n)
        return Review(
            comment_id=f"{n:010d}-{random.getrandbits(64):016x}",
            product=self.product,
            language=language,
            rating=rating,
            title=write_costs.TITLE,
            text=write_costs.BODY,
            username=f"Author {n:05d}",
            cd=f"{moment:%Y-%m-%dT%H:%M:%S}.{moment.microsecond // 1000:03d}Z",
        )

    async def made(self, rating: int = 3, status: str = PUBLISHED) -> Review:
        """A review written and its copies made (not measured)."""
        review = self.review(rating)
        await Part1Comments(self.client, self.table).create(review, status)
        await self.consumer.drain(self.client, self.table)
        return review

    async def measure(self, run: Run) -> dict[str, Any]:
        """One change: the client's call, then the consumer until the stream is drained."""
        client = CapacityProbe(self.client, LAYOUT)
        await run(Part1Comments(client, self.table))
        consumer = CapacityProbe(self.client, LAYOUT)
        calls, records = self.consumer.get_records_calls, self.consumer.records
        await self.consumer.drain(consumer, self.table)
        return {
            "client": client.account,
            "consumer": consumer.account,
            "get_records_calls": self.consumer.get_records_calls - calls,
            "stream_records": self.consumer.records - records,
        }


Part1Setup = Callable[[Baseline], Awaitable[Run]]


@dataclass(frozen=True, slots=True)
class Transition:
    name: str  # the transition of benchmarks.writes.costs it is compared with
    group: str
    part1: Part1Setup
    combinations: int  # items part 1's design says the change writes


def transitions() -> list[Transition]:
    def create(rating: int, status: str = PUBLISHED) -> Part1Setup:
        async def setup(b: Baseline) -> Run:
            review = b.review(rating)
            return lambda c: c.create(review, status)

        return setup

    def change(rating: int, status: str, act: Callable[[Part1Comments, Review], Any]) -> Part1Setup:
        async def setup(b: Baseline) -> Run:
            review = await b.made(rating, status)

            async def run(c: Part1Comments) -> None:
                await act(c, review)

            return run

        return setup

    def edit(stars: int, **fields: Any) -> Part1Setup:
        return change(stars, PUBLISHED, lambda c, r: c.edit(r.product, r.comment_id, **fields))

    def moderate(before: str, after: str) -> Part1Setup:
        return change(3, before, lambda c, r: c.set_status(r.product, r.comment_id, after))

    delete = change(3, PUBLISHED, lambda c, r: c.delete(r.product, r.comment_id))
    pending, rejected = "PENDING", "REJECTED"
    # Rating 3 -> 4 and en -> de: the old and the new combinations share 16 keys.
    moved = 32 + 16
    return [
        Transition("create, POST, rating 3", "create", create(3), 32),
        Transition("create, POST, rating 5", "create", create(5), 32),
        Transition("create, PRE, rating 3", "create", create(3, pending), 1),
        Transition("delete", "delete", delete, 32),
        Transition("approve (PENDING)", "status", moderate(pending, PUBLISHED), 32),
        Transition("reject (PUBLISHED)", "status", moderate(PUBLISHED, rejected), 32),
        Transition("reject (PENDING)", "status", moderate(pending, rejected), 1),
        Transition("edit: text only", "edit", edit(3, text=write_costs.EDITED_BODY), 32),
        Transition("edit: rating 3 -> 4", "edit", edit(3, rating=4), moved),
        Transition("edit: language en -> de", "edit", edit(3, language="de"), moved),
    ]


def _base_units(account: Account, roles: set[str] | None = None) -> int:
    """Table WCU of the items written without the transaction's doubling."""
    return sum(
        write_units(max(w.size_before or 0, w.size_after or 0))
        for w in account.writes
        if roles is None or w.role in roles
    )


def _size(account: Account, role: str) -> int:
    """The largest image of an item of ``role`` written (bytes, AWS's rule); 0 if none."""
    return max(
        (max(w.size_before or 0, w.size_after or 0) for w in account.writes if w.role == role),
        default=0,
    )


def ours_figures(account: Account) -> dict[str, float]:
    table, indexes = account.aws_write_table, account.aws_write_indexes
    comment = _base_units(account, {"comment"})
    return {
        "comment_bytes": _size(account, "comment"),
        "items": len(account.writes),
        "index_entries": sum(account.index_entry_writes.values()),
        "wcu": table + indexes,
        "wcu_comment": comment,
        "wcu_indexes": indexes,
        "wcu_other_items": _base_units(account) - comment,
        "wcu_transaction": table - _base_units(account),
        "rcu": account.aws_read,
        "calls": sum(account.calls.values()),
    }


def part1_figures(cost: dict[str, Any]) -> dict[str, float]:
    client, consumer = cost["client"], cost["consumer"]
    return {
        "comment_bytes": _size(client, "primary item"),
        "items": len(client.writes) + len(consumer.writes),
        "items_client": len(client.writes),
        "items_consumer": len(consumer.writes),
        "index_entries": sum(client.index_entry_writes.values())
        + sum(consumer.index_entry_writes.values()),
        "wcu": sum(a.aws_write_table + a.aws_write_indexes for a in (client, consumer)),
        "wcu_client": client.aws_write_table + client.aws_write_indexes,
        "wcu_consumer": consumer.aws_write_table + consumer.aws_write_indexes,
        "wcu_indexes": client.aws_write_indexes + consumer.aws_write_indexes,
        "rcu": client.aws_read + consumer.aws_read,
        "calls": sum(client.calls.values()) + sum(consumer.calls.values()),
        "stream_records": cost["stream_records"],
        "get_records_calls": cost["get_records_calls"],
    }


def _medians(samples: list[dict[str, float]]) -> dict[str, float]:
    return {k: float(statistics.median(s[k] for s in samples)) for k in samples[0]}


async def faithful(baseline: Baseline) -> dict[str, int]:
    """After the run, the part 1 table against its design: every primary item's copies."""
    found: dict[tuple[str, str], Item] = {}
    start: dict[str, Any] = {}
    while True:
        page = await baseline.client.scan(TableName=baseline.table, ConsistentRead=True, **start)
        found.update({(i["pk"]["S"], i["sk"]["S"]): i for i in page["Items"]})
        if "LastEvaluatedKey" not in page:
            break
        start = {"ExclusiveStartKey": page["LastEvaluatedKey"]}
    primaries = [i for i in found.values() if "auto" not in i]
    expected = {(p["pk"]["S"], p["sk"]["S"]): p for p in primaries}
    for p in primaries:
        expected.update({(c["pk"]["S"], c["sk"]["S"]): c for c in copies(p).values()})
    return {
        "comments": len(primaries),
        "items": len(found),
        "missing": len(expected.keys() - found.keys()),
        "stray": len(found.keys() - expected.keys()),
        "different": sum(1 for k in expected.keys() & found.keys() if expected[k] != found[k]),
    }


async def measure(endpoint_url: str, repeats: int = 9, seed: int = 7) -> dict[str, Any]:
    """Every transition on ours and on part 1's design, ``repeats`` times each, one engine."""
    # A shared machine can stall the engine for seconds: wait rather than fail.
    settings = ClientSettings(endpoint_url=endpoint_url, read_timeout=60.0)
    async with open_client(settings) as client, open_streams(endpoint_url) as streams:
        ours = TableRef(client, OURS_TABLE)
        steady = list(synthetic_comments([(PRODUCT, 500, False)], random.Random(seed)))
        await data.load(ours, steady, "seeding our product")
        arn = await create_table(client, PART1_TABLE)
        baseline = Baseline(client, PART1_TABLE, StreamConsumer(streams, arn))
        by_name = {t.name: t for t in write_costs.transitions(write_costs.Authors())}
        rows = []
        for transition in transitions():
            say(f"{transition.name}: ours and part 1, {repeats} times")
            ours_samples, part1_samples = [], []
            for _ in range(repeats):
                run = await by_name[transition.name].setup(ours)
                probe = CapacityProbe(client)
                await run(TableRef(probe, ours.name))
                ours_samples.append(ours_figures(probe.account))
                act = await transition.part1(baseline)
                part1_samples.append(part1_figures(await baseline.measure(act)))
            mine, theirs = _medians(ours_samples), _medians(part1_samples)
            rows.append(
                {
                    "transition": transition.name,
                    "group": transition.group,
                    "combinations": transition.combinations,
                    "ours": mine,
                    "part1": theirs,
                    "ratio": theirs["wcu"] / mine["wcu"],
                }
            )
        check = await faithful(baseline)
    return {"repeats": repeats, "seed": seed, "rows": rows, "part1_table": check}


def section(result: dict[str, Any]) -> list[str]:
    """Markdown: the write cost of each transition, ours against part 1's design."""
    lines = [
        "## Write cost against part 1's design (a copy per filter combination, by stream)",
        "",
        f"Medians of {result['repeats']} runs of each transition on fresh comments, both "
        "designs on one DynamoDB Local in the same run; WCU by AWS's rules "
        "(`benchmarks/scale/capacity.py`). Ratio: part 1's WCU over ours.",
        "",
        "| transition | ours items | ours WCU | part 1 items | part 1 WCU | ratio |",
        "|---|---|---|---|---|---|",
    ]
    for row in result["rows"]:
        ours, part1 = row["ours"], row["part1"]
        lines.append(
            f"| {row['transition']} | {ours['items']:g} | {ours['wcu']:g} | {part1['items']:g} "
            f"| {part1['wcu']:g} | {row['ratio']:.2f} |"
        )
    lines += [
        "",
        "What the WCU are made of:",
        "",
        "| transition | ours: comment | ours: index entries (count) | ours: other items | "
        "ours: transaction's doubling | part 1: client (items) | part 1: consumer (items) | "
        "part 1: of which index entries (count) | part 1: stream records (GetRecords calls) |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for row in result["rows"]:
        ours, part1 = row["ours"], row["part1"]
        lines.append(
            f"| {row['transition']} | {ours['wcu_comment']:g} | {ours['wcu_indexes']:g} "
            f"({ours['index_entries']:g}) | {ours['wcu_other_items']:g} | "
            f"{ours['wcu_transaction']:g} | {part1['wcu_client']:g} ({part1['items_client']:g}) | "
            f"{part1['wcu_consumer']:g} ({part1['items_consumer']:g}) | "
            f"{part1['wcu_indexes']:g} ({part1['index_entries']:g}) | "
            f"{part1['stream_records']:g} ({part1['get_records_calls']:g}) |"
        )
    check = result["part1_table"]
    sizes = result["rows"][0]
    lines += [
        "",
        "All figures are WCU by AWS's rules but the counts in brackets. Every item written is "
        f"under 1 KB (a comment of ours {sizes['ours']['comment_bytes']:g} bytes, part 1's "
        f"{sizes['part1']['comment_bytes']:g}: the same title and body, fewer attributes), so "
        "each costs 1 WCU a write (2 in a transaction) and 1 per index entry.",
        "",
        "- **ours**: one call of the real write path (`benchmarks/writes/costs.py`): the "
        "comment item (WCU per KB, undoubled), its index entries (every listing index, its "
        "helpful twin and `byAuthor`; count in brackets), the other items of the "
        "transaction (the `S` and `S#<lang>` counters, the author's per-product and hourly "
        "limits, the moderation queue's count; undoubled) and the transaction's doubling of "
        "every item it writes. It also keeps exact counts, histograms and the leaderboard.",
        "- **part 1** (`benchmarks/writes/part1_design.py`): the client writes the primary item "
        "(`PRODUCT#<product>/~/~`); the consumer reads the table's stream and puts or "
        "deletes the other copies, 25 a BatchWriteItem, each copy a whole comment; each item "
        "written changes its entry in the one GSI (partition `sk`, sort `cd`). Part 1 keeps "
        "no counters, so it writes none. A change of rating or language deletes the 16 "
        "copies whose keys go and rewrites the 31 others in place (the post's 'removed "
        "before the new set is added', read as cheaply as it allows; deleting all 31 old "
        "copies first would write 63 items, 126 WCU). A delete is the primary item's, by "
        "the client, and the copies', by the consumer: AP5's batch delete by the client "
        "writes the same 32.",
        "- Statuses are not in part 1: here a comment outside PUBLISHED has only its primary "
        "item, out of the GSI; publishing writes its copies, unpublishing deletes them.",
        "- Stream records and GetRecords calls (the consumer's polls, including the empty "
        "one that ends a drain) cost no table WCU: DynamoDB bills GetRecords per call as "
        "a streams read request unit, and not at all when a Lambda trigger reads the "
        "stream, as in part 1; Lambda's own compute is not counted.",
        f"- After the run, part 1's table held {check['items']} items for "
        f"{check['comments']} comments: {check['missing']} missing, {check['stray']} stray "
        f"and {check['different']} different from what the design says.",
    ]
    return lines


def target_rows(result: dict[str, Any]) -> list[tuple[str, str, bool]]:
    """(target, measured, met): the write cost of each kind of change against part 1's."""
    rows: list[tuple[str, str, bool]] = []
    for group, label in (
        ("create", "create"),
        ("delete", "delete"),
        ("status", "status change"),
        ("edit", "edit"),
    ):
        mine = [r for r in result["rows"] if r["group"] == group]
        measured = "; ".join(
            f"{r['transition']}: ours {r['ours']['wcu']:g} WCU, part 1 {r['part1']['wcu']:g} "
            f"({r['ratio']:.1f}x)"
            for r in mine
        )
        rows.append((f"write cost per {label} reported against part 1's design", measured, True))
    check = result["part1_table"]
    sound = check["missing"] == check["stray"] == check["different"] == 0
    counts = all(r["part1"]["items"] == r["combinations"] for r in result["rows"])
    rows.append(
        (
            "part 1's baseline writes one item per filter combination, kept by its stream",
            f"{check['items']} items for {check['comments']} comments, "
            f"{check['missing'] + check['stray'] + check['different']} off; items per change "
            f"{'equal' if counts else 'differ from'} the combinations it touches",
            sound and counts,
        )
    )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="3 repeats instead of 9")
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    started = time.perf_counter()
    with LocalEngine() as engine:
        measured = asyncio.run(measure(engine.endpoint_url, 3 if args.quick else 9, args.seed))
    when = datetime.now(UTC)
    results = {
        "when": when.isoformat(timespec="seconds"),
        "machine": f"{platform.machine()}, {platform.python_implementation()} "
        f"{platform.python_version()}, {len(os.sched_getaffinity(0))} cores",
        "engine": "DynamoDB Local",
        "quick": args.quick,
        "command": " ".join(["python -m benchmarks.writes.part1", *sys.argv[1:]]),
        **measured,
        "duration_seconds": round(time.perf_counter() - started, 1),
    }
    out_dir = HERE / "results"
    out_dir.mkdir(exist_ok=True)
    stamp = when.strftime("%Y%m%dT%H%M%SZ")
    name = f"part1-{stamp}{'-quick' if args.quick else ''}.json"
    (out_dir / name).write_text(json.dumps(results, indent=1) + "\n")
    print("\n".join(section(results)))
    say(f"wrote {out_dir / name} in {results['duration_seconds']} s")


if __name__ == "__main__":
    main()
