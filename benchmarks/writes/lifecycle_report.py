"""docs/benchmarks/lifecycle.md from one results JSON of ``benchmarks.writes.lifecycle``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from benchmarks.report import PAGES

READ_COLUMNS = """\
The deep one is page 100, or the middle page of a listing of fewer than 200 pages. Figures
are medians over the row's pages. `ours`, `blog + filter` and `naive filter` are items read
(ScannedCount of the index queries) per item returned; RCU is the read capacity of all the
page's calls as DynamoDB Local reports it (ours includes its stats read, 0.5); `calls
(rounds)` counts storage calls and sequential rounds (ours: the stats read, then one or two
query rounds)."""

BASELINES = """\
- **ours**: `storage.reads.reader.list_comments` with `verifiedOnly`: the stats read, then the
  plan over the verified indexes (`verifiedByRating`, or `verifiedByLangAndRating` with a
  language): one partition per rating the verified counters do not show empty, each
  with a limit proportioned to its share of the page, topped up only where the merge runs
  out.
- **blog + filter** (`benchmarks/reads/baselines.py`, `blog_fan_out(verified_only=True)`): the
  blog has no verified view, so it reads what it reads without the verified filter, with
  `verified = true` as a FilterExpression: `all` with no other filter, `byLang` with a
  language, one `byRating` (or `byLangAndRating`) partition per requested rating. As in the
  blog every query has Limit = 20 (the page size); DynamoDB applies Limit before the filter,
  so each partition is queried again from its LastEvaluatedKey until it holds 20 matches or
  ends (in the blog's fan-out every partition must be able to fill the page on its own),
  then the partitions are merged by GSISK and the first 20 returned. Partitions are read
  concurrently, pages of one partition one after another.
- **naive filter** (`naive_filter(verified_only=True)`): one broad partition (`all`, or
  `byLang` with a language) with `verified = true` (and `rating IN (...)`) as a
  FilterExpression, Limit = 21, re-queried until 21 matches.

All three read the same keyset positions and must return the same 20 comments, which must
be the brute-force answer; the run stops otherwise."""

AWS_RULES = """\
- **AWS rule** (computed, `benchmarks/scale/capacity.py`): every item a transaction writes costs
  2 WCU per KB (rounded up per item) of the larger of its images before and after (a
  delete: the item deleted); a BatchWriteItem delete 1 WCU per KB. Each GSI entry that
  appears or disappears costs 1 write, one whose attributes change under the same key 1,
  one whose key changes 2 (delete and put), 1 WCU per KB of the entry (projection ALL: the
  whole item). Index writes are taken as not doubled: AWS documents the doubling for the
  items of a transaction, and indexes are updated after it commits (were they doubled, add
  the index column once more). Reads: GetItem ceil(KB / 4) of the whole item (a
  ProjectionExpression does not reduce it), Query the items read summed and rounded up to
  4 KB, halved when eventually consistent; the minimum when nothing is found. Item sizes by
  AWS's rule (attribute names plus values, numbers 1 byte per two digits plus 1), from the
  items read just before and after each write.
- **Local reported**: `ConsumedCapacity` as DynamoDB Local 3.3.0 returns it with
  `ReturnConsumedCapacity=INDEXES`, summed over the calls. For TransactWriteItems it does
  not charge per item (a transaction of four new 600-byte items reports 2.0 where AWS's
  rule gives 8; ten 100-byte items 2.0 where AWS's rule gives 20) and it doubles index
  writes, so its write figures are not AWS's bill. Its GetItem figures agree with AWS's
  rule; a Query that finds nothing it reports as 0."""


WRITE_NOTES = """\
Reading the tables:
- Every index projects ALL, so a change of a comment's text (an edit, a reply, a report's
  count) rewrites its entry in every index it is in: the four listings, their four helpful
  twins and `byAuthor`, and the two verified ones and their twins for a verified comment.
  A change of rating or language moves the entries keyed by it (two writes each).
- A helpful vote changes the comment's helpful key (HSK), so it moves the comment's entry in
  every helpful twin (two writes each) and rewrites the others; a not-helpful vote keeps
  the key and only rewrites. The twins are what lets the most helpful order read a page at
  the same cost at any depth, with every filter.
- The `S` item of a product with 5-star comments is also its leaderboard entry in
  `byLangAndRating`, so every counter move of such a product rewrites that entry too (one
  index write; two when the 5-star count changes its key).
- Creates under PRE moderation, and rejecting a PENDING comment, move no counters: only the
  comment (and, for a create, the author's limits) is written, with its `byAuthor` and
  `moderationQueue` entries."""


def _fmt(value: float, digits: int = 2) -> str:
    return f"{value:.{digits}f}"


def _num(value: float) -> str:
    return f"{value:g}"


def _reads_table(rows: list[dict[str, Any]], product: str) -> list[str]:
    lines = [
        "| filter | matching | pages | ours: plan | ours | blog + filter | naive filter "
        "| blog / ours | RCU ours | RCU blog | RCU naive | calls (rounds) ours | "
        "calls (rounds) blog |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in (r for r in rows if r["product"] == product):
        o, b, n = r["ours"], r["blog"], r["naive"]
        lines.append(
            f"| {r['filter']} | {r['matching']} | {r['depth']} {r['pages']} "
            f"| {', '.join(o['strategies'])} | {_fmt(o['amplification'])} "
            f"| {_fmt(b['amplification'])} | {_fmt(n['amplification'])} "
            f"| {_fmt(b['amplification'] / o['amplification'], 1)}x "
            f"| {_num(o['read_units'])} | {_num(b['read_units'])} | {_num(n['read_units'])} "
            f"| {_num(o['calls'])} ({_num(o['rounds'])}) | {_num(b['calls'])} "
            f"({_num(b['rounds'])}) |"
        )
    return lines


def _writes_table(rows: list[dict[str, Any]]) -> list[str]:
    lines = [
        "| transition | calls | items written | index entries written "
        "| AWS rule: WCU items | WCU indexes | WCU total | RCU "
        "| Local reported: WCU items | WCU indexes | RCU |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        calls = ", ".join(f"{op} {n}" for op, n in r["calls"].items())
        entries = sum(r["index_entry_writes"].values())
        total = r["aws_write_table"] + r["aws_write_indexes"]
        lines.append(
            f"| {r['transition']} | {calls} | {len(r['items_written'])} | {entries} "
            f"| {_num(r['aws_write_table'])} | {_num(r['aws_write_indexes'])} "
            f"| **{_num(total)}** | {_num(r['aws_read'])} "
            f"| {_num(r['engine_write_table'])} | {_num(r['engine_write_indexes'])} "
            f"| {_num(r['engine_read'])} |"
        )
    return lines


def _size(before: int | None, after: int | None) -> str:
    if before is None:
        return f"new {after} B"
    if after is None:
        return f"{before} B deleted"
    return f"{before} -> {after} B"


def _details_table(rows: list[dict[str, Any]]) -> list[str]:
    lines = [
        "| transition | items (size; WCU by AWS's rule) | index entries written |",
        "|---|---|---|",
    ]
    for r in rows:
        items = "; ".join(
            f"{w['role']} ({_size(w['size_before'], w['size_after'])}; {w['table_units']})"
            for w in r["items_written"]
        )
        entries = ", ".join(f"{k} {n}" for k, n in r["index_entry_writes"].items()) or "none"
        lines.append(f"| {r['transition']} | {items} | {entries} |")
    return lines


def _read_observations(rows: list[dict[str, Any]]) -> list[str]:
    lines = []
    for product, share in (("verified-10", "10 %"), ("verified-50", "50 %")):
        mine = [r for r in rows if r["product"] == product]
        ratios = sorted(r["blog"]["amplification"] / r["ours"]["amplification"] for r in mine)
        ours = sorted(r["ours"]["amplification"] for r in mine)
        lines.append(
            f"- {share} verified: ours reads {_fmt(ours[0])}-{_fmt(ours[-1])} items per item "
            f"returned; the blog with a filter {_fmt(ratios[0], 1)}-{_fmt(ratios[-1], 1)} "
            "times as many."
        )
    dearer = [
        f"{r['product']}, {r['filter']}, {r['depth']}"
        for r in rows
        if r["ours"]["read_units"] > r["blog"]["read_units"]
    ]
    lines.append(
        "- Read capacity is rounded up to 4 KB per call, so a fan-out over k partitions pays "
        "at least k half-units a round however few items it reads, and ours adds its stats "
        "read. Rows where ours consumed more RCU than the blog with a filter: "
        + ("; ".join(dearer) if dearer else "none")
        + "."
    )
    return lines


def render(results: dict[str, Any], json_name: str) -> str:
    d = results["data"]
    quick = " (quick run: small data, few pages)" if results["quick"] else ""
    flag = " --quick" if results["quick"] else ""
    out = [
        "# The life of a comment: verified reads and write costs",
        "",
        f"Generated by `.venv/bin/python -m benchmarks.writes.lifecycle{flag}` "
        f"(also run by `./scripts/bench`) from `benchmarks/results/{json_name}` "
        f"({results['when']}, "
        f"{results['machine']}){quick}. Rerun it to replace this file. The machine is shared, "
        "with DynamoDB Local in memory on the same cores; nothing here is a timing: every "
        "figure is a count or a capacity that storage itself reported, or computed from the "
        "items, and the same on every run with the same seed.",
        "",
        f"Data: {d['comments']} comments (seed {d['seed']}), bulk-loaded with exact counters: "
        f"two products of {d['product_size']} comments, with 10 % and 50 % of them by verified "
        "purchasers (verified independently of rating and language; ratings J-shaped, 5: 55 %, "
        "4: 20 %, 1: 12 %, 3: 8 %, 2: 5 %; languages en 50 %, de 20 %, fr 12 %, es 10 %, "
        "pt-br 5 %, ja 3 %), and a product of 500 comments (30 % verified) for the writes.",
        "",
        "## Verified listings: items read per item returned",
        "",
        f"Pages of {results['page_size']}, {results['pages_per_walk']} consecutive pages per "
        "row from the first page and from a deep one. " + READ_COLUMNS,
        "",
        BASELINES,
        "",
    ]
    for product, share in (("verified-10", "10 %"), ("verified-50", "50 %")):
        out += [f"### {share} verified", "", *_reads_table(results["reads"], product), ""]
    out += [*_read_observations(results["reads"]), ""]
    out += [
        "## Write cost of each transition",
        "",
        f"Each transition {results['repeats']} times on fresh comments of a product in steady "
        "state (counters and its leaderboard entry exist), through the storage layer's own "
        "write functions; medians. Creates use the API's default write limits, so the "
        "author's per-product slot and hourly counter are written with the comment. The "
        "comments have a title and a three-sentence body (item sizes in the second table). "
        "`calls` are the storage calls the write made, the reads it needs included; RCU "
        "counts those reads.",
        "",
        AWS_RULES,
        "",
        *_writes_table(results["writes"]),
        "",
        "What each transition writes (AWS's rule; the last repeat):",
        "",
        *_details_table(results["writes"]),
        "",
        WRITE_NOTES,
        "",
    ]
    return "\n".join(out)


def write(results: dict[str, Any], json_name: str) -> Path:
    path = PAGES / "lifecycle.md"
    path.write_text(render(results, json_name))
    return path
