"""The access patterns declared as data agree with the table and with the planner."""

from __future__ import annotations

import importlib
from pathlib import Path

import pytest

from storage.model import patterns
from storage.model.comments import Direction, ListingFilter, Order, PageRequest, RatingCounts
from storage.model.indexes import Index, table_definition
from storage.reads.planner import plan_author, plan_listing, plan_queue

POS = "2025-06-01T12:00:00.000Z#0123456789abcdef0123456789abcdef"
COUNTS = RatingCounts("42", None, (120, 50, 80, 200, 550), (10, 5, 8, 20, 55))


def test_every_index_of_the_table_serves_a_pattern_and_no_pattern_names_another() -> None:
    defined = {g["IndexName"] for g in table_definition("t")["GlobalSecondaryIndexes"]}
    named = {k.index.value for p in patterns.READS for k in p.keys if k.index is not None}
    assert named == defined


@pytest.mark.parametrize("index", list(Index))
def test_each_listing_index_serves_one_listing_pattern(index: Index) -> None:
    serving = [p.code for p in patterns.READS if p.listing and index in {k.index for k in p.keys}]
    assert len(serving) == 1


def test_codes_are_unique() -> None:
    codes = [p.code for p in patterns.READS] + [w.code for w in patterns.WRITES]
    assert len(codes) == len(set(codes))


@pytest.mark.parametrize("write", patterns.WRITES, ids=lambda w: w.code)
def test_each_write_pattern_names_a_write_module(write: patterns.WritePattern) -> None:
    assert write.module.startswith("storage.writes.")
    assert importlib.import_module(write.module).__doc__
    assert write.items


def _listing(
    ratings: set[int] | None = None,
    language: str | None = None,
    verified: bool = False,
    position: str | None = None,
    order: Order = Order.NEWEST,
) -> tuple[str, ...]:
    listing = ListingFilter("42", language, frozenset(ratings) if ratings else None, verified)
    page = PageRequest(10, Direction.FORWARD, position)
    counts = RatingCounts("42", language, COUNTS.by_rating, COUNTS.verified)
    return plan_listing(listing, page, counts, order=order).patterns


def test_explain_names_the_patterns_a_page_follows() -> None:
    assert _listing() == ("AP1",)
    assert _listing(language="en") == ("AP2",)
    assert _listing({1, 2}) == ("AP3",)
    assert _listing({1, 2}, "en", position=POS) == ("AP3", "AP6")
    assert _listing(verified=True) == ("AP12",)
    assert _listing(order=Order.MOST_HELPFUL) == ("AP1", "AP13")
    assert _listing({4, 5}, order=Order.MOST_HELPFUL) == ("AP3", "AP13")
    assert "AP14" in _listing(order=Order.HIGHEST_RATING)
    assert plan_author("a", PageRequest()).patterns == ("AP15",)
    assert plan_queue(PageRequest()).patterns == ("AP16",)
    en = RatingCounts("42", "en", COUNTS.by_rating)
    text = plan_listing(ListingFilter("42", "en"), PageRequest(), en).explain()
    assert "patterns AP2 (one language)" in text


def test_the_architecture_page_shows_the_declaration() -> None:
    page = (Path(__file__).resolve().parents[3] / "docs" / "architecture.md").read_text()
    shown = page.split("<!-- patterns: begin -->\n")[1].split("<!-- patterns: end -->")[0]
    assert shown == patterns.markdown()
