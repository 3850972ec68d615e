"""A scope's summaries from its facet counter items: how its published comments answered
each attribute (``attributeSummary``) and which topics they mention (``topics``), exact for
any language, ratings and verified filter.

All counter items of one kind lie in the scope's own partition under one sort-key prefix
(``F#a:`` answers, ``F#t:`` topics), so a summary is one Query of that prefix (more pages
only past DynamoDB's 1 MB a response), summed over the ratings and language asked for.
How many items it reads is bounded by the definitions' and the taxonomy's limits
(``storage.model.attributes``, ``storage.model.topics``), and every read is charged to
the request that asks.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from storage.base.expressions import Attr, query_request
from storage.engine.table import TableRef
from storage.model import rules
from storage.model.attributes import VALUES_MAX
from storage.model.facet_counts import FacetCounts
from storage.model.facets import COUNTER_PREFIX, FacetKind, FacetValue, Scope
from storage.model.topics import TOPICS_MAX

# Ratings a topic's mention counts as positive and as negative.
POSITIVE = frozenset({4, 5})
NEGATIVE = frozenset({1, 2})
# A guard against an engine that pages forever: far more than the limits allow.
MAX_PAGES = 64
# Values a distribution shows at most: every defined one, and as many retired ones (the
# most given first) that comments still hold until a remap moves them.
SUMMARY_VALUES_MAX = 2 * VALUES_MAX


@dataclass(frozen=True, slots=True)
class ValueCount:
    value: str
    count: int


@dataclass(frozen=True, slots=True)
class AttributeDistribution:
    """How the comments in scope answered one attribute: exact counts per value."""

    key: str
    answered: int
    values: tuple[ValueCount, ...]  # by value, as stored: the caller orders them for display


@dataclass(frozen=True, slots=True)
class TopicMention:
    topic: str
    count: int
    positive: int  # of those, rated 4 or 5
    negative: int  # rated 1 or 2


async def scope_counters(table: TableRef, scope: Scope, kind: FacetKind) -> list[FacetCounts]:
    """Every counter item of ``kind`` (answers or topics) in ``scope``, by token."""
    if kind not in (FacetKind.ATTRIBUTE, FacetKind.TOPIC):
        raise ValueError("summaries are of answers or topics")
    prefix = f"{COUNTER_PREFIX}{kind.value}:"
    params = query_request(
        table.name,
        index=None,
        key=Attr("PK").eq(scope.pk) & Attr("SK").between(prefix, prefix + "\uffff"),
        forward=True,
        limit=1000,
    )
    found: list[FacetCounts] = []
    for _ in range(MAX_PAGES):
        response = await table.client.query(**params)
        for item in response.get("Items", []):
            value = FacetValue.parse(item["SK"]["S"].removeprefix(COUNTER_PREFIX))
            found.append(FacetCounts.of_item(scope, value, item))
        if "LastEvaluatedKey" not in response:
            return found
        params["ExclusiveStartKey"] = response["LastEvaluatedKey"]
    raise ValueError(f"{scope.token}: more counter items than any limit allows")


def _count(
    counts: FacetCounts,
    language: str | None,
    ratings: Iterable[int],
    verified_only: bool,
) -> int:
    kind = "v" if verified_only else "c"
    return sum(counts.count(kind, language, r) for r in ratings)


def attribute_distributions(
    counters: Iterable[FacetCounts],
    *,
    language: str | None = None,
    ratings: frozenset[int] | None = None,
    verified_only: bool = False,
) -> list[AttributeDistribution]:
    """Per attribute key (sorted), the comments that answered it and how, for the filter.
    A comment answers an attribute at most once, so ``answered`` is the sum of its values.
    Values no comment of the filter gave are left out (the caller adds the defined ones
    at zero)."""
    asked = sorted(ratings or rules.RATINGS)
    by_key: dict[str, list[ValueCount]] = {}
    for counts in counters:
        if counts.value.kind is not FacetKind.ATTRIBUTE:
            continue
        n = _count(counts, language, asked, verified_only)
        if n:
            by_key.setdefault(counts.value.key, []).append(ValueCount(counts.value.value, n))
    return [
        AttributeDistribution(key, sum(v.count for v in values), tuple(values))
        for key, values in sorted(by_key.items())
    ]


def topic_mentions(
    counters: Iterable[FacetCounts],
    *,
    language: str | None = None,
    ratings: frozenset[int] | None = None,
    verified_only: bool = False,
    first: int | None = None,
) -> list[TopicMention]:
    """Topics the filtered comments mention, most mentioned first (then by key), with how
    many of those are positive (4-5 stars) and negative (1-2 stars); ``first`` of them, and
    never more than the taxonomy may hold (topics it no longer has count until re-tagged)."""
    asked = set(ratings or rules.RATINGS)
    found = []
    for counts in counters:
        if counts.value.kind is not FacetKind.TOPIC:
            continue
        n = _count(counts, language, asked, verified_only)
        if not n:
            continue
        positive = _count(counts, language, asked & POSITIVE, verified_only)
        negative = _count(counts, language, asked & NEGATIVE, verified_only)
        found.append(TopicMention(counts.value.key, n, positive, negative))
    found.sort(key=lambda m: (-m.count, m.topic))
    shown = TOPICS_MAX if first is None else max(0, min(first, TOPICS_MAX))
    return found[:shown]
