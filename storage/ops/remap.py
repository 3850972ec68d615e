"""Remapping retired answers: the answers of values a scope no longer offers move to a
value it does offer, or are dropped, comment by comment, exactly.

A moderator retires a value by changing the definitions (its answers stay stored and
counted under it: ``storage.model.attribute_changes``). A remap names, for retired values,
the current value their answers become (``to``) or none (dropped); it is checked against
the definitions of the moment (``parse_remap``). The run finds the comments that hold a
remapped answer by a scan of the table filtered on the answer's token (every status: a
comment waiting for a moderator keeps its answers too), and moves each by one transition
(``storage.writes.transition.apply``) that recomputes its answers from the comment as
read, conditioned on its version: its entries and counters move in the same transaction,
so every count is exact at every moment of the run, whatever writers do meanwhile.

A retired value can be given again by no write (``validate_answers`` refuses it anew), and
a write that checked its answers against the definitions before they retired it commits
within one write's time (a transaction's longest call). The run scans until a whole scan
finds nothing to move, then takes the values out of the retired ones, on the condition
that the definitions are still the revision the remap was checked against. Stopped, it is
run again with the same remap: what moved stays moved, and it goes on with the rest.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from storage.base.errors import CommentNotFound, StorageUnavailable
from storage.base.expressions import Attr, Condition, Or, Placeholders
from storage.engine.retry import DEFAULT_BACKOFF, Backoff
from storage.engine.table import TableRef
from storage.model.attribute_changes import Remap, parse_remap
from storage.model.attributes import answers_of
from storage.model.comments import Comment
from storage.model.facets import FacetKind, FacetValue, Scope, ScopeKind
from storage.model.items import FACETS_ATTR, is_comment_item, item_to_comment
from storage.reads.groups import product_group
from storage.writes.facet_settings import read_definitions, settle_retired
from storage.writes.state import Stored
from storage.writes.transition import Change, apply

Progress = Callable[[str], None]
CONCURRENCY = 8
# Whole scans at most before the run says to run it again (each scan after the first
# finds only what writes committed during the one before).
PASSES = 4


@dataclass(frozen=True, slots=True)
class RemapResult:
    moved: int  # comments this run moved
    scans: int  # whole scans of the table
    settled: tuple[tuple[str, str], ...]  # retired values taken out of the retired ones

    def describe(self) -> str:
        values = ", ".join(f"{k}={v}" for k, v in self.settled)
        return (
            f"moved the answers of {self.moved} comments in {self.scans} scan(s); settled {values}"
        )


async def remap_answers(
    table: TableRef,
    scope: Scope,
    data: object,
    *,
    progress: Progress | None = None,
    backoff: Backoff = DEFAULT_BACKOFF,
    passes: int = PASSES,
) -> RemapResult:
    """Move every answer of the retired values ``data`` names (``[{"key", "value", "to"}]``,
    ``to`` null to drop) in ``scope``; InvalidFields for a remap the definitions refuse,
    SettingsChanged when they changed before the run settled, StorageUnavailable when
    writes kept adding answers to move for ``passes`` scans."""
    say = progress or (lambda _line: None)
    stored = await read_definitions(table, scope, consistent=True)
    remap = parse_remap(data, stored.definitions, stored.retired)
    tokens = [FacetValue.attribute(m.key, m.value).token for m in remap.moves]
    if not tokens:
        return RemapResult(0, 0, ())
    moved = 0
    for scan in range(1, passes + 1):
        found = await _scan(table, scope, remap, tokens, backoff, say, scan)
        moved += found
        if found == 0:
            done = await settle_retired(table, scope, remap.pairs, revision=stored.revision)
            say(f"{scope.token}: remap settled; {len(done.retired)} values stay retired")
            return RemapResult(moved, scan, remap.pairs)
    raise StorageUnavailable(
        f"{scope.token}: answers to remap kept appearing for {passes} scans; run it again"
    )


async def _scan(
    table: TableRef,
    scope: Scope,
    remap: Remap,
    tokens: list[str],
    backoff: Backoff,
    say: Progress,
    scan: int,
) -> int:
    """One whole scan, filtered on the remapped answers; the comments it moved."""
    p = Placeholders()
    terms = [Attr(FACETS_ATTR).contains(t) for t in tokens]
    condition: Condition = terms[0] if len(terms) == 1 else Or(tuple(terms))
    params: dict[str, Any] = {"TableName": table.name, "ConsistentRead": True}
    params["FilterExpression"] = condition.render(p)
    params = p.into(params)
    gate = asyncio.Semaphore(CONCURRENCY)
    moved = read = 0

    async def one(comment: Comment) -> bool:
        async with gate:
            if not await _in_scope(table, scope, comment):
                return False
            return await _move(table, comment.comment_id, remap, backoff)

    while True:
        page = await table.client.scan(**params)
        items = [i for i in page.get("Items", []) if is_comment_item(i)]
        read += int(page.get("ScannedCount", 0))
        done = await asyncio.gather(*(one(item_to_comment(i)) for i in items))
        moved += sum(done)
        say(f"{scope.token}: scan {scan}: {read} items read, {moved} comments moved")
        if "LastEvaluatedKey" not in page:
            return moved
        params["ExclusiveStartKey"] = page["LastEvaluatedKey"]


async def _in_scope(table: TableRef, scope: Scope, comment: Comment) -> bool:
    """Whether the comment answered the scope's definitions: the product's own, or a
    product of the group (its stored group when published, else its product's)."""
    if scope.kind is ScopeKind.PRODUCT:
        return comment.product_id == scope.id
    if comment.group_id is not None:
        return comment.group_id == scope.id
    return await product_group(table, comment.product_id) == scope.id


async def _move(table: TableRef, comment_id: str, remap: Remap, backoff: Backoff) -> bool:
    def decide(stored: Stored) -> Change:
        c = stored.comment
        answers = answers_of(c.facets)
        if not remap.touches(answers):
            return Change(c)  # moved by another run, or edited since the scan
        kept = frozenset(f for f in c.facets if f.kind is not FacetKind.ATTRIBUTE)
        values = frozenset(a.facet for a in remap.apply(answers))
        return Change(replace(c, facets=kept | values))

    try:
        applied = await apply(table, comment_id, decide, backoff=backoff)
    except CommentNotFound:
        return False
    return applied.after is not None and applied.after != applied.before.comment
