"""What moderators and the merchant role change about facets: a scope's attribute
definitions, the shop's topic taxonomy, and a product's group. Each change is made from the
revision its author read (a change made meanwhile by someone else is CHANGED, nothing
written), and every problem of the input is reported at once with its path."""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass

from resolvers.auth import Viewer
from resolvers.comments.rates import take_turn
from resolvers.comments.writes import viewer
from resolvers.context import Context
from resolvers.errors import Forbidden
from resolvers.user_errors import Checks, Problem, ProblemCode, Problems, field_problems
from storage.base.errors import GroupMoveUnfinished, InvalidInput
from storage.model import rules
from storage.model.attributes import DefinitionSet, parse_definitions
from storage.model.facets import Scope, ScopeKind
from storage.model.problems import InvalidFields
from storage.model.topics import TAXONOMY_MAX_BYTES, Taxonomy
from storage.ops.group_move import move_product
from storage.reads.groups import product_group
from storage.writes.facet_settings import (
    SettingsChanged,
    StoredDefinitions,
    StoredTaxonomy,
    save_definitions,
    save_taxonomy,
)
from storage.writes.rates import Family

# How long one setProductGroup request moves comments before it answers; an unfinished
# move goes on with the next call (or `comments move-group`), from where it stopped.
MOVE_SECONDS = 10.0


def _shop_staff(ctx: Context, what: str) -> Viewer:
    who = viewer(ctx)
    if not (who.is_moderator or who.is_merchant):
        raise Forbidden(f"only moderators and merchants may change {what}")
    return who


def scope_of(product_id: str | None, group_id: str | None, checks: Checks) -> Scope | None:
    """The scope an input names: exactly one of a product and a group."""
    field = ("input",)
    if (product_id is None) == (group_id is None):
        checks.problems.append(
            Problem(field, "name exactly one of productId and groupId", ProblemCode.INVALID)
        )
        return None
    if product_id is not None:
        pid = checks.check((*field, "productId"), lambda: rules.validate_product_id(product_id))
        return None if pid is None else Scope.product(pid)
    assert group_id is not None
    gid = checks.check((*field, "groupId"), lambda: rules.validate_product_id(group_id))
    return None if gid is None else Scope.group(gid)


async def set_definitions(
    ctx: Context,
    *,
    product_id: str | None,
    group_id: str | None,
    definitions: list[dict[str, object]],
    revision: int,
) -> StoredDefinitions:
    """Replace a scope's attribute definitions, made from ``revision``. Values no longer
    offered are retired: answers keep counting under them until remapped."""
    who = _shop_staff(ctx, "attribute definitions")
    checks = Checks()
    scope = scope_of(product_id, group_id, checks)
    parsed: DefinitionSet | None = None
    try:
        parsed = parse_definitions(definitions)
    except InvalidFields as exc:
        checks.problems += field_problems(exc, ("input",)).problems
    checks.raise_any()
    assert scope is not None
    assert parsed is not None
    if scope.kind is ScopeKind.PRODUCT:
        group = await ctx.storage(product_group(ctx.table, scope.id))
        if group is not None:
            message = f"the product is in group {group!r}: its reviewers answer the group's"
            raise Problems([Problem(("input", "productId"), message, ProblemCode.INVALID)])
    await take_turn(ctx, who, Family.MODERATE)
    try:
        return await ctx.storage(save_definitions(ctx.table, scope, parsed, revision=revision))
    except InvalidFields as exc:
        raise field_problems(exc, ("input",)) from exc
    except SettingsChanged as exc:
        raise _changed(exc, ("input", "revision")) from exc


async def set_taxonomy(ctx: Context, *, document: str, revision: int) -> StoredTaxonomy:
    """Replace the shop's topic taxonomy (the JSON document ``comments taxonomy load``
    reads), made from ``revision``. Comments are then re-tagged by ``comments retag``."""
    who = _shop_staff(ctx, "the topic taxonomy")
    field = ("input", "document")
    if len(document.encode()) > TAXONOMY_MAX_BYTES:
        raise Problems(
            [
                Problem(
                    field,
                    f"the taxonomy is at most {TAXONOMY_MAX_BYTES // 1024} KiB",
                    ProblemCode.TOO_LONG,
                )
            ]
        )
    try:
        taxonomy = Taxonomy.from_document(json.loads(document))
    except json.JSONDecodeError as exc:
        raise Problems([Problem(field, f"not JSON: {exc.msg}", ProblemCode.INVALID)]) from exc
    except InvalidInput as exc:
        raise Problems([Problem(field, str(exc), ProblemCode.INVALID)]) from exc
    await take_turn(ctx, who, Family.MODERATE)
    try:
        return await ctx.storage(save_taxonomy(ctx.table, taxonomy, revision=revision))
    except SettingsChanged as exc:
        raise _changed(exc, ("input", "revision")) from exc


@dataclass(frozen=True, slots=True)
class GroupChange:
    product_id: str
    group_id: str | None
    # Every published comment of the product counts in its new group.
    complete: bool


async def set_group(ctx: Context, *, product_id: str, group_id: str | None) -> GroupChange:
    """Put a product in a group (None: in none) and move its published comments there,
    for at most ``MOVE_SECONDS``; a call for a move left unfinished goes on with it."""
    who = _shop_staff(ctx, "product groups")
    checks = Checks()
    pid = checks.check(("input", "productId"), lambda: rules.validate_product_id(product_id))
    gid = None
    if group_id is not None:
        gid = checks.check(("input", "groupId"), lambda: rules.validate_product_id(group_id))
    checks.raise_any()
    assert pid is not None
    await take_turn(ctx, who, Family.MODERATE)
    # The move writes one transaction per comment: the application's own table, bounded by
    # time rather than by the request's budget of calls (it goes on where it stopped).
    # Stopped at the bound (each comment moves in a transaction of its own: one cut off
    # committed whole or not at all), it goes on with the next call.
    table = ctx.app_table if ctx.app_table is not None else ctx.table
    try:
        await asyncio.wait_for(move_product(table, pid, gid), MOVE_SECONDS)
    except (TimeoutError, GroupMoveUnfinished):
        return GroupChange(pid, gid, False)
    return GroupChange(pid, gid, True)


def _changed(exc: SettingsChanged, field: tuple[str, ...]) -> Problems:
    return Problems([Problem(field, str(exc), ProblemCode.CHANGED)])
