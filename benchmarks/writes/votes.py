"""Helpful votes on one hot comment against the same votes spread over many comments.

    .venv/bin/python -m benchmarks.writes.votes [--repeats 5] [--hold 0.01]

Starts DynamoDB Local in memory and warms it up (one run of each load, not counted; its
JIT makes the first hundreds of calls several times slower). For 30 and 100 concurrent
voters it runs, ``--repeats`` times each, in two engine modes:

- ``local``: DynamoDB Local as it is (it takes requests one after another and never
  cancels a transaction for a conflict);
- ``aws-conflicts``: through ``storage.engine.conflicts.AwsConflicts``, which cancels a
  transaction on an item another write is writing, as AWS does (``TransactionConflict``),
  each write held ``--hold`` seconds in flight as a transaction on AWS takes that long;
- ``aws-conflicts, 2 processes``: the same, the voters shared by two processes (table
  refs with their own lanes), whose transactions on the hot comment do conflict;

two loads, started at once with ``storage.writes.votes.vote_helpful`` under the API's
storage deadline (5 s):

- *hot*: N viewers vote on one comment;
- *spread*: N viewers vote on N different comments (one each): the same work without
  contention, the baseline of the same run.

Figures per load, medians over the repeats: the error rate by the code the API would
answer (CONFLICT, STORAGE_UNAVAILABLE for a timeout or an engine error), transaction
attempts per vote (transactions that carried the vote's item, counted by the wrapper),
failed conditions per vote (on any item: the comment's version, the vote item), p50 and
p99 latency, and, for *hot*, both as ratios to *spread*. After each run: the counts equal
the vote items, and, once the process's vote lanes are idle, every comment's helpful order
key (HSK) matches its count. Writes results/votes-<timestamp>.json and docs/benchmarks/votes.md.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import platform
import random
import statistics
import sys
import time
from datetime import UTC, datetime
from typing import Any

from benchmarks.reads.inprocess import percentile
from benchmarks.report import PAGES, save_result
from server.dev.local_engine import LocalEngine
from storage.base.errors import StorageError, StorageUnavailable, WriteConflict
from storage.engine.client import ClientSettings, open_client
from storage.engine.conflicts import AwsConflicts, item_key
from storage.engine.table import TableRef
from storage.model import keys
from storage.model.comments import ModerationMode, NewComment, Vote
from storage.model.items import comment_key
from storage.ops.create import create_table
from storage.writes import create_comment
from storage.writes.votes import vote_helpful

TABLE = "votes"
DEADLINE = 5.0  # the API's storage deadline (STORAGE_TIMEOUT)
VOTERS = (30, 100)
# Engine modes: whether AWS's conflicts are injected, and the processes voting (each with
# its own lanes of votes; one client and one wrapper, so conflicts between them count).
MODES = {"local": (False, 1), "aws-conflicts": (True, 1), "aws-conflicts, 2 processes": (True, 2)}


def say(message: str) -> None:
    print(f"==> {message}", file=sys.stderr, flush=True)


async def _comments(table: TableRef, n: int, tag: str) -> list[str]:
    made = []
    for i in range(n):
        new = NewComment(f"votes-{tag}", "en", 4, f"a review worth a vote ({i})", f"author-{i}")
        made.append(create_comment(table, new, moderation=ModerationMode.POST))
    return [r.comment.comment_id for r in await asyncio.gather(*made)]


async def _one_vote(table: TableRef, cid: str, voter: str, vote: Vote) -> tuple[float, str]:
    started = time.perf_counter()
    try:
        async with asyncio.timeout(DEADLINE):
            await vote_helpful(table, cid, voter=voter, vote=vote)
        outcome = "ok"
    except TimeoutError:
        outcome = "STORAGE_UNAVAILABLE"
    except WriteConflict:
        outcome = "CONFLICT"
    except StorageUnavailable:
        outcome = "STORAGE_UNAVAILABLE"
    except StorageError as exc:
        outcome = type(exc).__name__
    return time.perf_counter() - started, outcome


async def _settled(table: TableRef) -> float:
    """Seconds until the process's vote lanes are idle (their HSK follow-ups done)."""
    started = time.perf_counter()
    # Releases before lanes have none; those before table memories keep them as an attribute.
    lanes = getattr(table, "vote_lanes", None)
    memories = getattr(table, "memories", {})
    lanes = next((m for m in memories.values() if hasattr(m, "drain")), lanes)
    if lanes is not None:
        async with asyncio.timeout(30):
            await lanes.drain()
    return time.perf_counter() - started


async def _exact(table: TableRef, wanted: dict[tuple[str, str], Vote]) -> tuple[bool, bool]:
    """Whether every comment's counts equal its vote items, and its HSK its count."""
    counts_exact = keys_exact = True
    for cid in {cid for cid, _ in wanted}:
        item = (
            await table.client.get_item(
                TableName=table.name, Key=comment_key(cid), ConsistentRead=True
            )
        )["Item"]
        votes = []
        for (c, voter), _ in wanted.items():
            if c != cid:
                continue
            key = {"PK": {"S": keys.comment_pk(cid)}, "SK": {"S": keys.vote_sk(voter)}}
            got = await table.client.get_item(TableName=table.name, Key=key, ConsistentRead=True)
            if "Item" in got:
                votes.append(Vote(got["Item"]["vote"]["S"]))
        helpful = int(item.get("helpful", {"N": "0"})["N"])
        not_helpful = int(item.get("notHelpful", {"N": "0"})["N"])
        counted = (votes.count(Vote.HELPFUL), votes.count(Vote.NOT_HELPFUL))
        counts_exact &= (helpful, not_helpful) == counted
        want = keys.helpful_sort_key(helpful, item["GSISK"]["S"])
        keys_exact &= item.get("HSK", {}).get("S") == want
    return counts_exact, keys_exact


async def _load(
    client: Any, mode: str, hold: float, n: int, hot: bool, rng: random.Random, run: int
) -> dict[str, Any]:
    fail, processes = MODES[mode]
    conflicts = AwsConflicts(client, hold=hold, fail=fail)
    tables = [TableRef(conflicts, TABLE) for _ in range(processes)]
    tag = f"{list(MODES).index(mode)}-{n}-{'hot' if hot else 'spread'}-{run}"
    cids = await _comments(TableRef(client, TABLE), 1 if hot else n, tag)
    wanted = {
        (cids[0] if hot else cids[i], f"viewer-{i}"): rng.choice([Vote.HELPFUL, Vote.NOT_HELPFUL])
        for i in range(n)
    }
    started = time.perf_counter()
    answers = await asyncio.gather(
        *(_one_vote(tables[n % processes], c, v, w) for n, ((c, v), w) in enumerate(wanted.items()))
    )
    wall = time.perf_counter() - started
    settle = max([await _settled(t) for t in tables])
    latencies = [s for s, _ in answers]
    outcomes = [o for _, o in answers]
    vote_items = [
        item_key(TABLE, {"PK": {"S": keys.comment_pk(c)}, "SK": {"S": keys.vote_sk(v)}})
        for c, v in wanted
    ]
    # Counted against the vote items stored (a refused vote wrote nothing).
    counts_exact, keys_exact = await _exact(TableRef(client, TABLE), wanted)
    return {
        "errors": {code: outcomes.count(code) for code in set(outcomes) - {"ok"}},
        "error_rate": sum(o != "ok" for o in outcomes) / n,
        "attempts_per_vote": sum(conflicts.attempts[k] for k in vote_items) / n,
        # On the vote items and the comments alike (a version that moved, a vote that did).
        "conditions_failed_per_vote": sum(conflicts.condition_failures.values()) / n,
        "conflicts_injected": conflicts.conflicts,
        "transactions": conflicts.transactions,
        "p50_ms": 1000 * statistics.median(latencies),
        "p99_ms": 1000 * percentile(latencies, 0.99),
        "wall_ms": 1000 * wall,
        "settle_ms": 1000 * settle,
        "counts_exact": counts_exact,
        "hsk_exact": keys_exact,
    }


def _median(runs: list[dict[str, Any]], name: str) -> float:
    return float(statistics.median(r[name] for r in runs))


async def measure(args: argparse.Namespace, engine: LocalEngine) -> list[dict[str, Any]]:
    rows = []
    async with open_client(ClientSettings(endpoint_url=engine.endpoint_url)) as client:
        await create_table(client, TABLE, stream=False)
        rng = random.Random(args.seed)
        say("warming the engine up (not counted)")
        for load in ("spread", "hot"):
            await _load(client, "local", args.hold, 100, load == "hot", rng, -1)
        for mode in MODES:
            for n in VOTERS:
                runs: dict[str, list[dict[str, Any]]] = {"hot": [], "spread": []}
                for run in range(args.repeats):
                    for load in ("spread", "hot"):
                        say(f"{mode}: {n} voters, {load}, run {run + 1}/{args.repeats}")
                        runs[load].append(
                            await _load(client, mode, args.hold, n, load == "hot", rng, run)
                        )
                row: dict[str, Any] = {"mode": mode, "voters": n, "runs": runs}
                for load, done in runs.items():
                    row[load] = {
                        name: _median(done, name)
                        for name in (
                            "error_rate",
                            "attempts_per_vote",
                            "conditions_failed_per_vote",
                            "p50_ms",
                            "p99_ms",
                            "settle_ms",
                        )
                    }
                    row[load]["errors"] = _summed([r["errors"] for r in done])
                    row[load]["counts_exact"] = all(r["counts_exact"] for r in done)
                    row[load]["hsk_exact"] = all(r["hsk_exact"] for r in done)
                # Ratios run by run (the same moment's machine), then their median.
                row["p50_ratio"] = statistics.median(
                    h["p50_ms"] / s["p50_ms"]
                    for h, s in zip(runs["hot"], runs["spread"], strict=True)
                )
                row["p99_ratio"] = statistics.median(
                    h["p99_ms"] / s["p99_ms"]
                    for h, s in zip(runs["hot"], runs["spread"], strict=True)
                )
                rows.append(row)
    return rows


def _summed(counts: list[dict[str, int]]) -> dict[str, int]:
    total: dict[str, int] = {}
    for c in counts:
        for code, n in c.items():
            total[code] = total.get(code, 0) + n
    return total


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--hold", type=float, default=0.01, help="seconds a write is in flight")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--label", default="", help="names the code measured (e.g. main)")
    args = parser.parse_args()
    started = time.perf_counter()
    with LocalEngine() as engine:
        rows = asyncio.run(measure(args, engine))
    when = datetime.now(UTC)
    results = {
        "when": when.isoformat(timespec="seconds"),
        "machine": f"{platform.machine()}, {platform.python_implementation()} "
        f"{platform.python_version()}, {len(os.sched_getaffinity(0))} cores",
        "engine": "DynamoDB Local",
        "command": " ".join(["python -m benchmarks.writes.votes", *sys.argv[1:]]),
        "label": args.label,
        "hold_seconds": args.hold,
        "repeats": args.repeats,
        "rows": rows,
        "duration_seconds": round(time.perf_counter() - started, 1),
    }
    out = save_result("votes", results, when, tag=args.label)
    path = write_report(results, out.name)
    say(f"wrote {out} and {path} in {results['duration_seconds']} s")


def write_report(results: dict[str, Any], json_name: str) -> str:
    """docs/benchmarks/votes.md: one row per engine mode x voters x load."""
    lines = [
        "# Helpful votes on one hot comment",
        "",
        f"Generated by `{results['command']}` on {results['when']} ({results['machine']}, "
        f"{results['engine']}); raw figures in `benchmarks/results/{json_name}`. Medians over "
        f"{results['repeats']} runs; *hot*: N voters on one comment, *spread*: N voters on "
        f"N comments, started at once, in the same run; aws-conflicts holds each write "
        f"{results['hold_seconds'] * 1000:g} ms in flight.",
        "",
        "| engine | voters | load | error rate (errors, all runs) | attempts/vote "
        "| failed conditions/vote | p50 ms | p99 ms | p50 ratio | p99 ratio "
        "| HSK settled after ms | counts, HSK exact |",
        "|---|---:|---|---|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    for r in results["rows"]:
        for load in ("spread", "hot"):
            f = r[load]
            errors = ", ".join(f"{c} {n}" for c, n in sorted(f["errors"].items())) or "0"
            ratio = (
                (f"{r['p50_ratio']:.2f}", f"{r['p99_ratio']:.2f}") if load == "hot" else ("", "")
            )
            lines.append(
                f"| {r['mode']} | {r['voters']} | {load} | {f['error_rate']:.0%} ({errors}) "
                f"| {f['attempts_per_vote']:.2f} | {f['conditions_failed_per_vote']:.2f} "
                f"| {f['p50_ms']:.0f} | {f['p99_ms']:.0f} | {ratio[0]} | {ratio[1]} "
                f"| {f['settle_ms']:.0f} | {f['counts_exact']}, {f['hsk_exact']} |"
            )
    path = PAGES / "votes.md"
    path.write_text("\n".join(lines) + "\n")
    return str(path)


if __name__ == "__main__":
    main()
