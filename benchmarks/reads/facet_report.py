"""The facet reads' report (``benchmarks.reads.facet_reads``'s results): its targets,
met or not, its section of the results page, and its own page, docs/benchmarks/facets.md.
Pure: it reads a results dict, never storage."""

from __future__ import annotations

import statistics
from typing import Any

from benchmarks.report import PAGES

AMPLIFICATION_GOAL, FIRST_PAGE_GOAL, ONE_ROUND_GOAL = 1.25, 1.10, 0.90


def _one_value(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [r for r in rows if r["values"] == 1]


def _pages(rows: list[dict[str, Any]], reader: str, figure: str) -> list[float]:
    return [x for r in rows for x in r[reader]["per_page"][figure]]


def _deep_ratios(
    rows: list[dict[str, Any]], reader: str, deep_page: int
) -> list[tuple[str, str, float, float]]:
    """(filter, figures, items read, calls): page ``deep_page``'s walk over page 1's, per
    listing, medians over each walk's pages."""
    found = []
    for deep in rows:
        if deep["first_page"] != deep_page:
            continue
        (first,) = (
            r
            for r in rows
            if r["first_page"] == 1
            and (r["product"], r["filter"]) == (deep["product"], deep["filter"])
        )
        d, f = deep[reader], first[reader]
        figures = (
            f"items {d['items_read']:g} vs {f['items_read']:g}, "
            f"calls {d['calls']:g} vs {f['calls']:g}"
        )
        found.append(
            (deep["filter"], figures, d["items_read"] / f["items_read"], d["calls"] / f["calls"])
        )
    return found


def target_rows(result: dict[str, Any]) -> list[tuple[str, str, bool]]:
    """(target, measured, met): the issue's facet read targets, from one run."""
    rows = result["rows"]
    deep_page = result.get("deep_page", 500)
    one = _one_value(rows)
    two = [r for r in rows if r["values"] == 2]
    amp = statistics.median(_pages(one, "ours", "amplification"))
    again = statistics.median(_pages(one, "ours_again", "amplification"))
    firsts = [r for r in one if r["first_page"] == 1]
    first_again = statistics.median(r["ours_again"]["per_page"]["amplification"][0] for r in firsts)
    first_cold = statistics.median(r["ours"]["per_page"]["amplification"][0] for r in firsts)
    out = [
        (
            f"one facet value, language and ratings: median read amplification <= "
            f"{AMPLIFICATION_GOAL} (walks, first visit)",
            f"{amp:.3f} over {len(_pages(one, 'ours', 'amplification'))} pages "
            f"(read again: {again:.3f})",
            amp <= AMPLIFICATION_GOAL,
        ),
        (
            f"one facet value: first pages <= {FIRST_PAGE_GOAL} (median, warm: read again)",
            f"{first_again:.3f} (the cold first read of each listing: {first_cold:.3f})",
            first_again <= FIRST_PAGE_GOAL,
        ),
    ]
    for label, reader in (("first visit", "ours"), ("read again", "ours_again")):
        ratios = _deep_ratios(one, reader, deep_page)
        if not ratios:
            continue
        measured = "; ".join(
            f"{n}: items read {i:.2f}x, calls {c:.2f}x ({figures})" for n, figures, i, c in ratios
        )
        out.append(
            (
                f"one facet value: page {deep_page} costs what page 1 costs ({label}; "
                f"items read and calls, medians over {result['pages_per_walk']} pages)",
                measured,
                all(i <= 1.0 and c <= 1.0 for _, _, i, c in ratios),
            )
        )
    for label, reader in (("first visit", "ours"), ("read again", "ours_again")):
        warm = sum(r[reader]["warm_pages"] for r in one)
        single = sum(r[reader]["warm_one_round"] for r in one)
        share = single / warm if warm else 0.0
        out.append(
            (
                f"one facet value: warm pages (counters' snapshot in the process) in one "
                f"storage round >= {ONE_ROUND_GOAL:.0%} ({label})",
                f"{share:.0%} of {warm}",
                share >= ONE_ROUND_GOAL,
            )
        )
    pages = sum(r["ours"]["pages"] for r in two)
    full = sum(r["ours"]["full_pages"] for r in two)
    out.append(
        (
            "two facet values: full pages",
            f"{full} of {pages} pages full (or the listing's last), each the brute-force page",
            full == pages,
        )
    )
    over = [
        r
        for r in rows
        for reader in ("ours", "ours_again")
        if r[reader]["max_calls"] > r["estimated_calls"]
    ]
    estimates = sorted({r["estimated_calls"] for r in two})
    most = max(r[reader]["max_calls"] for r in two for reader in ("ours", "ours_again"))
    out.append(
        (
            "two facet values: storage calls within the API's cost estimate",
            f"at most {most} calls a page against an estimate of {', '.join(map(str, estimates))}"
            f"; {len(over)} walks over it (one value: at most "
            f"{max(r['ours']['max_calls'] for r in one)} against "
            f"{one[0]['estimated_calls'] if one else '-'})",
            not over,
        )
    )
    by_share = "; ".join(
        f"{r['selectivity']:.0%} of the first value's comments: {r['ours']['amplification']:.2f} "
        f"(blog {r['blog']['amplification']:.2f})"
        for r in two
        if r["first_page"] == 1
    )
    out.append(("two facet values: read amplification by the second value's share", by_share, True))
    ours_amp = statistics.median(_pages(rows, "ours", "amplification"))
    blog_amp = statistics.median(_pages(rows, "blog", "amplification"))
    out.append(
        (
            "the blog's filtered fan-out beside ours, same filters and pages: items read per "
            "item returned",
            f"blog {blog_amp:.2f}, ours {ours_amp:.2f} (medians over every page): "
            f"{blog_amp / ours_amp:.1f}x",
            True,
        )
    )
    return out


def section(result: dict[str, Any], *, own_page: bool = False) -> list[str]:
    """Markdown: one row per product, filter and depth, and the head-room sweep (on the
    results page, with a link to the page that explains them)."""
    lines = [
        "## Facet reads",
        "",
        f"`{result['command']}` on {result['when']}; pages of {result['page_size']}, up to "
        f"{result['pages_per_walk']} pages per walk, medians over a walk's pages "
        f"(`benchmarks/results/{result.get('file', 'facet-reads-*.json')}`). *first visit*: "
        "each page met for the first time (a listing's page 1 cold, every later page planned "
        "from the process's snapshot of its counters); *again*: the same pages read again. "
        "Calls include the counters' read; *estimate* is what the API's cost estimator "
        "allows the same request."
        + ("" if own_page else " The targets are at the top; [Facet reads](facets.md) explains."),
        "",
        "| product | filter | matching | pages | ours: read/returned | again | calls (max) "
        "| estimate | rounds (max) | warm pages in 1 round | again: in 1 round "
        "| blog: read/returned | blog calls |",
        "|---|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in result["rows"]:
        o, a, b = r["ours"], r["ours_again"], r["blog"]
        shown = r["filter"]
        if r["selectivity"] is not None:
            shown += f" ({r['selectivity']:.0%} of the first)"
        last = r["first_page"] + o["pages"] - 1
        lines.append(
            f"| {r['product']} | {shown} | {r['matching']:,} | {r['first_page']}-{last} "
            f"| {o['amplification']:.2f} | {a['amplification']:.2f} | {o['calls']:g} "
            f"({o['max_calls']}) | {r['estimated_calls']} | {o['rounds']:g} ({o['max_rounds']}) "
            f"| {o['warm_one_round']}/{o['warm_pages']} | {a['warm_one_round']}/{a['warm_pages']} "
            f"| {b['amplification']:.2f} | {b['calls']:g} |"
        )
    if result.get("headroom_sweep"):
        lines += [
            "",
            "The one-value walks again, each page met for the first time by a process that "
            "holds the listing's counters (every page warm), at several head-rooms z of the "
            "proportioned limits (`Tuning.z`, 0.25 by default):",
            "",
            "| z | pages | median read/returned | mean | pages in one round | calls per page |",
            "|---|---:|---:|---:|---:|---:|",
            *[
                f"| {r['z']} | {r['pages']} | {r['amplification']:.3f} "
                f"| {r['mean_amplification']:.3f} | {r['one_round']:.0%} | {r['calls']:.2f} |"
                for r in result["headroom_sweep"]
            ],
        ]
    return lines


NOTES = [
    "- A page met for the first time is planned from the counters: each rating's query is "
    "sized by its share of the page plus a head-room of z standard deviations. When the "
    "page happens to take more from one partition than that, a second (range) round reads "
    "what is missing. Whether it does is chance, not depth: page 500 and page 1 are "
    "planned alike, and a first visit's figures differ between any two walks by how many "
    "of their pages needed that round. A page read before under the same counters is sized "
    "from its head (what the process saw there) and is read in one round, page 500 as "
    "page 1.",
    "- On first visits, fewer rounds cost items: the sweep shows that no head-room gives "
    "both one round for 90 % of pages and a median read amplification of at most 1.25.",
    "- Two values: the entries of the narrower value are read, filtered on the other "
    "(`contains(facets, :v)`), so items read per item returned follows the inverse of the "
    "second value's share. A top-up range read of a filtered partition is limited by the "
    "shortfall in items, not in matches, so a page may take several short rounds (the "
    "calls it takes are compared with the estimate above).",
    "- The blog's fan-out asks each rating partition for a full page of matches, so a "
    "filter that keeps few of a partition's comments reads much of it, or all of it.",
]


def write_page(result: dict[str, Any]) -> str:
    """docs/benchmarks/facets.md: the section and the targets, as a page of its own."""
    targets = [f"| {t} | {m} | {'yes' if ok else '**no**'} |" for t, m, ok in target_rows(result)]
    lines = [
        "# Facet reads",
        "",
        *section(result, own_page=True)[2:],
        "",
        "## Targets",
        "",
        "| target | measured | met |",
        "|---|---|---|",
        *targets,
        "",
        "## Notes",
        "",
        *NOTES,
    ]
    path = PAGES / "facets.md"
    path.write_text("\n".join(lines).rstrip() + "\n")
    return str(path)
