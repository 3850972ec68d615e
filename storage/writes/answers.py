"""A reviewer's answers to the shop's questions, checked against the definitions that apply
to the product as they are stored when the write is made.

The definitions are read (strongly consistent, one GetItem of at most 16 read units) by
every create or edit that gives answers, and only by those: never cached. A cache would
need every write to condition on the revision it validated against, which in a
transaction is a ConditionCheck on the definitions item, charged its whole size in write
units (up to 128 for a 64 KB set) and a conflict with every moderator's save; the read is
cheaper and leaves the transaction as it is. A save racing a write can still commit between
the write's read and its commit: the answer then stands as if given just before the save
(a value the save retired stays stored and counted under it, as every earlier answer of
that value does), which is a state the definitions' rules already allow.

A grouped product answers its group's questions: ``definitions_scope`` is the one place
that decides which scope's definitions apply.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from storage.engine.table import TableRef
from storage.model.attributes import Answer, DefinitionSet, validate_answers
from storage.model.facets import FacetKind, FacetValue, Scope
from storage.writes.facet_settings import read_definitions
from storage.writes.membership import membership_for_write
from storage.writes.transaction import CallBudget


async def definitions_scope(table: TableRef, product_id: str) -> Scope:
    """The scope whose definitions the product's reviewers answer: its group's when it has
    one (as this process last saw its membership: a product that moved since answers the
    definitions it had a moment ago, which stay valid answers), else its own."""
    membership = await membership_for_write(table, product_id)
    if membership.group_id is not None:
        return Scope.group(membership.group_id)
    return Scope.product(product_id)


async def definitions_for(
    table: TableRef, product_id: str, *, budget: CallBudget | None = None
) -> DefinitionSet:
    """The definitions that apply to the product, as stored now (strongly consistent)."""
    if budget is not None:
        budget.spend()
    scope = await definitions_scope(table, product_id)
    return (await read_definitions(table, scope, consistent=True)).definitions


async def check_answers(
    table: TableRef,
    product_id: str,
    answers: Sequence[object],
    *,
    stored: Iterable[Answer] = (),
    field: str = "attributes",
    budget: CallBudget | None = None,
) -> tuple[Answer, ...]:
    """The answers as stored (sorted by key), valid against the definitions that apply to
    the product now, or ``InvalidFields`` naming every problem (``attributes[1].value``,
    with the codes of ``storage.model.attributes.Code``). ``stored``: the comment's answers
    before an edit (one resent unchanged stays, even when its value is retired). An empty
    list reads nothing."""
    if isinstance(answers, list | tuple) and not answers:
        return ()
    definitions = await definitions_for(table, product_id, budget=budget)
    return validate_answers(definitions, answers, stored=stored, field=field)


def with_answers(facets: frozenset[FacetValue], answers: Iterable[Answer]) -> frozenset[FacetValue]:
    """A comment's facet values with its answers replaced by ``answers``."""
    kept = {f for f in facets if f.kind is not FacetKind.ATTRIBUTE}
    return frozenset(kept | {a.facet for a in answers})
