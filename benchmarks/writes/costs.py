"""The capacity each transition of a comment's life consumes, through the real write path.

Every transition runs on a product that already has comments (so its counters and its
leaderboard entry exist, as in steady state), on a comment prepared for it by writes that
are not measured; only the measured call goes through a ``CapacityProbe``. Creates use the
API's default write limits (one comment per author and product, 30 an hour: both counters
are written with the comment). Each transition is measured ``repeats`` times on fresh
comments; the figures are medians (they vary only when an item crosses a KB boundary).
"""

from __future__ import annotations

import statistics
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from itertools import count
from typing import Any

from benchmarks.scale.capacity import Account, CapacityProbe
from storage.engine.table import TableRef
from storage.model.comments import Comment, ModerationMode, NewComment, Vote
from storage.writes import DEFAULT_LIMITS, create_comment
from storage.writes.delete import delete_comment
from storage.writes.edit import Edit, edit_comment
from storage.writes.moderate import Decision, moderate_comment
from storage.writes.reply import delete_reply, reply_to_comment
from storage.writes.reports import report_comment
from storage.writes.votes import vote_helpful

PRODUCT = "cost-product"
# A typical review: a short title and a body of a few sentences (the item is then about
# 700 bytes, under one KB; with a merchant reply it passes one KB).
TITLE = "Sturdy and well made"
BODY = (
    "Bought this for everyday use and it has held up well for three months. The finish is "
    "even, the hinges are stiff at first but loosen after a week, and the size is exactly "
    "as described. Delivery took four days. I would buy it again at this price."
)
EDITED_BODY = BODY.replace("three months", "six months").replace("four days", "five days")
REPLY = "Thank you for the detailed review! Glad it arrived on time and works as described."
THRESHOLD = 3

Measured = Callable[[TableRef], Awaitable[Any]]
Setup = Callable[[TableRef], Awaitable[Measured]]


@dataclass(frozen=True, slots=True)
class Transition:
    name: str
    group: str
    setup: Setup


class Authors:
    """A fresh author for every comment (one comment per author and product)."""

    def __init__(self) -> None:
        self._n = count(1)

    def __call__(self) -> str:
        return f"author-{next(self._n):05d}"


def transitions(authors: Authors) -> list[Transition]:
    def new(rating: int = 3, **extra: Any) -> NewComment:
        return NewComment(PRODUCT, "en", rating, BODY, authors(), title=TITLE, **extra)

    async def made(
        table: TableRef, rating: int = 3, mode: ModerationMode = ModerationMode.POST
    ) -> Comment:
        return (await create_comment(table, new(rating), moderation=mode)).comment

    def create(rating: int, mode: ModerationMode, **extra: Any) -> Setup:
        async def setup(_: TableRef) -> Measured:
            request = new(rating, **extra)
            return lambda t: create_comment(
                t, request, write_limits=DEFAULT_LIMITS, moderation=mode
            )

        return setup

    def edit(rating: int, change: Edit) -> Setup:
        async def setup(table: TableRef) -> Measured:
            c = await made(table, rating)
            return lambda t: edit_comment(t, c.comment_id, change, author_id=c.author_id)

        return setup

    def moderate(decision: Decision, mode: ModerationMode) -> Setup:
        async def setup(table: TableRef) -> Measured:
            c = await made(table, 3, mode)
            return lambda t: moderate_comment(t, c.comment_id, decision, moderator="mod")

        return setup

    def report(earlier: int) -> Setup:
        async def setup(table: TableRef) -> Measured:
            c = await made(table)
            for n in range(earlier):
                await report_comment(
                    table, c.comment_id, reporter=f"r{n}", reason="SPAM", threshold=THRESHOLD
                )
            return lambda t: report_comment(
                t, c.comment_id, reporter="last", reason="OFFENSIVE", threshold=THRESHOLD
            )

        return setup

    async def reply(table: TableRef) -> Measured:
        c = await made(table)
        return lambda t: reply_to_comment(t, c.comment_id, REPLY, merchant_name="Shop")

    async def unreply(table: TableRef) -> Measured:
        c = await made(table)
        await reply_to_comment(table, c.comment_id, REPLY, merchant_name="Shop")
        return lambda t: delete_reply(t, c.comment_id)

    def delete(reports: int) -> Setup:
        async def setup(table: TableRef) -> Measured:
            c = await made(table)
            for n in range(reports):
                await report_comment(table, c.comment_id, reporter=f"r{n}", reason="SPAM")
            return lambda t: delete_comment(t, c.comment_id, author_id=c.author_id)

        return setup

    def vote(before: Vote | None, after: Vote | None) -> Setup:
        async def setup(table: TableRef) -> Measured:
            c = await made(table)
            if before is not None:
                await vote_helpful(table, c.comment_id, voter="fan", vote=before)
            return lambda t: vote_helpful(t, c.comment_id, voter="fan", vote=after)

        return setup

    post, pre = ModerationMode.POST, ModerationMode.PRE
    helpful, unhelpful = Vote.HELPFUL, Vote.NOT_HELPFUL
    return [
        Transition("create, POST, rating 3", "create", create(3, post)),
        Transition("create, POST, rating 5", "create", create(5, post)),
        Transition("create, POST, rating 3, verified", "create", create(3, post, verified=True)),
        Transition(
            "create, POST, rating 3, idempotency key",
            "create",
            create(3, post, idempotency_key="k-1"),
        ),
        Transition("create, PRE, rating 3", "create", create(3, pre)),
        Transition("create, PRE, rating 5", "create", create(5, pre)),
        Transition("edit: text only", "edit", edit(3, Edit(body=EDITED_BODY))),
        Transition("edit: rating 3 -> 4", "edit", edit(3, Edit(rating=4))),
        Transition("edit: rating 4 -> 5", "edit", edit(4, Edit(rating=5))),
        Transition("edit: language en -> de", "edit", edit(3, Edit(language="de"))),
        Transition("approve (PENDING)", "moderate", moderate(Decision.APPROVE, pre)),
        Transition("reject (PENDING)", "moderate", moderate(Decision.REJECT, pre)),
        Transition("reject (PUBLISHED)", "moderate", moderate(Decision.REJECT, post)),
        Transition("report, below the threshold", "report", report(0)),
        Transition(f"report reaching the threshold ({THRESHOLD})", "report", report(2)),
        Transition("reply", "reply", reply),
        Transition("delete_reply", "reply", unreply),
        Transition("delete", "delete", delete(0)),
        Transition("delete, with 2 reports", "delete", delete(2)),
        Transition("vote helpful", "vote", vote(None, helpful)),
        Transition("vote not helpful", "vote", vote(None, unhelpful)),
        Transition("vote changed", "vote", vote(helpful, unhelpful)),
        Transition("vote withdrawn", "vote", vote(helpful, None)),
    ]


def _median(values: list[float]) -> float:
    return float(statistics.median(values))


def summarise(name: str, group: str, accounts: list[Account]) -> dict[str, Any]:
    """Medians over the repeats, and the shape of the last (items and index entries)."""
    last = accounts[-1]
    calls = {op: int(_median([a.calls[op] for a in accounts])) for op in sorted(last.calls)}
    return {
        "transition": name,
        "group": group,
        "repeats": len(accounts),
        "calls": calls,
        "items_written": [
            {
                "role": w.role,
                "size_before": w.size_before,
                "size_after": w.size_after,
                "table_units": w.table_units,
                "index_entry_writes": {k: n for k, (n, _) in sorted(w.index_writes.items())},
            }
            for w in last.writes
        ],
        "index_entry_writes": dict(sorted(last.index_entry_writes.items())),
        "aws_write_table": _median([a.aws_write_table for a in accounts]),
        "aws_write_indexes": _median([a.aws_write_indexes for a in accounts]),
        "aws_read": _median([a.aws_read for a in accounts]),
        "engine_write_table": _median([a.engine_write_table for a in accounts]),
        "engine_write_indexes": _median([a.engine_write_indexes for a in accounts]),
        "engine_read": _median([a.engine_read for a in accounts]),
    }


async def measure(table: TableRef, repeats: int) -> list[dict[str, Any]]:
    """Each transition ``repeats`` times on ``table`` (which must hold ``PRODUCT``)."""
    rows = []
    for transition in transitions(Authors()):
        accounts = []
        for _ in range(repeats):
            run = await transition.setup(table)
            probe = CapacityProbe(table.client)
            await run(TableRef(probe, table.name))
            accounts.append(probe.account)
        rows.append(summarise(transition.name, transition.group, accounts))
    return rows
