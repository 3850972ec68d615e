from __future__ import annotations

from importlib import metadata

import pytest
import snowballstemmer

from storage.model import words
from storage.model.words import TOKEN_CHARS_MAX, Token, analyze

ZWNJ = "\u200c"


def wide(ascii_letters: str) -> str:
    """The full-width forms (U+FF21...) of ASCII letters."""
    return "".join(chr(ord(ch) + 0xFEE0) for ch in ascii_letters)


def texts(text: str, language: str = "en") -> list[str]:
    return [token.text for token in analyze(text, language)]


def stems(text: str, language: str) -> list[str | None]:
    return [token.stem for token in analyze(text, language)]


def joins(text: str) -> list[bool]:
    return [token.joined for token in analyze(text, "en")]


# The stemmers


def test_the_stemmer_version_is_the_one_installed() -> None:
    """A new snowballstemmer may stem otherwise, so it must come with a new STEMMER (and
    with it a new topics.TAGGER_VERSION, which starts a re-tag)."""
    installed = metadata.version("snowballstemmer")
    assert words.STEMMER.removeprefix("snowballstemmer ") == installed


def test_the_stemmers_are_snowballs_own_python() -> None:
    """snowballstemmer hands over to PyStemmer when it is installed, whose algorithms are
    of another release: tags would change with what happens to be installed."""
    assert type(snowballstemmer.stemmer("english")).__module__ == "snowballstemmer.english_stemmer"


def test_every_language_names_an_algorithm_snowball_has() -> None:
    assert set(words.SNOWBALL.values()) <= set(snowballstemmer.algorithms())
    assert all(len(code) == 2 and code.islower() for code in words.SNOWBALL)


@pytest.mark.parametrize(
    ("language", "name"),
    [("en", "english"), ("de-ch", "german"), ("pt-br", "portuguese"), ("nb", "norwegian")],
)
def test_the_primary_subtag_chooses_the_stemmer(language: str, name: str) -> None:
    assert words.stemmer_name(language) == name


@pytest.mark.parametrize("language", ["zh", "ja", "th", "ko", "uk", "he", "vi", "enx"])
def test_languages_without_a_stemmer_keep_their_tokens(language: str) -> None:
    assert words.stemmer_name(language) is None
    assert stems("Batteries charging", language) == ["batteries", "charging"]


@pytest.mark.parametrize(
    ("language", "forms"),
    [
        ("en", ["battery", "Batteries", "battery's"]),
        ("de", ["Akkulaufzeit", "Akkulaufzeiten"]),
        ("de", ["Bildschirm", "Bildschirme", "Bildschirmen"]),
        ("fr", ["batterie", "batteries"]),
        ("fr", ["écran", "écrans", "l'écran", "l\u2019écran"]),
        ("es", ["pantalla", "pantallas"]),
        ("it", ["schermo", "schermi"]),
        ("it", ["autonomia", "dell'autonomia"]),
        ("nl", ["scherm", "schermen"]),
        ("pt", ["bateria", "baterias"]),
        ("ru", ["аккумулятор", "аккумулятора", "аккумуляторы"]),
        ("sv", ["skärm", "skärmen", "skärmar"]),
    ],
)
def test_inflected_forms_share_a_stem(language: str, forms: list[str]) -> None:
    found = {tuple(stems(form, language)) for form in forms}
    assert len(found) == 1
    assert len(next(iter(found))) == 1


# Words


def test_words_are_letters_marks_and_digits() -> None:
    assert texts("The 2 batteries: 5000mAh, (great)!") == [
        "the",
        "2",
        "batteries",
        "5000mah",
        "great",
    ]
    # Devanagari vowel signs are marks: one word, not three.
    assert texts("बैटरी अच्छी", "hi") == ["बैटरी", "अच्छी"]


def test_an_apostrophe_inside_a_word_is_part_of_it_and_is_normalised() -> None:
    assert texts("don\u2019t 'quoted' batteries' life rock\u2018n\u2018roll") == [
        "don't",
        "quoted",
        "batteries",
        "life",
        "rock'n'roll",
    ]


def test_a_phrase_continues_across_spaces_and_hyphens_only() -> None:
    assert joins("battery life") == [False, True]
    assert joins("battery-life") == [False, True]
    assert joins("battery \u2013 life\tok") == [False, True, True]
    for apart in (
        "battery. life",
        "battery, life",
        "battery\nlife",
        "battery/life",
        "battery_life",
    ):
        assert joins(apart) == [False, False], apart


@pytest.mark.parametrize(
    ("text", "normal"),
    [
        ("ﬁt", ["fit"]),  # the ligature
        (wide("BATTERY"), ["battery"]),
        ("Straße", ["strasse"]),
        ("bat\u00adtery", ["battery"]),  # a soft hyphen
        ("e\u0301cran", ["écran"]),  # decomposed
        ("ΣΊΣΥΦΟΣ", ["σίσυφοσ"]),  # final sigma folds too
        ("①②", ["12"]),
    ],
)
def test_words_are_nfkc_and_case_folded(text: str, normal: list[str]) -> None:
    assert texts(text) == normal


def test_the_joiners_persian_spells_with_are_kept() -> None:
    word = "می" + ZWNJ + "خواهم"
    assert texts(word, "fa") == [word]


def test_a_zero_width_space_separates_words() -> None:
    assert texts("battery\u200blife") == ["battery", "life"]
    assert joins("battery\u200blife") == [False, True]


def test_a_ligature_of_words_gives_joined_tokens_with_its_span() -> None:
    tokens = analyze("x \ufdfa", "ar")
    assert [t.text for t in tokens] == ["x", "صلى", "الله", "عليه", "وسلم"]
    assert {t.span for t in tokens[1:]} == {(2, 3)}
    assert all(t.joined for t in tokens[1:])


def test_spans_point_into_the_text_given() -> None:
    text = f"Die ﬁt-Größe, {wide('OK')}"
    tokens = analyze(text, "de")
    assert [text[a:b] for a, b in (t.span for t in tokens)] == ["Die", "ﬁt", "Größe", wide("OK")]
    assert [t.text for t in tokens] == ["die", "fit", "grösse", "ok"]


# Scripts written without spaces


def test_each_character_of_a_script_without_spaces_is_a_token() -> None:
    text = "我的iPhone电池很好"
    tokens = analyze(text, "zh")
    assert [t.text for t in tokens] == ["我", "的", "iphone", "电", "池", "很", "好"]
    assert [text[a:b] for a, b in (t.span for t in tokens)] == [
        "我",
        "的",
        "iPhone",
        "电",
        "池",
        "很",
        "好",
    ]
    assert [t.character for t in tokens] == [True, True, False, True, True, True, True]
    assert all(t.joined for t in tokens[1:])


def test_those_characters_are_never_stemmed() -> None:
    # Mixed in an English comment, Latin words are stemmed, the characters kept.
    assert stems("电池 batteries", "en") == ["电", "池", "batteri"]


def test_thai_marks_stay_with_their_character() -> None:
    assert texts("แบตเตอรี่", "th") == ["แ", "บ", "ต", "เ", "ต", "อ", "รี่"]


def test_half_width_kana_become_the_full_width_ones() -> None:
    assert texts("ﾊﾞｯﾃﾘｰ", "ja") == texts("バッテリー", "ja") == ["バ", "ッ", "テ", "リ", "ー"]


# Costs


def test_a_token_over_the_limit_has_no_stem() -> None:
    long = "a" * (TOKEN_CHARS_MAX + 1)
    assert analyze(f"{'a' * TOKEN_CHARS_MAX} {long}", "en")[1] == Token(
        long, None, (TOKEN_CHARS_MAX + 1, 2 * TOKEN_CHARS_MAX + 2), True, False
    )
    assert analyze("a" * TOKEN_CHARS_MAX, "en")[0].stem is not None


def test_analysis_reads_a_long_text_word_by_word() -> None:
    unit = "Batteries, charging; l'écran 电池 "  # five tokens in 32 characters
    text = unit * (10_000 // len(unit))
    tokens = analyze(text, "fr")
    assert len(tokens) == 5 * (10_000 // len(unit))
    assert [t.span for t in tokens] == sorted(t.span for t in tokens)
    assert analyze(text, "fr") == tokens
