"""The planner as a table: (filter, stats, page) -> strategy, index, partitions, limits, skips."""

from __future__ import annotations

from dataclasses import FrozenInstanceError

import pytest

from storage.model.comments import Direction, ListingFilter, PageRequest, RatingCounts
from storage.model.indexes import Index
from storage.reads.planner import Plan, Strategy, Tuning, plan_listing, plan_unfiltered

POS = "2025-06-01T12:00:00.000Z#0123456789abcdef0123456789abcdef"
# J-shaped: ratings 1..5
SKEWED = (120, 50, 80, 200, 550)


def counts(by_rating: tuple[int, int, int, int, int], language: str | None = None) -> RatingCounts:
    return RatingCounts("42", language, by_rating)


def plan(
    ratings: set[int] | None = None,
    language: str | None = None,
    by_rating: tuple[int, int, int, int, int] = SKEWED,
    size: int = 20,
    position: str | None = None,
    direction: Direction = Direction.FORWARD,
) -> Plan:
    listing = ListingFilter("42", language, frozenset(ratings) if ratings else None)
    return plan_listing(
        listing, PageRequest(size, direction, position), counts(by_rating, language)
    )


@pytest.mark.parametrize(
    ("ratings", "language", "strategy", "index", "partitions"),
    [
        (None, None, Strategy.ALL, Index.ALL, ["PRODUCT#42"]),
        ({1, 2, 3, 4, 5}, None, Strategy.ALL, Index.ALL, ["PRODUCT#42"]),
        (None, "en", Strategy.BY_LANG, Index.BY_LANG, ["PRODUCT#42/en"]),
        ({1, 2, 3, 4, 5}, "en", Strategy.BY_LANG, Index.BY_LANG, ["PRODUCT#42/en"]),
        ({2}, None, Strategy.BY_RATING, Index.BY_RATING, ["PRODUCT#42/2"]),
        ({2}, "en", Strategy.BY_LANG_AND_RATING, Index.BY_LANG_AND_RATING, ["PRODUCT#42/en/2"]),
        ({1, 2}, None, Strategy.FAN_OUT, Index.BY_RATING, ["PRODUCT#42/2", "PRODUCT#42/1"]),
        (
            {5, 3, 1},
            "en",
            Strategy.FAN_OUT,
            Index.BY_LANG_AND_RATING,
            ["PRODUCT#42/en/5", "PRODUCT#42/en/3", "PRODUCT#42/en/1"],
        ),
    ],
)
def test_strategy_and_partitions(
    ratings: set[int] | None,
    language: str | None,
    strategy: Strategy,
    index: Index,
    partitions: list[str],
) -> None:
    p = plan(ratings, language)
    assert p.strategy is strategy
    assert p.index is index
    assert [q.partition_key for q in p.queries] == partitions
    assert all(q.index is index for q in p.queries)


@pytest.mark.parametrize(
    ("ratings", "by_rating", "strategy", "partitions", "skipped"),
    [
        # Zero-count ratings are skipped; one left is a single query.
        ({1, 3}, (0, 5, 7, 9, 11), Strategy.BY_RATING, ["PRODUCT#42/3"], (1,)),
        ({1, 2, 3}, (0, 0, 7, 9, 11), Strategy.BY_RATING, ["PRODUCT#42/3"], (2, 1)),
        # None left: an empty page and no query at all.
        ({1, 2}, (0, 0, 7, 9, 11), Strategy.EMPTY, [], (2, 1)),
        (None, (0, 0, 0, 0, 0), Strategy.EMPTY, [], ()),
        # Two left of three asked: a fan-out over those two.
        ({1, 2, 4}, (3, 0, 7, 9, 11), Strategy.FAN_OUT, ["PRODUCT#42/4", "PRODUCT#42/1"], (2,)),
    ],
)
def test_zero_count_ratings_skipped(
    ratings: set[int],
    by_rating: tuple[int, int, int, int, int],
    strategy: Strategy,
    partitions: list[str],
    skipped: tuple[int, ...],
) -> None:
    p = plan(ratings, by_rating=by_rating)
    assert p.strategy is strategy
    assert [q.partition_key for q in p.queries] == partitions
    assert p.skipped_ratings == skipped


def test_page_size_zero_still_asks_storage_whether_anything_exists() -> None:
    # hasNextPage of an empty page must come from storage, not from counters.
    p = plan(size=0)
    assert p.strategy is Strategy.ALL
    assert [q.limit for q in p.queries] == [1]


def test_first_page_reads_one_extra_to_learn_from_storage_whether_more_exists() -> None:
    p = plan(size=20)
    assert p.want == 21
    assert p.queries[0].limit == 21
    # A counter is not a bound: even a partition counted at 6 is asked for the whole page.
    small = plan(by_rating=(1, 2, 3, 0, 0), size=20)
    assert small.queries[0].limit == 21


def test_later_pages_read_one_extra_to_learn_whether_more_exists() -> None:
    p = plan(size=20, position=POS)
    assert p.want == 21
    assert p.queries[0].limit == 21
    assert p.sort_key_condition == f"GSISK < {POS}"


def test_backward_pages_read_ascending_after_the_position() -> None:
    p = plan(size=10, position=POS, direction=Direction.BACKWARD)
    assert p.scan_forward is True
    assert p.sort_key_condition == f"GSISK > {POS}"
    assert not plan(size=10).scan_forward


def test_fan_out_limits_are_proportioned_and_capped_by_counts() -> None:
    p = plan({1, 2, 4}, size=20)
    limits = {q.rating: q.limit for q in p.queries}
    # The blog's fan-out would read 3 x 20 = 60 items; ours reads about one page.
    assert sum(limits.values()) <= 20 * 1.35
    assert sum(limits.values()) >= 20
    assert limits[4] > limits[1] > limits[2]
    capped = plan({1, 2}, by_rating=(2, 300, 0, 0, 500), size=20)
    assert capped.strategy is Strategy.FAN_OUT
    assert {q.rating: q.limit for q in capped.queries}[1] <= 3


def test_fan_out_limits_ask_one_past_the_counts() -> None:
    # count + 1: a partition holding what its counter says is read to its end in one query
    # and storage says it is finished; one that gained an item meanwhile is not cut short.
    p = plan({1, 2, 3}, by_rating=(1, 1, 1, 0, 50), size=50)
    assert p.strategy is Strategy.FAN_OUT
    assert [q.limit for q in p.queries] == [2, 2, 2]
    assert [q.expected_count for q in p.queries] == [1, 1, 1]


def test_filtered_scan_chosen_when_nearly_everything_matches() -> None:
    # Ratings 2-5 are 99.5 % of the product: one filtered query scans fewer items.
    p = plan({2, 3, 4, 5}, by_rating=(5, 250, 250, 250, 250))
    assert p.strategy is Strategy.FILTERED_SCAN_OF_INDEX
    assert p.index is Index.ALL
    assert p.filter_ratings == (5, 4, 3, 2)
    assert p.queries[0].limit <= 22
    by_lang = plan({2, 3, 4, 5}, language="de", by_rating=(5, 250, 250, 250, 250))
    assert by_lang.index is Index.BY_LANG
    assert by_lang.queries[0].partition_key == "PRODUCT#42/de"


def test_fan_out_chosen_when_a_filter_would_discard_much() -> None:
    assert plan({1, 2}, by_rating=SKEWED).strategy is Strategy.FAN_OUT


def test_tuning_can_forbid_filtered_scans() -> None:
    listing = ListingFilter("42", None, frozenset({2, 3, 4, 5}))
    p = plan_listing(
        listing, PageRequest(20), counts((5, 250, 250, 250, 250)), Tuning(filtered_advantage=100)
    )
    assert p.strategy is Strategy.FAN_OUT


def test_stats_must_match_the_listing() -> None:
    with pytest.raises(ValueError, match="stats"):
        plan_listing(ListingFilter("42", "en"), PageRequest(), counts(SKEWED, None))


def test_plan_is_frozen_and_explains_itself() -> None:
    p = plan({1, 2}, language="en", by_rating=(3, 4, 0, 0, 40), position=POS)
    with pytest.raises(FrozenInstanceError):
        p.want = 3  # type: ignore[misc]
    text = p.explain()
    assert "FAN_OUT" in text
    assert "index byLangAndRating" in text
    assert f"where GSISK < {POS}" in text
    assert "GSIPK = PRODUCT#42/en/2 limit" in text
    assert str(p) == text
    empty = plan({1, 2}, by_rating=(0, 0, 1, 1, 1)).explain()
    assert "skipped ratings [2, 1]" in empty


@pytest.mark.parametrize(
    ("language", "strategy", "partition"),
    [(None, Strategy.ALL, "PRODUCT#42"), ("de", Strategy.BY_LANG, "PRODUCT#42/de")],
)
def test_unfiltered_listings_plan_without_stats(
    language: str | None, strategy: Strategy, partition: str
) -> None:
    p = plan_unfiltered(ListingFilter("42", language), PageRequest(20))
    assert p.strategy is strategy
    assert [q.partition_key for q in p.queries] == [partition]
    # Without the counts, one extra item tells whether more exist, even on a first page.
    assert p.want == 21
    assert p.queries[0].limit == 21
    assert p.queries[0].expected_count is None
    assert "count unknown" in p.explain()
    assert plan_unfiltered(ListingFilter("42"), PageRequest(0)).queries[0].limit == 1


def test_rating_filters_need_stats() -> None:
    with pytest.raises(ValueError, match="stats"):
        plan_unfiltered(ListingFilter("42", None, frozenset({1, 2})), PageRequest(20))


def verified_plan(
    verified: tuple[int, int, int, int, int],
    *,
    ratings: set[int] | None = None,
    language: str | None = None,
    by_rating: tuple[int, int, int, int, int] = SKEWED,
) -> Plan:
    listing = ListingFilter("42", language, frozenset(ratings) if ratings else None, True)
    stats = RatingCounts("42", language, by_rating, verified)
    return plan_listing(listing, PageRequest(20), stats)


def test_verified_only_fans_out_over_the_verified_ratings_skipping_empty_ones() -> None:
    p = verified_plan((0, 3, 0, 20, 60))
    assert p.strategy is Strategy.FAN_OUT
    assert p.verified_only
    assert {q.index for q in p.queries} == {Index.VERIFIED_BY_RATING}
    assert [q.rating for q in p.queries] == [5, 4, 2]
    assert p.skipped_ratings == (3, 1)
    # Each query is sized by its verified count, not by the count of all comments.
    assert [q.expected_count for q in p.queries] == [60, 20, 3]
    assert sum(q.limit for q in p.queries) < 3 * 21


def test_verified_only_with_a_language_and_one_live_rating_is_one_query() -> None:
    p = verified_plan((0, 0, 0, 0, 7), ratings={4, 5}, language="de")
    assert p.strategy is Strategy.BY_LANG_AND_RATING
    assert [(q.index, q.partition_key) for q in p.queries] == [
        (Index.VERIFIED_BY_LANG_AND_RATING, "PRODUCT#42/de/5")
    ]
    assert p.skipped_ratings == (4,)


def test_verified_only_without_verified_comments_reads_nothing() -> None:
    p = verified_plan((0, 0, 0, 0, 0))
    assert p.strategy is Strategy.EMPTY
    assert p.queries == ()


def test_verified_only_where_nearly_everything_is_verified_reads_the_listing_filtered() -> None:
    # Every comment verified: one filtered read of the product's listing beats five queries.
    p = verified_plan(SKEWED)
    assert p.strategy is Strategy.FILTERED_SCAN_OF_INDEX
    assert p.index is Index.ALL
    assert p.filters
    assert p.filter_text == "verified"
    assert "filter verified" in p.explain()
