"""Attribute definitions, and the summaries of comments' answers and topics, of a product's
own comments or of a group's (a ``Scope``)."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

from resolvers import read_set
from resolvers.context import Context
from resolvers.errors import BadUserInput
from storage.model import rules
from storage.model.attributes import VALUES_MAX, DefinitionSet
from storage.model.facets import FacetKind, Scope
from storage.model.topics import Topic
from storage.reads.facet_summaries import (
    AttributeDistribution,
    TopicMention,
    ValueCount,
    attribute_distributions,
    scope_counters,
    topic_mentions,
)
from storage.reads.groups import product_group
from storage.writes.facet_settings import StoredTaxonomy, read_definitions, read_taxonomy
from storage.writes.tagging import TaxonomyCache


def product_scope(pid: str) -> Scope:
    """Where a product's own answers and topics are counted."""
    return Scope.product(rules.validate_product_id(pid))


def group_scope(gid: str) -> Scope:
    return Scope.group(rules.validate_product_id(gid))


async def defining(ctx: Context, pid: str) -> Scope:
    """Where the attributes the product's reviewers answer are defined: its group's scope
    when it has one, else its own."""
    read_set.membership()
    read_set.taxonomy()
    group = await ctx.storage(product_group(ctx.table, rules.validate_product_id(pid)))
    return product_scope(pid) if group is None else group_scope(group)


async def definitions(ctx: Context, scope: Scope) -> DefinitionSet:
    """The attributes defined for a scope, in display order."""
    read_set.taxonomy()
    stored = await ctx.storage(read_definitions(ctx.table, scope))
    return stored.definitions


async def definitions_revision(ctx: Context, scope: Scope) -> int:
    """The revision a change of the scope's definitions is made from (0: never set)."""
    read_set.taxonomy()
    stored = await ctx.storage(read_definitions(ctx.table, scope))
    return stored.revision


async def taxonomy(ctx: Context) -> StoredTaxonomy:
    """The shop's topic taxonomy as stored (revision 0 and none: never set)."""
    read_set.taxonomy()
    return await ctx.storage(read_taxonomy(ctx.table))


def _ratings(ratings: list[int] | None) -> frozenset[int] | None:
    return rules.validate_ratings(None if ratings is None else frozenset(ratings))


async def attribute_summary(
    ctx: Context,
    scope: Scope,
    *,
    language: str | None,
    ratings: list[int] | None,
    verified_only: bool,
    defined_in: Scope | None = None,
) -> list[AttributeDistribution]:
    """Exact distributions of the answers counted in ``scope``, in the order of the
    definitions of ``defined_in`` (the scope's own by default; a grouped product's are its
    group's): every defined value (zero when no comment gave it), then values no longer
    defined that comments still hold."""
    lang = None if language is None else rules.validate_language(language)
    asked = _ratings(ratings)
    counters, stored = await asyncio.gather(
        ctx.storage(scope_counters(ctx.table, scope, FacetKind.ATTRIBUTE)),
        ctx.storage(read_definitions(ctx.table, defined_in or scope)),
    )
    found = attribute_distributions(
        counters, language=lang, ratings=asked, verified_only=verified_only
    )
    return in_display_order(found, stored.definitions)


def in_display_order(
    found: list[AttributeDistribution], defined: DefinitionSet
) -> list[AttributeDistribution]:
    """Distributions as a shop shows them: each defined attribute with each defined value
    in order (zero counts included), then values it no longer defines that comments still
    hold (most given first, at most as many as it defines). An attribute no longer defined
    is left out: moderators remap its answers."""
    by_key = {d.key: d for d in found}
    shown = []
    for definition in defined:
        have = by_key.get(definition.key)
        counts = {v.value: v.count for v in have.values} if have else {}
        values = [ValueCount(v.value, counts.pop(v.value, 0)) for v in definition.values]
        retired = sorted(counts.items(), key=lambda vc: (-vc[1], vc[0]))[:VALUES_MAX]
        values += [ValueCount(value, n) for value, n in retired]
        answered = have.answered if have else 0
        shown.append(AttributeDistribution(definition.key, answered, tuple(values)))
    return shown


@dataclass(frozen=True, slots=True)
class Mention:
    """A topic mentioned, with its taxonomy entry for labels (None: no longer in it)."""

    counts: TopicMention
    topic: Topic | None
    default_language: str


async def topics(
    ctx: Context,
    scope: Scope,
    *,
    language: str | None,
    ratings: list[int] | None,
    verified_only: bool,
    first: int | None,
) -> list[Mention]:
    """The topics the scope's comments mention, most mentioned first, exactly counted. The
    labels come from the process's copy of the taxonomy (the one writes tag with: its
    small head item is checked every few seconds, the taxonomy itself read only when it
    changed), not from a read of the whole taxonomy per request."""
    if first is not None and first < 0:
        raise BadUserInput("first must not be negative")
    lang = None if language is None else rules.validate_language(language)
    asked = _ratings(ratings)
    counters, tagger = await asyncio.gather(
        ctx.storage(scope_counters(ctx.table, scope, FacetKind.TOPIC)),
        ctx.storage(ctx.table.memory(TaxonomyCache).tagger(ctx.table)),
    )
    found = topic_mentions(
        counters, language=lang, ratings=asked, verified_only=verified_only, first=first
    )
    taxonomy = None if tagger is None else tagger.taxonomy
    entries = {t.key: t for t in taxonomy.topics} if taxonomy is not None else {}
    default = taxonomy.default_language if taxonomy is not None else "en"
    return [Mention(m, entries.get(m.topic), default) for m in found]
