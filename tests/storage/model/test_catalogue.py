"""The catalogue file: its documented format, every refusal, GTINs, and streaming."""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from itertools import islice
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from storage.model import catalogue
from storage.model.catalogue import (
    BRAND_MAX,
    LINE_MAX,
    MPN_MAX,
    NAME_MAX,
    SKU_MAX,
    URL_MAX,
    CatalogueLine,
    LineProblem,
    gtin_valid,
    parse_catalogue,
    split_lines,
)
from storage.model.rules import PRODUCT_ID_MAX


def parse(*lines: str) -> list[CatalogueLine | LineProblem]:
    return list(parse_catalogue(lines))


def one(obj: dict[str, Any]) -> CatalogueLine | LineProblem:
    (result,) = parse(json.dumps(obj))
    return result


def codes(obj: dict[str, Any] | str) -> list[tuple[str, str]]:
    (result,) = parse(obj if isinstance(obj, str) else json.dumps(obj))
    assert isinstance(result, LineProblem), result
    return [(p.dotted, p.code) for p in result.problems]


# --- The documented format ----------------------------------------------------------------


def test_the_docstring_example_parses() -> None:
    doc = catalogue.__doc__ or ""
    example = [line.strip() for line in doc.splitlines() if line.startswith("    {")]
    assert len(example) == 3
    results = parse(*example)
    assert results == [
        CatalogueLine(1, "shoe-red-42", "shoe", gtin="4006381333931", brand="Acme"),
        CatalogueLine(2, "shoe-blue-42", "shoe", sku="8812-B42", name="Shoe, blue, 42"),
        CatalogueLine(3, "mug", mpn="MG-1", url="https://shop.example/p/mug"),
    ]


def test_every_field() -> None:
    line = {
        "productId": "p1",
        "groupId": "g1",
        "gtin": "036000291452",
        "mpn": "60101-10000",
        "sku": "6206",
        "brand": "Acme",
        "name": "Tablet case",
        "url": "https://example.com/p/1?ref=feed#top",
    }
    assert one(line) == CatalogueLine(
        1, "p1", "g1", "036000291452", "60101-10000", "6206", "Acme", "Tablet case",
        "https://example.com/p/1?ref=feed#top",
    )  # fmt: skip


def test_null_is_absent() -> None:
    fields = ("groupId", "gtin", "mpn", "sku", "brand", "name", "url")
    assert one({"productId": "p1"} | dict.fromkeys(fields)) == CatalogueLine(1, "p1")


def test_texts_are_stored_in_nfc_without_surrounding_spaces() -> None:
    result = one({"productId": "p1", "brand": "  Cafe\u0301 ", "name": "\tMug\u00a0"})
    assert result == CatalogueLine(1, "p1", brand="Caf\u00e9", name="Mug")


def test_lines_are_numbered_as_an_editor_numbers_them() -> None:
    results = parse(
        '\ufeff{"productId": "a"}\n',
        "\n",
        "   \r\n",
        '{"productId": "b"}\r\n',
        '{"productId": "c"}',
    )
    assert [(r.line, r.product_id) for r in results if isinstance(r, CatalogueLine)] == [
        (1, "a"),
        (4, "b"),
        (5, "c"),
    ]


def test_a_byte_order_mark_is_ignored_before_the_first_line_only() -> None:
    first, second = parse('\ufeff{"productId": "a"}', '\ufeff{"productId": "b"}')
    assert isinstance(first, CatalogueLine)
    assert isinstance(second, LineProblem)
    assert second.codes == ("NOT_JSON",)


# --- Refusals ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("{", [("", "NOT_JSON")]),
        ("productId=p1", [("", "NOT_JSON")]),
        ('{"productId": "p1"} {}', [("", "NOT_JSON")]),
        ('{"productId": "p1", "gtin": NaN}', [("", "NOT_JSON")]),
        ('{"productId": "p1", "n": Infinity}', [("", "NOT_JSON")]),
        ("[" * 5_000 + "]" * 3_000, [("", "NOT_JSON")]),  # deeper than the decoder goes
        ('["p1"]', [("", "SHAPE")]),
        ('"p1"', [("", "SHAPE")]),
        ("42", [("", "SHAPE")]),
        ("null", [("", "SHAPE")]),
        ('{"productId": "p1", "productId": "p2"}', [("productId", "DUPLICATE_FIELD")]),
        ('{"productId": "p1", "GTIN": "036000291452"}', [("GTIN", "UNKNOWN_FIELD")]),
        ("{}", [("productId", "REQUIRED")]),
        ('{"productId": null}', [("productId", "REQUIRED")]),
        ('{"groupId": "g"}', [("productId", "REQUIRED")]),
    ],
)
def test_a_line_that_is_not_a_product_object(line: str, expected: list[tuple[str, str]]) -> None:
    assert codes(line) == expected


@pytest.mark.parametrize(
    "bad", ["", "a/b", "a#b", "a b", "-a", "é", "x" * (PRODUCT_ID_MAX + 1), 42]
)
def test_ids_follow_the_product_id_rule(bad: object) -> None:
    assert codes({"productId": bad}) == [("productId", "ID_INVALID")]
    assert codes({"productId": "p1", "groupId": bad}) == [("groupId", "ID_INVALID")]


def test_ids_at_their_longest() -> None:
    longest = "x" * PRODUCT_ID_MAX
    assert one({"productId": longest, "groupId": longest}) == CatalogueLine(1, longest, longest)


@pytest.mark.parametrize(
    ("field", "maximum"),
    [("mpn", MPN_MAX), ("sku", SKU_MAX), ("brand", BRAND_MAX), ("name", NAME_MAX)],
)
def test_text_fields(field: str, maximum: int) -> None:
    at_limit = one({"productId": "p1", field: "\U0001f600" * maximum})
    assert isinstance(at_limit, CatalogueLine)
    assert getattr(at_limit, field) == "\U0001f600" * maximum
    assert codes({"productId": "p1", field: "x" * (maximum + 1)}) == [(field, "TEXT_TOO_LONG")]
    for blank in ("", "   ", "\u200b"):
        assert codes({"productId": "p1", field: blank}) == [(field, "TEXT_EMPTY")]
    for bad in ("a\x00b", "a\u202eb", "a\nb", "a\tb", "a\u2028b", "\ud800"):
        assert codes({"productId": "p1", field: bad}) == [(field, "TEXT_INVALID")]
    assert codes({"productId": "p1", field: 12}) == [(field, "SHAPE")]


@pytest.mark.parametrize(
    "good",
    [
        "http://example.com",
        "https://example.com/p/1",
        "HTTPS://Example.COM/p/1",
        "https://example.com:8443/p/%C3%A9?q=a+b&x=1#frag",
        "https://[2001:db8::1]/p",
        "https://shop.example/p/" + "x" * (URL_MAX - len("https://shop.example/p/")),
    ],
)
def test_urls_accepted(good: str) -> None:
    assert one({"productId": "p1", "url": good}) == CatalogueLine(1, "p1", url=good)


@pytest.mark.parametrize(
    ("bad", "code"),
    [
        (
            "https://shop.example/p/" + "x" * (URL_MAX + 1 - len("https://shop.example/p/")),
            "TEXT_TOO_LONG",
        ),
        ("/p/1", "URL_INVALID"),
        ("example.com/p/1", "URL_INVALID"),
        ("//example.com/p/1", "URL_INVALID"),
        ("ftp://example.com/p", "URL_INVALID"),
        ("javascript:alert(1)", "URL_INVALID"),
        ("https://", "URL_INVALID"),
        ("https:///p/1", "URL_INVALID"),
        ("https://user:secret@example.com/p", "URL_INVALID"),
        ("https://user@example.com/p", "URL_INVALID"),
        ("https://example.com/p 1", "URL_INVALID"),
        ("https://example.com/\u00e9", "URL_INVALID"),
        ("https://example.com/<script>", "URL_INVALID"),
        ('https://example.com/"', "URL_INVALID"),
        ("https://example.com:99999/", "URL_INVALID"),
        ("https://example.com:port/", "URL_INVALID"),
        ("", "URL_INVALID"),
    ],
)
def test_urls_refused(bad: str, code: str) -> None:
    assert codes({"productId": "p1", "url": bad}) == [("url", code)]


def test_a_url_is_a_string() -> None:
    assert codes({"productId": "p1", "url": ["https://example.com"]}) == [("url", "SHAPE")]


def test_every_problem_of_a_line_is_reported() -> None:
    line = {
        "productId": "p 1",
        "groupId": "g/1",
        "gtin": "4006381333932",
        "brand": "",
        "url": "ftp://x",
        "colour": "red",
    }
    assert codes(line) == [
        ("colour", "UNKNOWN_FIELD"),
        ("productId", "ID_INVALID"),
        ("groupId", "ID_INVALID"),
        ("gtin", "GTIN_CHECK_DIGIT"),
        ("brand", "TEXT_EMPTY"),
        ("url", "URL_INVALID"),
    ]
    (problem,) = parse(json.dumps(line))
    assert isinstance(problem, LineProblem)
    assert problem.line == 1
    assert problem.reason.startswith("colour: unknown field 'colour'; ")


def test_a_bad_line_does_not_stop_the_file() -> None:
    results = parse(
        '{"productId": "a"}', "{oops", '{"productId": "b", "gtin": "1"}', '{"productId": "c"}'
    )
    assert [(type(r).__name__, r.line) for r in results] == [
        ("CatalogueLine", 1),
        ("LineProblem", 2),
        ("LineProblem", 3),
        ("CatalogueLine", 4),
    ]


# --- GTINs: check digits worked out by hand ----------------------------------------------
#
# GS1: from the right, the digits before the check digit weigh 3, 1, 3, 1...; the check
# digit brings the weighted sum up to the next multiple of 10.
HAND_CHECKED = [
    # GTIN-8 7351353|7: 3x3 + 5 + 3x3 + 1 + 5x3 + 3 + 7x3 = 9+5+9+1+15+3+21 = 63 -> 7
    "73513537",
    # UPC-A 03600029145|2: 5x3 + 4 + 1x3 + 9 + 2x3 + 0 + 0 + 0 + 6x3 + 3 + 0 = 58 -> 2
    "036000291452",
    # UPC-A from Google's sample feed, 54171023842|5: 6+4+24+3+6+0+3+7+3+4+15 = 75 -> 5
    "541710238425",
    # EAN-13 400638133393|1: 9+9+9+3+9+1+24+3+18+0+0+4 = 89 -> 1
    "4006381333931",
    # GTIN-14 1001234567890|2: 0+9+24+7+18+5+12+3+6+1+0+0+3 = 88 -> 2
    "10012345678902",
    # All zeros: the sum is 0, the check digit 0.
    "00000000",
]


@pytest.mark.parametrize("gtin", HAND_CHECKED)
def test_hand_checked_gtins_are_valid(gtin: str) -> None:
    assert gtin_valid(gtin)
    assert one({"productId": "p1", "gtin": gtin}) == CatalogueLine(1, "p1", gtin=gtin)


@pytest.mark.parametrize("gtin", HAND_CHECKED)
@pytest.mark.parametrize("off_by", range(1, 10))
def test_any_other_check_digit_is_refused(gtin: str, off_by: int) -> None:
    wrong = gtin[:-1] + str((int(gtin[-1]) + off_by) % 10)
    assert not gtin_valid(wrong)
    assert codes({"productId": "p1", "gtin": wrong}) == [("gtin", "GTIN_CHECK_DIGIT")]


@pytest.mark.parametrize(
    "bad",
    [
        "7351353",  # 7 digits
        "735135370",  # 9
        "0360002914",  # 10 and 11 digits are no GTIN length
        "03600029145",
        "100123456789023",  # 15
        "03600029145a",
        " 036000291452",
        "036000291452\n",
        "\u0660\u0663\u0666\u0660\u0660\u0660\u0662\u0669\u0661\u0664\u0665\u0662",  # Arabic-Indic
        "\uff10\uff13\uff16\uff10\uff10\uff10\uff12\uff19\uff11\uff14\uff15\uff12",  # fullwidth
        "",
    ],
)
def test_a_gtin_is_8_12_13_or_14_ascii_digits(bad: str) -> None:
    assert not gtin_valid(bad)
    assert codes({"productId": "p1", "gtin": bad}) == [("gtin", "GTIN_INVALID")]


def test_a_gtin_is_a_string() -> None:
    # 036000291452 as a JSON number loses its leading zero.
    assert codes('{"productId": "p1", "gtin": 036000291452}') == [("", "NOT_JSON")]
    assert codes('{"productId": "p1", "gtin": 4006381333931}') == [("gtin", "SHAPE")]


def oracle_check_digit(body: str) -> int:
    """Padded on the left to 17 digits (the longest GS1 key's body), the weights run
    3, 1, 3... from the left; a different walk from the code's."""
    padded = body.rjust(17, "0")
    total = sum(int(d) * (3 if i % 2 == 0 else 1) for i, d in enumerate(padded))
    return -total % 10


bodies = st.sampled_from([7, 11, 12, 13]).flatmap(
    lambda n: st.text(alphabet="0123456789", min_size=n, max_size=n)
)


@given(body=bodies, position=st.integers(min_value=0), digit=st.integers(1, 9))
def test_gtins_against_an_oracle(body: str, position: int, digit: int) -> None:
    gtin = body + str(oracle_check_digit(body))
    assert gtin_valid(gtin)
    # GS1's check catches any one digit changed.
    at = position % len(gtin)
    changed = gtin[:at] + str((int(gtin[at]) + digit) % 10) + gtin[at + 1 :]
    assert not gtin_valid(changed)


# --- Duplicates ----------------------------------------------------------------------------


def test_a_product_repeated_in_the_file_is_refused_on_every_later_line() -> None:
    results = parse(
        '{"productId": "a", "groupId": "g1"}',
        '{"productId": "b"}',
        '{"productId": "a", "groupId": "g2"}',
        '{"productId": "a"}',
    )
    assert [(r.line, type(r).__name__) for r in results] == [
        (1, "CatalogueLine"),
        (2, "CatalogueLine"),
        (3, "LineProblem"),
        (4, "LineProblem"),
    ]
    assert [r.codes for r in results if isinstance(r, LineProblem)] == [
        ("DUPLICATE_PRODUCT",),
        ("DUPLICATE_PRODUCT",),
    ]


def test_a_refused_line_still_claims_its_product() -> None:
    """The file names the product twice either way: both lines are wrong."""
    first, second = parse('{"productId": "a", "gtin": "1"}', '{"productId": "a"}')
    assert isinstance(first, LineProblem)
    assert isinstance(second, LineProblem)
    assert second.codes == ("DUPLICATE_PRODUCT",)


def test_ids_differing_in_case_are_different_products() -> None:
    assert all(
        isinstance(r, CatalogueLine) for r in parse('{"productId": "a"}', '{"productId": "A"}')
    )


def test_products_per_file(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(catalogue, "PRODUCTS_MAX", 3)
    lines = [json.dumps({"productId": f"p{i}"}) for i in range(5)] + ['{"productId": "p0"}']
    results = parse(*lines)
    assert [r.codes if isinstance(r, LineProblem) else "ok" for r in results] == [
        "ok",
        "ok",
        "ok",
        ("TOO_MANY_PRODUCTS",),
        ("TOO_MANY_PRODUCTS",),
        ("DUPLICATE_PRODUCT",),
    ]


@given(st.lists(st.sampled_from(["a", "b", "c", "d", "a b"]), max_size=12))
def test_duplicates_against_an_oracle(ids: list[str]) -> None:
    results = parse(*(json.dumps({"productId": i}) for i in ids))
    seen: set[str] = set()
    expected: list[tuple[int, str]] = []
    for number, product_id in enumerate(ids, start=1):
        if product_id == "a b":
            expected.append((number, "ID_INVALID"))
        elif product_id in seen:
            expected.append((number, "DUPLICATE_PRODUCT"))
        else:
            expected.append((number, "ok"))
        seen.add(product_id)
    assert [
        (r.line, "ok" if isinstance(r, CatalogueLine) else r.codes[0]) for r in results
    ] == expected


# --- Line length ---------------------------------------------------------------------------


def padded(length: int) -> str:
    """A valid line of exactly ``length`` characters (spaces inside the object)."""
    core = '{"productId": "p1"}'
    return core[:-1] + " " * (length - len(core)) + "}"


def test_a_line_of_line_max_characters_is_read() -> None:
    for ending in ("", "\n", "\r\n"):
        (result,) = parse(padded(LINE_MAX) + ending)
        assert isinstance(result, CatalogueLine)


def test_a_longer_line_is_refused_before_it_is_decoded() -> None:
    for ending in ("", "\n", "\r\n"):
        (result,) = parse(padded(LINE_MAX + 1) + ending)
        assert isinstance(result, LineProblem)
        assert result.codes == ("LINE_TOO_LONG",)
    (huge,) = parse("{" * 10_000_000)
    assert isinstance(huge, LineProblem)
    assert huge.codes == ("LINE_TOO_LONG",)


def test_the_largest_valid_product_fits_a_line_as_any_encoder_writes_it() -> None:
    astral = "\U0001f600"
    largest = {
        "productId": "p" * PRODUCT_ID_MAX,
        "groupId": "g" * PRODUCT_ID_MAX,
        "gtin": "10012345678902",
        "mpn": astral * MPN_MAX,
        "sku": astral * SKU_MAX,
        "brand": astral * BRAND_MAX,
        "name": astral * NAME_MAX,
        "url": "https://shop.example/" + "p" * (URL_MAX - len("https://shop.example/")),
    }
    for ensure_ascii in (True, False):
        line = json.dumps(largest, ensure_ascii=ensure_ascii, indent=None)
        assert len(line) <= LINE_MAX
        (result,) = parse(line)
        assert isinstance(result, CatalogueLine)
    escaped = json.dumps(largest)
    assert LINE_MAX - len(escaped) > 1_000  # room to spare for spaces


# --- Streaming -----------------------------------------------------------------------------


class Tripwire:
    """Lines that fail the test if more than ``allowed`` of them are read."""

    def __init__(self, lines: Iterable[str], allowed: int) -> None:
        self._lines = iter(lines)
        self.allowed = allowed
        self.read = 0

    def __iter__(self) -> Iterator[str]:
        return self

    def __next__(self) -> str:
        if self.read >= self.allowed:
            raise AssertionError(f"read past line {self.allowed}")
        self.read += 1
        return next(self._lines)


def endless() -> Iterator[str]:
    n = 0
    while True:
        n += 1
        yield json.dumps({"productId": f"p{n}"}) + "\n"


def test_the_parser_reads_one_line_per_result_and_never_ahead() -> None:
    lines = Tripwire(endless(), allowed=3)
    results = parse_catalogue(lines)
    assert lines.read == 0  # nothing is read before it is asked for
    first = next(results)
    assert (first.line, lines.read) == (1, 1)
    assert [r.line for r in islice(results, 2)] == [2, 3]
    assert lines.read == 3
    with pytest.raises(AssertionError, match="read past line 3"):
        next(results)


def test_blank_lines_are_read_through_to_the_next_result() -> None:
    source = ['{"productId": "a"}', "", "", '{"productId": "b"}', '{"productId": "c"}']
    lines = Tripwire(source, allowed=4)
    results = parse_catalogue(lines)
    assert next(results).line == 1
    assert next(results).line == 4
    assert lines.read == 4


def test_the_tripwire_itself_trips() -> None:
    with pytest.raises(AssertionError):
        list(Tripwire(["a", "b"], allowed=1))


@given(
    st.lists(st.text(alphabet='ab{}"\r é', max_size=30), max_size=8),
    st.lists(st.integers(1, 40), min_size=1, max_size=10),
)
def test_split_lines_gives_the_lines_whatever_the_chunks(
    lines: list[str], sizes: list[int]
) -> None:
    text = "\n".join(lines)
    chunks: list[str] = []
    at = 0
    for i in range(10_000):
        if at >= len(text):
            break
        size = sizes[i % len(sizes)]
        chunks.append(text[at : at + size])
        at += size
    # The file's lines end at \n only (str.splitlines would also split at \r and others).
    expected = [part + "\n" for part in text.split("\n")]
    expected[-1] = expected[-1][:-1]
    if expected[-1] == "":
        expected.pop()
    assert list(split_lines(chunks)) == expected


def test_split_lines_cuts_a_long_line_without_holding_it() -> None:
    chunk_size = 1 << 20

    def chunks() -> Iterator[str]:
        yield '{"productId": "a"}\n{"productId": "'
        for _ in range(64):  # a 64 MB line
            yield "x" * chunk_size
        yield '"}\n{"productId": "b"}\n'

    cut = []
    for line in split_lines(chunks()):
        cut.append(len(line))
        assert len(line) <= LINE_MAX + 3
    assert cut == [19, LINE_MAX + 3, 19]
    results = list(parse_catalogue(split_lines(chunks())))
    assert [(r.line, type(r).__name__) for r in results] == [
        (1, "CatalogueLine"),
        (2, "LineProblem"),
        (3, "CatalogueLine"),
    ]


def test_a_cut_line_is_refused_even_if_its_start_is_valid_json() -> None:
    line = '{"productId": "a"}' + " " * (LINE_MAX * 2) + "garbage\n"
    (result,) = parse_catalogue(split_lines([line]))
    assert isinstance(result, LineProblem)
    assert result.codes == ("LINE_TOO_LONG",)


def test_split_lines_reads_chunks_lazily() -> None:
    chunks = Tripwire(['{"productId": "a"}\n{"produ', 'ctId": "b"}\n', "never read"], allowed=2)
    lines = split_lines(chunks)
    assert next(lines) == '{"productId": "a"}\n'
    assert chunks.read == 1
    assert next(lines) == '{"productId": "b"}\n'
    assert chunks.read == 2
