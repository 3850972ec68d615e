from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest
from hypothesis import given
from hypothesis import strategies as st

from storage.base.errors import (
    InvalidCommentId,
    InvalidCursor,
    InvalidLanguage,
    InvalidProductId,
    InvalidRating,
)
from storage.model import keys, rules


@pytest.mark.parametrize("good", ["42", "sku-1.2_3:x", "A" * 128, "a"])
def test_product_ids_accepted(good: str) -> None:
    assert rules.validate_product_id(good) == good


@pytest.mark.parametrize(
    "bad",
    ["", "a/b", "a#b", "a~b", "a b", "é", "a\x00", "-leading", "A" * 129, 42, None, "a\nb"],
)
def test_product_ids_with_delimiters_or_odd_characters_rejected(bad: object) -> None:
    with pytest.raises(InvalidProductId):
        rules.validate_product_id(bad)


@pytest.mark.parametrize(
    ("given", "normal"), [("en", "en"), ("pt-BR", "pt-br"), ("ZH-hant", "zh-hant")]
)
def test_languages_normalised_to_lower_case(given: str, normal: str) -> None:
    assert rules.validate_language(given) == normal


@pytest.mark.parametrize("bad", ["", "e", "english", "en/us", "en#", "en_US", "e1", "x" * 40, 7])
def test_bad_languages_rejected(bad: object) -> None:
    with pytest.raises(InvalidLanguage):
        rules.validate_language(bad)


@pytest.mark.parametrize("bad", [0, 6, -1, True, 2.0, "3", None])
def test_ratings_outside_one_to_five_rejected(bad: object) -> None:
    with pytest.raises(InvalidRating):
        rules.validate_rating(bad)


@pytest.mark.parametrize(
    ("given", "normal"),
    [(None, None), ([], None), ([1, 2, 3, 4, 5], None), ([5, 5, 1], frozenset({1, 5}))],
)
def test_rating_filters_normalised(given: list[int] | None, normal: frozenset[int] | None) -> None:
    assert rules.validate_ratings(given) == normal


def test_rating_filter_with_bad_member_rejected() -> None:
    with pytest.raises(InvalidRating):
        rules.validate_ratings([1, 7])
    with pytest.raises(InvalidRating):
        rules.validate_ratings("12")


def test_comment_ids() -> None:
    assert rules.validate_comment_id("abc_DEF-123") == "abc_DEF-123"
    for bad in ["", "a#b", "a/b", "x" * 65, "a b"]:
        with pytest.raises(InvalidCommentId):
            rules.validate_comment_id(bad)


def test_index_partition_keys() -> None:
    assert keys.all_pk("42") == "PRODUCT#42"
    assert keys.lang_pk("42", "EN") == "PRODUCT#42/en"
    assert keys.rating_pk("42", 5) == "PRODUCT#42/5"
    assert keys.lang_rating_pk("42", "en", 2) == "PRODUCT#42/en/2"
    assert keys.stats_sk(None) == "S"
    assert keys.stats_sk("de") == "S#de"


def test_key_builders_validate_their_parts() -> None:
    with pytest.raises(InvalidProductId):
        keys.lang_rating_pk("4/2", "en", 2)
    with pytest.raises(InvalidLanguage):
        keys.lang_pk("42", "en/5")
    with pytest.raises(InvalidRating):
        keys.rating_pk("42", 9)


def test_timestamps_are_fixed_width_utc_millis() -> None:
    moment = datetime(2026, 11, 21, 20, 0, 0, 123456, tzinfo=timezone(timedelta(hours=1)))
    text = keys.format_timestamp(moment)
    assert text == "2026-11-21T19:00:00.123Z"
    assert keys.parse_timestamp(text) == moment.replace(microsecond=123000)
    with pytest.raises(ValueError, match="timezone"):
        keys.format_timestamp(datetime(2026, 1, 1))


def test_timestamp_string_order_is_time_order() -> None:
    base = datetime(1999, 12, 31, 23, 59, 59, tzinfo=UTC)
    moments = [base + timedelta(milliseconds=n * 997) for n in range(50)]
    texts = [keys.format_timestamp(m) for m in moments]
    assert texts == sorted(texts)


def test_sort_key_orders_ties_by_comment_id() -> None:
    t = "2026-01-01T00:00:00.000Z"
    assert keys.sort_key(t, "b") > keys.sort_key(t, "a")
    assert keys.sort_key("2026-01-01T00:00:00.001Z", "a") > keys.sort_key(t, "z")


def test_validate_sort_key() -> None:
    good = keys.sort_key("2026-01-01T00:00:00.000Z", "0123456789abcdef0123456789abcdef")
    assert keys.validate_sort_key(good) == good
    for bad in [
        "",
        "2026-01-01#0123456789abcdef0123456789abcdef",
        "2026-01-01T00:00:00.000Z#",
        "2026-01-01T00:00:00.000Z#a/b",
        "2026-01-01T00:00:00.000Z#abc",  # not a generated id: a truncated position
        "2026-01-01T00:00:00.000Z#0123456789abcdef0123456789abcde",
        "2026-02-29T00:00:00.000Z#0123456789abcdef0123456789abcdef",  # 2026 is no leap year
    ]:
        with pytest.raises(InvalidCursor):
            keys.validate_sort_key(bad)


def test_leader_sort_key_pads_so_strings_sort_as_numbers() -> None:
    counts = [1, 9, 10, 99, 100, 12345]
    padded = [keys.leader_sort_key(c) for c in counts]
    assert padded == sorted(padded)
    assert all(len(p) == keys.LEADER_COUNT_WIDTH for p in padded)
    with pytest.raises(ValueError, match="positive"):
        keys.leader_sort_key(0)


_sort_keys = st.builds(
    keys.sort_key,
    st.datetimes(
        min_value=datetime(1970, 1, 1), max_value=datetime(9999, 1, 1), timezones=st.just(UTC)
    ).map(keys.format_timestamp),
    st.from_regex(r"[A-Za-z0-9_-]{1,64}", fullmatch=True),
)


@given(_sort_keys, _sort_keys)
def test_no_sort_key_lies_between_a_key_and_its_exclusive_bounds(a: str, b: str) -> None:
    below, above = keys.key_just_below(b), keys.key_just_above(b)
    assert below < b < above
    # Inclusive ranges ending at these bounds hold exactly the keys strictly below/above b.
    assert (a <= below) == (a < b)
    assert (a >= above) == (a > b)


@pytest.mark.parametrize(
    ("written", "canonical"),
    [
        ("EN", "en"),
        ("pt-br", "pt-BR"),
        ("ZH-HANT", "zh-Hant"),
        ("zh-hant-tw", "zh-Hant-TW"),
        ("es-419", "es-419"),
        ("SR-LATN-RS", "sr-Latn-RS"),
        ("en-us-x-twain", "en-US-x-twain"),
        ("de-ch-1996", "de-CH-1996"),
        ("en-a-bbbb-cc", "en-a-bbbb-cc"),
    ],
)
def test_languages_read_back_in_their_canonical_case(written: str, canonical: str) -> None:
    assert rules.canonical_language(rules.validate_language(written)) == canonical
    assert rules.validate_language(canonical) == rules.validate_language(written)  # same key
