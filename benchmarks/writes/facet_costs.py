"""What facets cost a comment's writes, by AWS's rules, against the same writes without.

    .venv/bin/python -m benchmarks.writes.facet_costs [--repeats 3]

Each transition runs through the real write path on DynamoDB Local, on a product that
already has comments with the same facet values (so the counter items exist, as in steady
state), through a ``CapacityProbe`` (``benchmarks.scale.capacity``), which prices every
item written and every index entry it moves by AWS's rules: a transactional write costs
two units per KB begun of the larger of the item before and after, each index entry one
per KB. The figures are medians over the repeats (they differ only when an item crosses a
KB boundary) and every ratio is against the same transition without facets, in the same
run; each transition is measured outside a group and on a variant in a group, whose
comments also move the group's entries and counters (and a group move of one comment).
Nothing here is a timing. The API does not take facets yet: the comments are given
their values at the storage layer, as the API will.
"""

from __future__ import annotations

import argparse
import asyncio
import platform
import statistics
import sys
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from typing import Any

from benchmarks.report import save_result
from benchmarks.scale.capacity import Account, CapacityProbe
from benchmarks.writes.costs import BODY, EDITED_BODY, TITLE, Authors
from server.dev.local_engine import LocalEngine
from storage.engine.client import ClientSettings, open_client
from storage.engine.table import TableRef
from storage.model.comments import Comment, NewComment
from storage.model.facets import FacetValue
from storage.ops.create import create_table
from storage.ops.group_move import move_comment
from storage.writes import DEFAULT_LIMITS, create_comment
from storage.writes.delete import delete_comment
from storage.writes.edit import Edit, edit_comment
from storage.writes.membership import MembershipMemory, change_membership
from storage.writes.moderate import Decision, moderate_comment

PRODUCT = "facet-cost-product"
# A variant in a group: every transition also moves the group's entries and counters.
VARIANT = "facet-cost-variant"
GROUPS = ("facet-cost-group", "facet-cost-group-2")
TABLE = "facet_costs"
# A long review: about 3 KB of text, where every entry's copy costs three units.
LONG_BODY = " ".join([BODY] * 10)

ANSWERS = [
    FacetValue.attribute("fit", "small"),
    FacetValue.attribute("would-recommend", "yes"),
    FacetValue.attribute("comfort", "4"),
    FacetValue.attribute("width", "wide"),
]
TOPICS = [FacetValue.topic(t) for t in ("battery-life", "screen", "price", "delivery")]
SETS = {
    0: frozenset[FacetValue](),
    3: frozenset(ANSWERS[:2] + TOPICS[:1]),
    8: frozenset(ANSWERS + TOPICS),
}

Measured = Callable[[TableRef], Awaitable[Any]]
Setup = Callable[[TableRef], Awaitable[Measured]]


def _new(authors: Authors, values: int, body: str = BODY, product: str = PRODUCT) -> NewComment:
    return NewComment(product, "en", 3, body, authors(), title=TITLE, facets=SETS[values])


async def _made(
    table: TableRef, authors: Authors, values: int, body: str = BODY, product: str = PRODUCT
) -> Comment:
    return (await create_comment(table, _new(authors, values, body, product))).comment


def transitions(
    authors: Authors, product: str = PRODUCT
) -> list[tuple[str, int, Callable[[TableRef], Awaitable[Measured]]]]:
    """(name, facet values, setup returning the measured call), on ``product``."""

    def create(values: int, body: str = BODY) -> Setup:
        async def setup(_: TableRef) -> Measured:
            request = _new(authors, values, body, product)
            return lambda t: create_comment(t, request, write_limits=DEFAULT_LIMITS)

        return setup

    def edit(values: int, change: Edit) -> Setup:
        async def setup(table: TableRef) -> Measured:
            c = await _made(table, authors, values, product=product)
            return lambda t: edit_comment(t, c.comment_id, change, author_id=c.author_id)

        return setup

    def reject(values: int) -> Setup:
        async def setup(table: TableRef) -> Measured:
            c = await _made(table, authors, values, product=product)
            return lambda t: moderate_comment(t, c.comment_id, Decision.REJECT, moderator="m")

        return setup

    def delete(values: int) -> Setup:
        async def setup(table: TableRef) -> Measured:
            c = await _made(table, authors, values, product=product)
            return lambda t: delete_comment(t, c.comment_id, author_id=c.author_id)

        return setup

    def move(values: int) -> Setup:
        async def setup(table: TableRef) -> Measured:
            c = await _made(table, authors, values, product=product)
            other = GROUPS[1] if c.group_id == GROUPS[0] else GROUPS[0]
            _, into = await change_membership(table, product, other)
            return lambda t: move_comment(t, c.comment_id, into)

        return setup

    rows: list[tuple[str, int, Setup]] = []
    for values in SETS:
        rows += [
            ("create", values, create(values)),
            ("create, a 3 KB review", values, create(values, LONG_BODY)),
            ("edit: text only", values, edit(values, Edit(body=EDITED_BODY))),
            ("edit: rating 3 -> 4", values, edit(values, Edit(rating=4))),
            ("edit: language en -> de", values, edit(values, Edit(language="de"))),
            ("reject (PUBLISHED)", values, reject(values)),
            ("delete", values, delete(values)),
        ]
        if product == VARIANT:
            rows.append(("group move (one comment)", values, move(values)))
    return rows


def _figures(accounts: list[Account]) -> dict[str, Any]:
    table = statistics.median(a.aws_write_table for a in accounts)
    indexes = statistics.median(a.aws_write_indexes for a in accounts)
    actions = statistics.median(len(a.writes) for a in accounts)
    return {"wcu_table": table, "wcu_indexes": indexes, "wcu": table + indexes, "items": actions}


async def measure(engine: LocalEngine, repeats: int) -> list[dict[str, Any]]:
    async with open_client(ClientSettings(endpoint_url=engine.endpoint_url)) as client:
        table = TableRef(client, TABLE)
        await create_table(client, TABLE, stream=False)
        await change_membership(table, VARIANT, GROUPS[0])
        authors = Authors()
        for product in (PRODUCT, VARIANT):
            for values in SETS:  # steady state: the counters of every value exist
                for _ in range(3):
                    await _made(table, authors, values, product=product)
        rows = []
        for product in (PRODUCT, VARIANT):
            for name, values, setup in transitions(authors, product):
                accounts = []
                for _ in range(repeats):
                    run = await setup(table)
                    probe = CapacityProbe(table.client)
                    # A process that has written to the product: its membership known.
                    await run(TableRef(probe, table.name).keep(table.memory(MembershipMemory)))
                    accounts.append(probe.account)
                figures = _figures(accounts)
                grouped = product == VARIANT
                rows.append(
                    {"transition": name, "facet_values": values, "grouped": grouped, **figures}
                )
    # Every ratio against the same transition without facets outside a group (a group
    # move, against the move of a comment without facets).
    baseline = {
        r["transition"]: r["wcu"]
        for r in rows
        if r["facet_values"] == 0 and (not r["grouped"] or r["transition"].startswith("group"))
    }
    for r in rows:
        r["ratio"] = round(r["wcu"] / baseline[r["transition"]], 2)
    return rows


def table_markdown(rows: list[dict[str, Any]]) -> str:
    lines = [
        "| transition | grouped | facet values | items written | WCU table | WCU indexes | WCU "
        "| x without |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        grouped = "yes" if r["grouped"] else "no"
        lines.append(
            f"| {r['transition']} | {grouped} | {r['facet_values']} | {r['items']:g} "
            f"| {r['wcu_table']:g} "
            f"| {r['wcu_indexes']:g} | {r['wcu']:g} | {r['ratio']:.2f} |"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    print("==> facet write costs through the capacity probe", file=sys.stderr, flush=True)
    with LocalEngine() as engine:
        rows = asyncio.run(measure(engine, args.repeats))
    when = datetime.now(UTC)
    result = {
        "when": when.isoformat(timespec="seconds"),
        "machine": f"{platform.machine()}, {platform.python_implementation()} "
        f"{platform.python_version()}",
        "command": " ".join(["python -m benchmarks.writes.facet_costs", *sys.argv[1:]]),
        "repeats": args.repeats,
        "rows": rows,
    }
    path = save_result("facet-costs", result, when)
    print(table_markdown(rows))
    print(f"==> wrote {path}", file=sys.stderr)


if __name__ == "__main__":
    main()
