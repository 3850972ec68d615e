"""Facet listings on DynamoDB Local, written through the real write paths: every order both
ways, with one facet value, several, without incentivized reviews, verified only, a
language and ratings, walked page by page through cursors, equal brute force; their
counts and the scope's summaries equal a recount; EXPLAIN names the pattern and the facet.
"""

from __future__ import annotations

import random
from dataclasses import replace
from typing import Any

import pytest

from storage.base.errors import InvalidFacet
from storage.engine.table import TableRef
from storage.model.comments import (
    Comment,
    Direction,
    ListingFilter,
    ModerationMode,
    NewComment,
    Order,
    PageRequest,
)
from storage.model.facets import FacetKind, FacetValue, Scope
from storage.ops.group_move import move_product
from storage.reads.facet_reader import facet_listing_counts, read_facet_listing
from storage.reads.facet_summaries import (
    attribute_distributions,
    scope_counters,
    topic_mentions,
)
from storage.reads.planner import Strategy
from storage.reads.snapshots import PlanMemory
from storage.writes import create_comment, delete_comment
from storage.writes.edit import Edit, edit_comment
from storage.writes.moderate import Decision, moderate_comment
from storage.writes.state import get_comment
from tests.helpers import FAST, oracle, own_product_id, stamp, walk

SMALL = FacetValue.attribute("fit", "small")
LARGE = FacetValue.attribute("fit", "large")
BATTERY = FacetValue.topic("battery")
SCREEN = FacetValue.topic("screen")
VALUES = [SMALL, LARGE, BATTERY, SCREEN]
ORDERS = [Order.NEWEST, Order.OLDEST, Order.HIGHEST_RATING, Order.LOWEST_RATING]


async def _comments(table: TableRef) -> tuple[str, list[Comment]]:
    """About 70 comments of one product in every state, with random facet values, and a
    few of another product with the same values (which no listing of the first may show)."""
    rnd = random.Random(27)
    pid, other = own_product_id(), own_product_id()
    made: list[Comment] = []
    for n in range(78):
        fit = rnd.choice([None, SMALL, SMALL, LARGE])
        topics = {v for v in (BATTERY, SCREEN) if rnd.random() < 0.45}
        facets = frozenset(({fit} if fit else set()) | topics)
        new = NewComment(
            other if n % 13 == 0 else pid,
            rnd.choice(["en", "en", "de"]),
            rnd.choice([1, 2, 4, 5, 5, 5]),  # no 3-star comments: a rating counted zero
            f"body {n}",
            f"author-{n}",
            verified=rnd.random() < 0.5,
            created_at=stamp(n % 30),  # many ties
            facets=facets,
            incentivized=rnd.random() < 0.25,
        )
        mode = ModerationMode.PRE if n % 11 == 0 else ModerationMode.POST
        made.append((await create_comment(table, new, moderation=mode, backoff=FAST)).comment)
    # Some leave the listings, some move within them.
    for c in made[1:70:9]:
        await moderate_comment(table, c.comment_id, Decision.REJECT, moderator="m", backoff=FAST)
    for c in made[2:70:10]:
        await delete_comment(table, c.comment_id, author_id=c.author_id, backoff=FAST)
    for c in made[3:70:8]:
        edit = Edit(rating=3 if c.rating != 3 else 4, language="de")
        await edit_comment(table, c.comment_id, edit, author_id=c.author_id, backoff=FAST)

    now = [await get_comment(table, c.comment_id) for c in made]
    return pid, [c for c in now if c is not None]


@pytest.fixture(scope="module")
async def data(table: TableRef) -> tuple[str, list[Comment]]:
    return await _comments(table)


LISTINGS = [
    {"facets": {SMALL}},
    {"facets": {BATTERY}, "language": "de"},
    {"facets": {SMALL, BATTERY}},
    {"facets": {LARGE, SCREEN}, "language": "en", "ratings": {4, 5}},
    {"facets": {SCREEN}, "verified_only": True},
    {"facets": {BATTERY}, "exclude_incentivized": True, "ratings": {1, 2, 3}},
    {"facets": {SMALL}, "exclude_incentivized": True, "verified_only": True},
    {"exclude_incentivized": True},
    {"exclude_incentivized": True, "language": "en", "verified_only": True},
]


def _listing(pid: str, spec: dict[str, Any]) -> ListingFilter:
    ratings = spec.get("ratings")
    return ListingFilter(
        pid,
        spec.get("language"),
        frozenset(ratings) if ratings is not None else None,
        bool(spec.get("verified_only", False)),
        frozenset(spec.get("facets", set())),
        bool(spec.get("exclude_incentivized", False)),
    )


def _id(spec: dict[str, Any]) -> str:
    """A test id the same in every process (sets print in their hash order)."""
    parts = []
    for name, value in sorted(spec.items()):
        if isinstance(value, set | frozenset):
            value = "+".join(
                sorted(v.token if isinstance(v, FacetValue) else str(v) for v in value)
            )
        parts.append(f"{name}={value}")
    return ",".join(parts)


@pytest.mark.parametrize("spec", LISTINGS, ids=_id)
async def test_every_order_both_ways_equals_brute_force(
    table: TableRef, data: tuple[str, list[Comment]], spec: dict[str, Any]
) -> None:
    pid, comments = data
    listing = _listing(pid, spec)
    want_any = False
    for order in ORDERS:
        want = [c.comment_id for c in oracle(comments, listing, order)]
        want_any = want_any or bool(want)
        for direction in Direction:
            got, sizes = await walk(table, listing, 4, direction, order=order)
            assert [c.comment_id for c in got] == want, (order, direction)
            # Every page full but the last read (first in the list when walked backward).
            inner = sizes[:-1] if direction is Direction.FORWARD else sizes[1:]
            assert all(n == 4 for n in inner), sizes
    assert want_any  # the data gives every listing something to list
    counts = await facet_listing_counts(table, listing)
    expected = len(oracle(comments, listing))
    if len(listing.facets) <= 1:
        assert counts.total(listing) == expected
    else:
        assert counts.total(listing) is None  # counted from entries, not counters


async def test_a_page_shows_the_comment_as_it_is(
    table: TableRef, data: tuple[str, list[Comment]]
) -> None:
    pid, comments = data
    listing = _listing(pid, {"facets": {BATTERY}})
    _, page = await read_facet_listing(table, listing, PageRequest(50))
    by_id = {c.comment_id: c for c in comments}
    assert page.comments
    for shown in page.comments:
        assert shown == by_id[shown.comment_id]  # author, facets, incentivized and all


async def test_explain_names_the_pattern_and_the_facet(
    table: TableRef, data: tuple[str, list[Comment]]
) -> None:
    pid, _ = data
    listing = _listing(pid, {"facets": {SMALL, BATTERY}, "language": "en"})
    _, page = await read_facet_listing(table, listing, PageRequest(5))
    text = page.plan.explain()
    assert "AP19" in text
    primary = page.plan.facet
    if page.plan.strategy is Strategy.FILTERED_SCAN_OF_INDEX:
        assert "facets CONTAINS a:fit=small" in text
        assert "facets CONTAINS t:battery" in text
    else:
        assert primary in (SMALL, BATTERY)
        assert f"facet={primary.token} scope=P:{pid}" in text
        other = BATTERY if primary == SMALL else SMALL
        assert f"facets CONTAINS {other.token}" in text


async def test_the_most_helpful_order_is_refused_on_facet_listings(
    table: TableRef, data: tuple[str, list[Comment]]
) -> None:
    pid, _ = data
    with pytest.raises(InvalidFacet):
        await read_facet_listing(
            table, _listing(pid, {"facets": {SMALL}}), PageRequest(5), order=Order.MOST_HELPFUL
        )


async def test_a_warm_page_takes_one_storage_round(
    table: TableRef, data: tuple[str, list[Comment]]
) -> None:
    pid, _ = data
    listing = _listing(pid, {"facets": {SMALL}, "ratings": {4, 5}})
    table.memory(PlanMemory).forget()
    _, cold = await read_facet_listing(table, listing, PageRequest(5))
    assert cold.counts_round
    _, warm = await read_facet_listing(table, listing, PageRequest(5))
    assert not warm.counts_round
    assert warm.storage_rounds == 1
    assert [c.comment_id for c in warm.comments] == [c.comment_id for c in cold.comments]


async def test_summaries_equal_a_recount(table: TableRef, data: tuple[str, list[Comment]]) -> None:
    pid, comments = data
    scope = Scope.product(pid)
    answers = await scope_counters(table, scope, FacetKind.ATTRIBUTE)
    topics = await scope_counters(table, scope, FacetKind.TOPIC)
    for language in (None, "de"):
        for ratings in (None, frozenset({1, 2})):
            for verified in (False, True):
                listed = oracle(comments, ListingFilter(pid, language, ratings, verified))
                dist = attribute_distributions(
                    answers, language=language, ratings=ratings, verified_only=verified
                )
                fits = [c for c in listed if c.facets & {SMALL, LARGE}]
                want = {
                    v.value: sum(1 for c in fits if v in c.facets)
                    for v in (SMALL, LARGE)
                    if any(v in c.facets for c in fits)
                }
                if fits:
                    (fit,) = dist
                    assert fit.key == "fit"
                    assert fit.answered == len(fits)
                    assert {v.value: v.count for v in fit.values} == want
                else:
                    assert dist == []
                mentions = topic_mentions(
                    topics, language=language, ratings=ratings, verified_only=verified
                )
                expected = []
                for topic in (BATTERY, SCREEN):
                    having = [c for c in listed if topic in c.facets]
                    if having:
                        positive = sum(1 for c in having if c.rating >= 4)
                        negative = sum(1 for c in having if c.rating <= 2)
                        expected.append((topic.key, len(having), positive, negative))
                expected.sort(key=lambda m: (-m[1], m[0]))
                assert [(m.topic, m.count, m.positive, m.negative) for m in mentions] == expected


def test_a_listing_refuses_values_it_cannot_filter_by() -> None:
    for value in (FacetValue(FacetKind.GROUP_ALL), FacetValue(FacetKind.INCENTIVIZED)):
        with pytest.raises(InvalidFacet):
            ListingFilter("p1", facets=frozenset({value}))
    too_many = frozenset(FacetValue.topic(f"t{n}") for n in range(10))
    with pytest.raises(InvalidFacet):
        ListingFilter("p1", facets=too_many)


@pytest.fixture(scope="module")
async def grouped(table: TableRef) -> tuple[str, list[Comment]]:
    """A group of two variants: one moved in with its comments, one in it from the start,
    and a third product outside it."""
    rnd = random.Random(28)
    group = f"g-{own_product_id()}"
    red, blue, other = own_product_id(), own_product_id(), own_product_id()
    await move_product(table, blue, group)
    made: list[Comment] = []
    for n in range(45):
        topics = {v for v in (BATTERY, SCREEN) if rnd.random() < 0.5}
        new = NewComment(
            [red, blue, other][n % 3],
            rnd.choice(["en", "de"]),
            rnd.choice([1, 2, 4, 5, 5]),
            f"body {n}",
            f"author-{n}",
            verified=rnd.random() < 0.5,
            created_at=stamp(n % 20),
            facets=frozenset(topics | ({SMALL} if n % 4 == 0 else set())),
            incentivized=rnd.random() < 0.2,
        )
        made.append((await create_comment(table, new, backoff=FAST)).comment)
    await move_product(table, red, group)  # its comments move in after they were written
    now = [await get_comment(table, c.comment_id) for c in made]
    return group, [c for c in now if c is not None]


GROUP_LISTINGS = [
    {},
    {"language": "de"},
    {"facets": {BATTERY}, "ratings": {4, 5}},
    {"facets": {BATTERY, SCREEN}, "exclude_incentivized": True},
    {"verified_only": True, "facets": {SMALL}},
]


@pytest.mark.parametrize("spec", GROUP_LISTINGS, ids=_id)
async def test_a_groups_listing_is_every_variants_comments(
    table: TableRef, grouped: tuple[str, list[Comment]], spec: dict[str, Any]
) -> None:
    group, comments = grouped
    listing = replace(_listing(group, spec), of_group=True)
    assert any(c.group_id == group for c in comments)
    for order in ORDERS:
        want = [c.comment_id for c in oracle(comments, listing, order)]
        for direction in Direction:
            got, _ = await walk(table, listing, 4, direction, order=order)
            assert [c.comment_id for c in got] == want, (order, direction)
    counts = await facet_listing_counts(table, listing)
    if len(listing.facets) <= 1:
        assert counts.total(listing) == len(oracle(comments, listing))


async def test_a_rare_second_value_is_read_up_to_the_cut_in_one_round(table: TableRef) -> None:
    # The primary value's partitions hold the second value on one comment in ten, though
    # overall it is common (the plan, taking the values as independent, expects half):
    # the first round falls short, and each top-up reads its partition up to the cut key
    # whatever the filter leaves of it, instead of a page's worth of items at a time.
    pid = own_product_id()
    made = []
    for n in range(260):
        primary = n % 3 == 0
        second = (primary and n % 30 == 0) or (not primary and n % 2 == 0)
        facets = frozenset(({SMALL} if primary else set()) | ({BATTERY} if second else set()))
        new = NewComment(pid, "en", [5, 4, 1][n % 3 // 1 % 3], f"b{n}", f"a{n}", facets=facets)
        made.append((await create_comment(table, new, backoff=FAST)).comment)
    listing = ListingFilter(pid, facets=frozenset({SMALL, BATTERY}))
    table.memory(PlanMemory).forget()
    got, _ = await walk(table, listing, 3, Direction.FORWARD)
    assert [c.comment_id for c in got] == [c.comment_id for c in oracle(made, listing)]
    _, page = await read_facet_listing(table, listing, PageRequest(3))
    assert page.plan.facet == SMALL
    assert page.rounds <= 2, [(q.round, q.limit, q.items_read) for q in page.executed]
