from __future__ import annotations

import base64
from datetime import UTC, datetime

import pytest
from hypothesis import given
from hypothesis import strategies as st

from storage.base.errors import InvalidCursor
from storage.model import keys
from storage.reads.cursor import Ordering, decode_cursor, encode_cursor

timestamps = st.datetimes(
    min_value=datetime(1970, 1, 1), max_value=datetime(9999, 1, 1), timezones=st.just(UTC)
).map(keys.format_timestamp)
comment_ids = st.from_regex(r"[0-9a-f]{32}", fullmatch=True)
ID = "0123456789abcdef0123456789abcdef"
sort_keys = st.builds(keys.sort_key, timestamps, comment_ids)


@given(sort_keys)
def test_round_trip(sort_key: str) -> None:
    cursor = encode_cursor(sort_key)
    assert decode_cursor(cursor) == sort_key
    # Opaque and URL-safe: no padding, no characters that need escaping.
    assert "=" not in cursor
    assert all(c.isalnum() or c in "-_" for c in cursor)


@given(sort_keys, st.data())
def test_tampering_is_detected_or_lands_on_a_valid_position(
    sort_key: str, data: st.DataObject
) -> None:
    cursor = encode_cursor(sort_key)
    position = data.draw(st.integers(0, len(cursor) - 1))
    replacement = data.draw(st.sampled_from("ABCabc019-_=+/ ~é"))
    tampered = cursor[:position] + replacement + cursor[position + 1 :]
    try:
        decoded = decode_cursor(tampered)
    except InvalidCursor:
        return
    # A tampered cursor that still decodes must be a well-formed position, never anything else.
    assert keys.validate_sort_key(decoded) == decoded
    assert tampered in (encode_cursor(decoded), _raw(f"c1:{decoded}"))


@given(st.text(max_size=300))
def test_random_text_never_crashes(text: str) -> None:
    try:
        decoded = decode_cursor(text)
    except InvalidCursor:
        return
    assert keys.validate_sort_key(decoded) == decoded


GSISK = keys.sort_key("2026-01-01T00:00:00.000Z", ID)
POSITIONS = {
    **dict.fromkeys(Ordering, GSISK),
    Ordering.HIGHEST_RATING: keys.rating_position(4, GSISK),
    Ordering.LOWEST_RATING: keys.rating_position(2, GSISK),
    Ordering.MOST_HELPFUL: keys.helpful_sort_key(12, GSISK),
    Ordering.MEMBERS: "shoe-red-42",  # a group's products are paged by product id
}


@pytest.mark.parametrize(
    ("ordering", "bad"),
    [
        (Ordering.HIGHEST_RATING, GSISK),
        (Ordering.HIGHEST_RATING, "6:" + GSISK),
        (Ordering.LOWEST_RATING, "0:" + GSISK),
        (Ordering.MOST_HELPFUL, GSISK),
        (Ordering.MOST_HELPFUL, "12#" + GSISK),
        (Ordering.MOST_HELPFUL, "00000000x1#" + GSISK),
        (Ordering.NEWEST, keys.rating_position(4, GSISK)),
    ],
)
def test_a_position_must_have_its_order_shape(ordering: Ordering, bad: str) -> None:
    forged = _raw(f"c2:{ordering.value}:{bad}")
    with pytest.raises(InvalidCursor):
        decode_cursor(forged, ordering)


def _raw(text: str) -> str:
    return base64.urlsafe_b64encode(text.encode()).rstrip(b"=").decode()


@pytest.mark.parametrize(
    "bad",
    [
        "",
        "!!!",
        _raw(f"c2:2026-01-01T00:00:00.000Z#{ID}"),  # foreign version
        _raw(f"2026-01-01T00:00:00.000Z#{ID}"),  # no version
        _raw("c1:42"),  # an offset is not a position
        _raw("c1:2026-01-01T00:00:00.000Z#a/b"),
        _raw(f"c1:2026-01-01T00:00:00.000Z#{ID}") + "=",  # padding is not ours
        _raw(f"c1:2026-01-01T00:00:00.000Z#{ID}")[:-3],  # truncated
        # Truncated or edited, yet still decoding to something shaped like a key:
        _raw(f"c1:2026-01-01T00:00:00.000Z#{ID[:-1]}"),
        _raw("c1:2026-01-01T00:00:00.000Z#abc"),
        _raw(f"c1:2026-01-01T00:00:00.000Z#{ID.upper()}"),
        _raw(f"c1:2026-13-01T00:00:00.000Z#{ID}"),  # no 13th month
        _raw(f"c1:2026-02-30T00:00:00.000Z#{ID}"),
        _raw(f"c1:2026-01-01T24:00:00.000Z#{ID}"),
        "A" * 1000,
        None,
        12,
    ],
)
def test_bad_cursors_rejected(bad: object) -> None:
    with pytest.raises(InvalidCursor):
        decode_cursor(bad)


@pytest.mark.parametrize("made", list(Ordering))
@pytest.mark.parametrize("used", list(Ordering))
def test_a_cursor_belongs_to_its_order(made: Ordering, used: Ordering) -> None:
    # A queue position (submission time) continued in a product's listing (creation time)
    # would land somewhere arbitrary: refused instead.
    position = POSITIONS[made]
    cursor = encode_cursor(position, made)
    if made is used:
        assert decode_cursor(cursor, used) == position
    else:
        with pytest.raises(InvalidCursor, match="another listing or order"):
            decode_cursor(cursor, used)


@pytest.mark.parametrize("used", list(Ordering))
def test_cursors_of_the_first_version_are_still_read_where_they_were_made(used: Ordering) -> None:
    position = keys.sort_key("2026-01-01T00:00:00.000Z", ID)
    legacy = _raw(f"c1:{position}")
    if used in (Ordering.NEWEST, Ordering.AUTHOR, Ordering.QUEUE):
        assert decode_cursor(legacy, used) == position
    else:
        with pytest.raises(InvalidCursor, match="another listing or order"):
            decode_cursor(legacy, used)
