"""Applying a catalogue file's groups (``storage.model.catalogue``): each product line
puts its product in the group it names, or in none when it names none, by a group move
(``storage.ops.group_move``); products the file does not name are left as they are.

Lines are read one at a time; a bad line, or a product whose move failed, is reported
with its line number and the rest goes on. Running the same file again is safe and
finishes whatever an interrupted run left: a product already in its group with its move
complete costs one read.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from storage.base.errors import StorageError
from storage.engine.retry import DEFAULT_BACKOFF, Backoff
from storage.engine.table import TableRef
from storage.model.catalogue import LineProblem, parse_catalogue
from storage.ops.group_move import move_product
from storage.writes.membership import read_membership

# A progress line at least every this many products, moved or not.
PROGRESS_EVERY = 1000


@dataclass(frozen=True, slots=True)
class CatalogueProblem:
    line: int
    product_id: str | None  # None: the line itself was refused
    reason: str

    def describe(self) -> str:
        what = f" ({self.product_id})" if self.product_id else ""
        return f"line {self.line}{what}: {self.reason}"


@dataclass
class CatalogueOutcome:
    products: int = 0  # good lines
    changed: int = 0  # products whose group this run changed
    finished: int = 0  # products whose unfinished move this run finished
    unchanged: int = 0
    moved: int = 0  # comments moved
    problems: list[CatalogueProblem] = field(default_factory=list)

    def describe(self) -> str:
        return (
            f"{self.products} products: {self.changed} changed group, {self.finished} "
            f"unfinished moves finished, {self.unchanged} unchanged; {self.moved} comments "
            f"moved; {len(self.problems)} problem line(s)"
        )


async def apply_catalogue(
    table: TableRef,
    lines: Iterable[str],
    *,
    progress: Callable[[str], None] | None = None,
    on_problem: Callable[[CatalogueProblem], None] | None = None,
    passes: int = 8,
    backoff: Backoff = DEFAULT_BACKOFF,
) -> CatalogueOutcome:
    """Put every product of the file in its group, moving its comments; every problem is
    reported (``on_problem``) with its line, and the other lines still apply."""
    say = progress or (lambda _line: None)
    out = CatalogueOutcome()

    def problem(found: CatalogueProblem) -> None:
        out.problems.append(found)
        if on_problem is not None:
            on_problem(found)

    for entry in parse_catalogue(lines):
        if isinstance(entry, LineProblem):
            problem(CatalogueProblem(entry.line, None, entry.reason))
            continue
        out.products += 1
        if out.products % PROGRESS_EVERY == 0:
            say(f"line {entry.line}: {out.describe()}")
        try:
            membership = await read_membership(table, entry.product_id)
            if membership.group_id == entry.group_id and not membership.moving:
                out.unchanged += 1
                continue
            result = await move_product(
                table,
                entry.product_id,
                entry.group_id,
                progress=say,
                passes=passes,
                backoff=backoff,
            )
        except StorageError as exc:
            problem(CatalogueProblem(entry.line, entry.product_id, str(exc)))
            continue
        out.moved += result.moved
        if result.changed:
            out.changed += 1
        else:
            out.finished += 1
        say(f"line {entry.line}: {result.describe()}")
    return out
