from __future__ import annotations

import copy
import json
import re
import textwrap
from collections.abc import Callable
from typing import Any, NamedTuple

import pytest
from hypothesis import given
from hypothesis import strategies as st

from storage.base.errors import InvalidInput, InvalidLanguage, TextMissing, TextTooLong
from storage.model import topics
from storage.model.topics import (
    LABEL_MAX,
    LANGUAGES_MAX,
    PHRASE_WORDS_MAX,
    TAXONOMY_MAX_BYTES,
    TOPIC_KEY_MAX,
    TOPICS_MAX,
    TOPICS_PER_COMMENT_MAX,
    WORD_CHARS_MAX,
    WORDS_MAX,
    WORDS_PER_LANGUAGE_MAX,
    Match,
    Method,
    Tagger,
    Tagging,
    Taxonomy,
    Topic,
)
from storage.model.words import analyze

Document = dict[str, Any]


def doc(*topic_docs: Document, default: str = "en") -> Document:
    return {"format": 1, "defaultLanguage": default, "topics": list(topic_docs)}


def topic(key: str, *entries: str, language: str = "en", **more: list[str]) -> Document:
    """A topic labelled in English (its key), with ``entries`` in ``language`` and ``more``
    lists by language (``de_ch=[...]`` is ``de-ch``)."""
    words = {language: list(entries)} if entries else {}
    words |= {tag.replace("_", "-"): list(found) for tag, found in more.items()}
    return {"key": key, "labels": {"en": key.title()}, "words": words}


def tagger(*topic_docs: Document) -> Tagger:
    return Tagger.for_taxonomy(Taxonomy.from_document(doc(*topic_docs)))


def matched(tagging: Tagging, text: str) -> list[tuple[str, str, str]]:
    """(topic, entry, the text matched) for each match."""
    return [(m.topic, m.word, text[m.span[0] : m.span[1]]) for m in tagging.matches]


def wide(ascii_letters: str) -> str:
    return "".join(chr(ord(ch) + 0xFEE0) for ch in ascii_letters)


# The document


def test_the_documented_example_is_a_taxonomy() -> None:
    assert topics.__doc__ is not None
    start = topics.__doc__.index("    {\n")
    end = topics.__doc__.index("\n    }\n", start) + len("\n    }")
    example = Taxonomy.from_json(textwrap.dedent(topics.__doc__[start:end]))
    assert example.default_language == "en"
    assert example.topics == (
        Topic(
            "battery-life",
            (("de", "Akkulaufzeit"), ("en", "Battery life")),
            (("de", ("Akku", "Akkulaufzeit")), ("en", ("battery", "battery life", "charge"))),
        ),
    )


def test_a_taxonomy_reads_back_from_its_document_and_its_json() -> None:
    taxonomy = Taxonomy.from_document(
        doc(
            topic("battery-life", "battery", "battery life", de=["Akku"]),
            topic("fit", "fit", "runs small", pt_BR=["caimento"]),
        )
    )
    assert Taxonomy.from_document(taxonomy.to_document()) == taxonomy
    assert Taxonomy.from_json(taxonomy.to_json()) == taxonomy
    assert Taxonomy.from_json(taxonomy.to_json().encode()) == taxonomy
    assert Taxonomy.from_json(b"\xef\xbb\xbf" + taxonomy.to_json().encode()) == taxonomy  # a BOM
    assert [t.key for t in taxonomy.topics] == ["battery-life", "fit"]  # the shop's order


def test_languages_are_lower_case_and_sorted_and_texts_nfc() -> None:
    taxonomy = Taxonomy.from_document(
        {
            "format": 1,
            "defaultLanguage": "EN",
            "topics": [
                {
                    "key": "screen",
                    "labels": {"pt-BR": "Tela", "EN": "E\u0301cran"},
                    "words": {"pt-BR": ["tela"], "en": ["e\u0301cran", "screen"]},
                }
            ],
        }
    )
    assert taxonomy.default_language == "en"
    assert taxonomy.topics[0] == Topic(
        "screen",
        (("en", "\u00c9cran"), ("pt-br", "Tela")),
        (("en", ("\u00e9cran", "screen")), ("pt-br", ("tela",))),
    )


def test_the_canonical_json_is_one_text_per_taxonomy() -> None:
    one = Taxonomy.from_json('{"topics": [], "format": 1, "defaultLanguage": "en"}')
    other = Taxonomy.from_json('{"defaultLanguage":"en","format":1,"topics":[]}')
    assert one.to_json() == other.to_json() == '{"defaultLanguage":"en","format":1,"topics":[]}'


def good() -> Document:
    return doc(
        topic("battery-life", "battery", "charge", de=["Akku"]),
        topic("screen", "screen"),
    )


class Refused(NamedTuple):
    """A document made bad by setting ``change`` (a dotted path, ``topics.0.words.en.1``) to
    ``value`` (``...`` deletes it), and the refusal: its type and message, which starts
    with the path of what is wrong (``where``, or the changed one's)."""

    change: str
    value: object
    error: type[InvalidInput]
    message: str
    where: str | None = None

    def apply(self, document: Document) -> None:
        *parents, last = self.change.split(".")
        node: Any = document
        for part in parents:
            node = node[int(part)] if isinstance(node, list) else node[part]
        key: Any = int(last) if isinstance(node, list) else last
        if self.value is ...:
            del node[key]
        else:
            node[key] = self.value

    @property
    def path(self) -> str:
        return self.where or re.sub(r"\.(\d+)", r"[\1]", self.change)


REFUSED = [
    Refused("format", ..., TextMissing, "required"),
    Refused("format", 2, InvalidInput, "must be 1"),
    Refused("format", True, InvalidInput, "must be 1"),
    Refused("format", "1", InvalidInput, "must be 1"),
    Refused("colour", "red", InvalidInput, "no such field"),
    Refused("defaultLanguage", ..., TextMissing, "required"),
    Refused("defaultLanguage", "en_US", InvalidLanguage, "language must be a BCP 47 tag"),
    Refused("defaultLanguage", 7, InvalidInput, "must be a string"),
    Refused("topics", {}, InvalidInput, "must be an array"),
    Refused("topics.1", [], InvalidInput, "must be an object"),
    Refused("topics.1.colour", 1, InvalidInput, "no such field"),
    Refused("topics.1.key", ..., TextMissing, "required"),
    Refused("topics.1.key", 7, InvalidInput, "must be a string"),
    *(
        Refused("topics.1.key", key, InvalidInput, "1-40 lower-case letters a-z and digits")
        for key in ("", "Screen", "big screen", "big--screen", "screen-", "a#b", "écran")
    ),
    Refused(
        "topics.1.key", "battery-life", InvalidInput, "'battery-life' is the key of topics[0] too"
    ),
    Refused("topics.1.labels", ..., TextMissing, "required"),
    Refused("topics.1.labels", [], InvalidInput, "must be an object keyed by language"),
    Refused("topics.1.labels", {"de": "Bild"}, TextMissing, "the default", "topics[1].labels.en"),
    Refused("topics.1.labels.en", 1, InvalidInput, "must be a string"),
    Refused("topics.1.labels.en", " ", TextMissing, "must not be empty or invisible"),
    Refused("topics.1.labels.en", "\u200b", TextMissing, "must not be empty or invisible"),
    Refused("topics.1.labels.en", "a\nb", InvalidInput, "must not contain control"),
    Refused("topics.1.labels.en", "a\u202eb", InvalidInput, "must not contain control"),
    Refused("topics.1.labels.en", "a\ud800", InvalidInput, "must be valid Unicode"),
    Refused("topics.1.labels.en_GB", "x", InvalidLanguage, "language must be a BCP 47"),
    Refused("topics.1.labels.EN", "x", InvalidInput, "'en' is given twice"),
    Refused("topics.1.words", ..., TextMissing, "required"),
    Refused("topics.1.words", {}, TextMissing, "words in one language at least"),
    Refused("topics.1.words", ["screen"], InvalidInput, "must be an object keyed by"),
    Refused("topics.1.words.en", [], TextMissing, "at least one word or phrase"),
    Refused("topics.1.words.en", "screen", InvalidInput, "must be an array"),
    Refused("topics.0.words.d e", ["x"], InvalidLanguage, "language must be a BCP 47"),
    Refused("topics.0.words.DE", ["x"], InvalidInput, "'de' is given twice"),
    Refused("topics.0.words.de.0", 1, InvalidInput, "must be a string"),
    Refused("topics.0.words.de.0", "", TextMissing, "must not be empty"),
    Refused("topics.0.words.en.1", "a\tb", InvalidInput, "must not contain control"),
    Refused("topics.0.words.en.1", "?!", InvalidInput, "'?!' has no letters or digits"),
    Refused("topics.0.words.en.1", "battery, life", InvalidInput, "'battery, life': a phrase"),
    Refused(
        "topics.0.words.en.1",
        "Batteries",
        InvalidInput,
        "'Batteries' matches what topics[0].words.en[0] 'battery' does",
    ),
]


@pytest.mark.parametrize("case", REFUSED, ids=[f"{c.change}={c.value!r}" for c in REFUSED])
def test_a_bad_document_is_refused_naming_the_path(case: Refused) -> None:
    document = good()
    Taxonomy.from_document(copy.deepcopy(document))  # good before the change
    case.apply(document)
    with pytest.raises(case.error) as raised:
        Taxonomy.from_document(document)
    assert str(raised.value).startswith(f"{case.path}: {case.message}")


def test_a_document_that_is_not_an_object_is_refused() -> None:
    with pytest.raises(InvalidInput, match=r"^the taxonomy: must be an object"):
        Taxonomy.from_document([good()])


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ('{"format": 1,', "the taxonomy is not JSON: Expecting property name"),
        (b'{"format": 1, "x": "\xff"}', "the taxonomy is not UTF-8 (byte 20)"),
        ('{"format": 1}'.encode("utf-16"), "the taxonomy is not UTF-8 (byte 0)"),
        ('{"format": 1, "format": 1}', "the taxonomy has the field 'format' twice"),
        ("[" * 100_000 + "]" * 100_000, "the taxonomy is nested too deeply"),
        (" " * TAXONOMY_MAX_BYTES + "{}", f"the taxonomy: {TAXONOMY_MAX_BYTES + 2:,} bytes"),
    ],
)
def test_a_file_that_is_not_a_document_is_refused(data: str | bytes, message: str) -> None:
    with pytest.raises(InvalidInput) as raised:
        Taxonomy.from_json(data)
    assert str(raised.value).startswith(message)


# The limits, each met and then passed by one


def words_of(key: str, count: int) -> list[str]:
    """``count`` entries that stem apart."""
    return [f"{key.replace('-', '')}w{i}" for i in range(count)]


def three_letter_tags(count: int) -> list[str]:
    return [f"a{chr(97 + i // 26)}{chr(97 + i % 26)}" for i in range(count)]


def with_topics(count: int) -> Document:
    return doc(*(topic(f"t-{i}", f"word{i}") for i in range(count)))


def with_entries(count: int) -> Document:
    return doc(topic("t", *words_of("t", count)))


def with_label(length: int) -> Document:
    document = doc(topic("t", "word"))
    document["topics"][0]["labels"]["en"] = "x" * length
    return document


def with_key(length: int) -> Document:
    return doc(topic("k" * length, "word"))


def with_entry(length: int) -> Document:
    return doc(topic("t", "b" * (length - 2) + " x"))


def with_phrase(words: int) -> Document:
    return doc(topic("t", " ".join(["battery"] * words)))


def with_topic_languages(count: int) -> Document:
    document = doc(topic("t", "word"))
    document["topics"][0]["labels"] |= dict.fromkeys(three_letter_tags(count - 1), "x")
    return document


def with_languages(count: int) -> Document:
    """``count`` languages in all, none more than two in a topic."""
    tags = ["en", *three_letter_tags(count - 1)]
    return doc(*(topic(f"t-{i}", "word", language=tag) for i, tag in enumerate(tags)))


def with_words(count: int) -> Document:
    per, topics_needed = WORDS_PER_LANGUAGE_MAX, -(-count // WORDS_PER_LANGUAGE_MAX)
    return doc(
        *(
            topic(f"t-{i}", *words_of(f"t{i}", min(per, count - i * per)))
            for i in range(topics_needed)
        )
    )


LIMITS = [
    (with_topics, TOPICS_MAX, InvalidInput, "topics: at most 200 topics, not 201"),
    (with_entries, WORDS_PER_LANGUAGE_MAX, InvalidInput, "topics[0].words.en: at most 30 words"),
    (with_label, LABEL_MAX, TextTooLong, "topics[0].labels.en: at most 60 characters"),
    (with_key, TOPIC_KEY_MAX, InvalidInput, "topics[0].key: 1-40 lower-case"),
    (with_entry, WORD_CHARS_MAX, TextTooLong, "topics[0].words.en[0]: at most 40 characters"),
    (with_phrase, PHRASE_WORDS_MAX, InvalidInput, "topics[0].words.en[0]: 'battery battery "),
    (with_topic_languages, LANGUAGES_MAX, InvalidInput, "topics[0].labels: at most 40 languages"),
    (with_languages, LANGUAGES_MAX, InvalidInput, "topics: at most 40 languages in all, not 41"),
    (with_words, WORDS_MAX, InvalidInput, "topics: at most 5,000 words and phrases in all"),
]


@pytest.mark.parametrize(
    ("make", "limit", "error", "message"), LIMITS, ids=[c[0].__name__ for c in LIMITS]
)
def test_each_limit_is_allowed_and_one_more_is_refused(
    make: Callable[[int], Document], limit: int, error: type[InvalidInput], message: str
) -> None:
    Taxonomy.from_document(make(limit))
    with pytest.raises(error) as raised:
        Taxonomy.from_document(make(limit + 1))
    assert str(raised.value).startswith(message)


def test_the_limits_are_the_documented_ones() -> None:
    assert (TOPICS_MAX, WORDS_MAX, WORDS_PER_LANGUAGE_MAX, LANGUAGES_MAX) == (200, 5_000, 30, 40)
    assert (PHRASE_WORDS_MAX, WORD_CHARS_MAX, LABEL_MAX, TOPIC_KEY_MAX) == (4, 40, 60, 40)
    assert TOPICS_PER_COMMENT_MAX == 4
    assert TAXONOMY_MAX_BYTES == 256 * 1024


def test_a_taxonomy_over_its_size_in_bytes_is_refused() -> None:
    """Within every count, 200 topics labelled in 40 languages are too many bytes."""
    tags = ["en", *three_letter_tags(LANGUAGES_MAX - 1)]
    big = doc(*(topic(f"t-{i}", "word") for i in range(TOPICS_MAX)))
    for entry in big["topics"]:
        entry["labels"] = dict.fromkeys(tags, "x" * LABEL_MAX)
    with pytest.raises(InvalidInput, match=r"^the taxonomy: [\d,]+ bytes as JSON; at most 262,144"):
        Taxonomy.from_document(big)


def test_a_phrase_of_characters_counts_a_run_as_one_word() -> None:
    Taxonomy.from_document(doc(topic("t", "电池续航时间很长很长", language="zh")))
    Taxonomy.from_document(doc(topic("t", "iphone 电池 续航 长", language="zh")))
    with pytest.raises(InvalidInput, match="a phrase has at most 4 words"):
        Taxonomy.from_document(doc(topic("t", "iphone 电池 续航 很 长", language="zh")))


def test_an_entry_normalisation_makes_too_long_is_refused() -> None:
    # U+FDF2 is one letter, and four once normalised: 16 of them make a token of 64
    # letters, the longest that has a stem.
    Taxonomy.from_document(doc(topic("t", "\ufdf2" * 16, language="ar")))
    with pytest.raises(TextTooLong, match="too long once normalised"):
        Taxonomy.from_document(doc(topic("t", "\ufdf2" * 17, language="ar")))


# Tagging, language by language


@pytest.mark.parametrize(
    ("language", "entry", "text", "found"),
    [
        ("en", "battery", "The Batteries died within a week.", "Batteries"),
        ("de", "Bildschirm", "Die Bildschirme sind hell.", "Bildschirme"),
        ("de", "Akkulaufzeit", "Gute Akkulaufzeiten!", "Akkulaufzeiten"),
        ("fr", "écran", "Les écrans sont beaux.", "écrans"),
        ("fr", "autonomie", "J'adore l'autonomie.", "l'autonomie"),
        ("es", "pantalla", "Las pantallas brillan.", "pantallas"),
        ("it", "schermo", "Gli schermi sono belli.", "schermi"),
        ("nl", "scherm", "De schermen zijn mooi.", "schermen"),
        ("pt", "bateria", "As baterias duram.", "baterias"),
        ("ru", "аккумулятор", "Хватает аккумулятора надолго.", "аккумулятора"),
        ("sv", "skärm", "Skärmen är ljus.", "Skärmen"),
    ],
)
def test_inflected_forms_match_their_entry(
    language: str, entry: str, text: str, found: str
) -> None:
    tagging = tagger(topic("screen", entry, language=language)).tag(text, language)
    assert tagging.topics == ("screen",)
    assert matched(tagging, text) == [("screen", entry, found)]
    assert tagging.method is Method.STEMMED


def test_a_word_that_only_begins_like_an_entry_does_not_match() -> None:
    tagging = tagger(topic("battery", "battery")).tag("Batteryless, a battle", "en")
    assert tagging.topics == ()


# Phrases and overlaps


def test_a_phrase_matches_its_words_in_a_row() -> None:
    text = "Great Battery-Life, battery life  too"
    tagging = tagger(topic("battery-life", "battery life")).tag(text, "en")
    assert matched(tagging, text) == [
        ("battery-life", "battery life", "Battery-Life"),
        ("battery-life", "battery life", "battery life"),
    ]


def test_a_phrase_does_not_run_across_punctuation_or_lines() -> None:
    run = tagger(topic("battery-life", "battery life"))
    for text in ("battery. Life", "battery, life", "battery\nlife", "battery (life)"):
        assert run.tag(text, "en").topics == (), text


def test_the_longest_entry_wins_and_its_words_match_nothing_else() -> None:
    text = "battery life, and the battery"
    tagging = tagger(topic("battery-life", "battery", "battery life")).tag(text, "en")
    assert [(m.word, m.tokens) for m in tagging.matches] == [
        ("battery life", (0, 2)),
        ("battery", (4, 5)),
    ]


def test_a_longer_entry_of_another_topic_takes_the_words() -> None:
    run = tagger(topic("screen", "screen"), topic("screen-protector", "screen protector"))
    assert run.tag("The screen protector peeled off", "en").topics == ("screen-protector",)
    assert run.tag("The screen is sharp, the protector peeled", "en").topics == ("screen",)


def test_topics_with_the_same_entry_match_it_together() -> None:
    text = "It charges fast"
    tagging = tagger(topic("charging", "charge"), topic("battery", "charging")).tag(text, "en")
    assert tagging.topics == ("battery", "charging")  # one match each: by key
    assert matched(tagging, text) == [
        ("battery", "charging", "charges"),
        ("charging", "charge", "charges"),
    ]


def test_the_leftmost_match_wins_an_overlap() -> None:
    run = tagger(topic("a", "battery life"), topic("b", "life span"))
    text = "battery life span"
    assert matched(run.tag(text, "en"), text) == [("a", "battery life", "battery life")]


# Ranking and the maximum per comment


def test_topics_rank_by_matches_then_key_and_the_maximum_is_kept() -> None:
    keys = [f"topic-{letter}" for letter in "jihgfedcba"]
    run = tagger(*(topic(key, key.replace("-", "")) for key in keys))
    # topic-a once, topic-b twice ... topic-j ten times, in scrambled order.
    mentions = [key.replace("-", "") for n, key in enumerate(sorted(keys), 1) for _ in range(n)]
    text = " ".join(sorted(mentions, key=lambda w: hash(w) % 7))
    tagging = run.tag(text, "en")
    assert tagging.topics == tuple(sorted(keys, reverse=True)[:TOPICS_PER_COMMENT_MAX])
    assert tagging.dropped == tuple(sorted(keys, reverse=True)[TOPICS_PER_COMMENT_MAX:])
    assert {m.topic for m in tagging.matches} == set(tagging.topics)
    # The kept topics are mentioned 10, 9, ... times: the most mentioned ones.
    assert len(tagging.matches) == sum(range(11 - TOPICS_PER_COMMENT_MAX, 11))


def test_ties_rank_by_key() -> None:
    run = tagger(topic("zoom", "zoom"), topic("apple", "apple"), topic("mango", "mango"))
    assert run.tag("zoom mango apple", "en").topics == ("apple", "mango", "zoom")


# Languages


def test_a_regional_comment_uses_its_own_and_its_languages_words() -> None:
    run = tagger(topic("battery", "Akku", language="de", de_ch=["Batterie", "Akku"]))
    text = "Akku und Batterie"
    for language, found in (
        ("de-ch", [("Akku", "de-ch", "Akku"), ("Batterie", "de-ch", "Batterie")]),
        ("de-ch-1996", [("Akku", "de-ch", "Akku"), ("Batterie", "de-ch", "Batterie")]),
        ("de-at", [("Akku", "de", "Akku")]),
        ("de", [("Akku", "de", "Akku")]),
    ):
        tagging = run.tag(text, language)
        assert [(m.word, m.language, text[m.span[0] : m.span[1]]) for m in tagging.matches] == found


def test_a_comment_in_a_language_without_words_is_not_tagged() -> None:
    """Not even by the default language's words, which this French comment holds."""
    tagging = tagger(topic("battery", "battery")).tag("Une battery neuve", "fr")
    assert tagging == Tagging((), (), (), Method.UNTAGGED, None, 0)


def test_a_private_use_tag_falls_back_past_its_singleton() -> None:
    run = tagger(topic("battery", "battery"))
    assert run.tag("battery", "en-x-twain").topics == ("battery",)


@pytest.mark.parametrize(
    ("tag", "prefixes"),
    [
        ("de", ["de"]),
        ("de-ch-1996", ["de-ch-1996", "de-ch", "de"]),
        ("de-ch-x-phonebk", ["de-ch-x-phonebk", "de-ch", "de"]),  # never "de-ch-x"
        ("zh-hant-tw", ["zh-hant-tw", "zh-hant", "zh"]),
    ],
)
def test_a_language_falls_back_to_its_prefixes_most_specific_first(
    tag: str, prefixes: list[str]
) -> None:
    assert list(topics._prefixes(tag)) == prefixes


def test_the_comment_language_is_checked() -> None:
    with pytest.raises(InvalidLanguage):
        tagger(topic("battery", "battery")).tag("battery", "en_US")


def test_a_language_without_a_stemmer_matches_exact_tokens() -> None:
    run = tagger(topic("battery", "батарея", language="uk"))
    text = "Батарея добра, батареї ні"
    tagging = run.tag(text, "uk")
    assert matched(tagging, text) == [("battery", "батарея", "Батарея")]
    assert (tagging.method, tagging.stemmer) == (Method.EXACT, None)


@pytest.mark.parametrize(
    ("language", "entry", "text", "found"),
    [
        ("zh", "电池", "我的iPhone电池很好", "电池"),
        ("zh-hant", "電池", "電池續航很長", "電池"),
        ("ja", "バッテリー", "バッテリーの持ちがいい", "バッテリー"),
        ("ja", "バッテリー", "ﾊﾞｯﾃﾘｰの持ち", "ﾊﾞｯﾃﾘｰ"),
        ("th", "แบตเตอรี่", "แบตเตอรี่ดีมาก", "แบตเตอรี่"),
    ],
)
def test_scripts_without_spaces_match_entries_as_substrings(
    language: str, entry: str, text: str, found: str
) -> None:
    tagging = tagger(topic("battery", entry, language=language)).tag(text, language)
    assert matched(tagging, text) == [("battery", entry, found)]


def test_a_character_entry_matches_only_its_characters_in_a_row() -> None:
    """In a row as the words of a phrase: a space between them is no punctuation."""
    run = tagger(topic("battery", "电池", language="zh"))
    assert run.tag("电 池", "zh").topics == ("battery",)
    assert run.tag("电\uff0c池", "zh").topics == ()  # a full-width comma
    assert run.tag("池电", "zh").topics == ()


# Case and Unicode


@pytest.mark.parametrize(
    ("entry", "text"),
    [
        ("battery", "BATTERY"),
        ("fit", "Perfect \ufb01t"),  # the ligature in the text
        ("\ufb01t", "perfect fit"),  # and in the entry
        ("battery", f"the {wide('BATTERY')}"),
        ("écran", "un e\u0301cran"),  # decomposed in the text
        ("strasse", "Straße"),
        ("battery", "bat\u00adtery"),  # a soft hyphen
        ("don't", "don\u2019t"),
    ],
)
def test_case_and_unicode_forms_match(entry: str, text: str) -> None:
    assert tagger(topic("t", entry)).tag(text, "en").topics == ("t",)


# Explanations


def test_a_match_names_the_topic_the_entry_its_list_and_where() -> None:
    run = tagger(topic("battery-life", "battery life", de=["Akku"]), topic("fit", "fit"))
    text = "Überall:  \ufb01t, and battery-life!"
    tagging = run.tag(text, "en-gb")
    assert tagging.matches == (
        Match("fit", "fit", "en", (1, 2), (10, 12)),
        Match("battery-life", "battery life", "en", (3, 5), (18, 30)),
    )
    assert text[10:12] == "\ufb01t"
    assert text[18:30] == "battery-life"
    assert [t.text for t in analyze(text, "en")[3:5]] == ["battery", "life"]
    assert (tagging.method, tagging.stemmer) == (Method.STEMMED, "english")


def test_an_entry_keeps_its_spelling_in_explanations() -> None:
    text = "Der AKKU hält"
    tagging = tagger(topic("battery", "Akku", language="de")).tag(text, "de")
    assert matched(tagging, text) == [("battery", "Akku", "AKKU")]


# Determinism


def test_the_same_comment_gets_the_same_tagging() -> None:
    document = doc(topic("battery-life", "battery", "battery life"), topic("fit", "fit"))
    text = "battery life, fit, batteries and fits"
    first = Tagger.for_taxonomy(Taxonomy.from_document(document)).tag(text, "en")
    again = Tagger.for_taxonomy(Taxonomy.from_document(copy.deepcopy(document)))
    assert again.tag(text, "en") == first
    assert again.tag(text, "en") == again.tag(text, "en")


# A taxonomy with entries that overlap, for the properties below.
PROPERTY_TOPICS = [
    topic("battery-life", "battery life", "charge", "battery", en_gb=["battery life", "lives"]),
    topic("battery", "battery"),
    topic("screen", "screen"),
    topic("screen-protector", "screen protector"),
    topic("fit", "fit", "size runs small", "runs small"),
    topic("small", "small"),
    topic("great", "great"),
    topic("chinese", "电池", "电池 life"),
    topic("size", "size", en_gb_x_yz=["sizes", "great fit"]),
    topic("life", "life"),
]
PROPERTY_TAXONOMY = Taxonomy.from_document(doc(*PROPERTY_TOPICS))
PROPERTY_TAGGER = Tagger.for_taxonomy(PROPERTY_TAXONOMY)
VOCABULARY = [
    "battery",
    "batteries",
    "Battery",
    "life",
    "lives",
    "charge",
    "charging",
    "screen",
    "Screens",
    "protector",
    "the",
    "size",
    "runs",
    "small",
    "great",
    "fit",
    "\ufb01t",
    "电池",
    "电",
    "池",
    "sizes",
]
SEPARATORS = [" ", " ", " ", "-", ", ", ". ", "\n", ""]
CHAINS = {
    "en": ["en"],
    "en-gb": ["en-gb", "en"],
    "en-gb-x-yz": ["en-gb-x-yz", "en-gb", "en"],
    "fr": [],
}

comments = st.lists(
    st.tuples(st.sampled_from(VOCABULARY), st.sampled_from(SEPARATORS)), max_size=40
).map(lambda pairs: "".join(word + separator for word, separator in pairs))


def oracle(taxonomy: Taxonomy, text: str, language: str) -> Tagging:
    """Tagging the slow way: every entry tried at every token."""
    chain = CHAINS[language]
    entries = [
        (rank, t.key, entry, tag, tuple(token.stem for token in analyze(entry, tag)))
        for rank, tag in enumerate(chain)
        for t in taxonomy.topics
        for entry in dict(t.words).get(tag, ())
    ]
    if not entries:
        return Tagging((), (), (), Method.UNTAGGED, None, 0)
    tokens = analyze(text, language)
    found: list[Match] = []
    i = 0
    while i < len(tokens):
        fits = [
            e
            for e in entries
            if tuple(token.stem for token in tokens[i : i + len(e[4])]) == e[4]
            and all(token.joined for token in tokens[i + 1 : i + len(e[4])])
        ]
        if not fits:
            i += 1
            continue
        longest = max(len(e[4]) for e in fits)
        best: dict[str, tuple[int, str, str, str, tuple[str | None, ...]]] = {}
        for e in sorted(fits):
            if len(e[4]) == longest:
                best.setdefault(e[1], e)
        span = (tokens[i].span[0], tokens[i + longest - 1].span[1])
        found += [Match(k, best[k][2], best[k][3], (i, i + longest), span) for k in sorted(best)]
        i += longest
    counts = {key: sum(1 for m in found if m.topic == key) for key in {m.topic for m in found}}
    ranked = sorted(counts, key=lambda key: (-counts[key], key))
    kept = ranked[:TOPICS_PER_COMMENT_MAX]
    return Tagging(
        tuple(kept),
        tuple(m for m in found if m.topic in kept),
        tuple(ranked[TOPICS_PER_COMMENT_MAX:]),
        Method.STEMMED,
        "english",
        0,
    )


@given(text=comments, language=st.sampled_from(sorted(CHAINS)))
def test_the_tagger_agrees_with_trying_every_entry_everywhere(text: str, language: str) -> None:
    tagging = PROPERTY_TAGGER.tag(text, language)
    expected = oracle(PROPERTY_TAXONOMY, text, language)
    assert tagging.topics == expected.topics
    assert tagging.matches == expected.matches
    assert tagging.dropped == expected.dropped


@given(
    text=comments,
    language=st.sampled_from(sorted(CHAINS)),
    order=st.permutations(range(len(PROPERTY_TOPICS))),
    rng=st.randoms(use_true_random=False),
)
def test_the_order_of_topics_and_entries_changes_no_tagging(
    text: str, language: str, order: list[int], rng: Any
) -> None:
    shuffled = [copy.deepcopy(PROPERTY_TOPICS[i]) for i in order]
    for entry in shuffled:
        for words in entry["words"].values():
            rng.shuffle(words)
    taxonomy = Taxonomy.from_document(doc(*shuffled))
    run = Tagger.for_taxonomy(taxonomy)
    assert run.tag(text, language) == PROPERTY_TAGGER.tag(text, language)
    assert run.fingerprint == PROPERTY_TAGGER.fingerprint


def test_the_fingerprint_changes_with_the_entries_only() -> None:
    base = doc(topic("battery", "battery", de=["Akku"]), topic("fit", "fit"))
    fingerprint = tagger(*base["topics"]).fingerprint
    relabelled = copy.deepcopy(base)
    relabelled["topics"][0]["labels"] = {"en": "Power", "de": "Strom"}
    relabelled["defaultLanguage"] = "de"
    relabelled["topics"][1]["labels"]["de"] = "Passform"
    assert Tagger.for_taxonomy(Taxonomy.from_document(relabelled)).fingerprint == fingerprint
    more = copy.deepcopy(base)
    more["topics"][1]["words"]["en"].append("size")
    assert tagger(*more["topics"]).fingerprint != fingerprint
    renamed = copy.deepcopy(base)
    renamed["topics"][1]["key"] = "fits"
    assert tagger(*renamed["topics"]).fingerprint != fingerprint
    assert topics.TAGGER_VERSION.endswith("/snowballstemmer 3.1.1")


# Labels


def test_a_label_falls_back_to_its_language_then_the_default() -> None:
    taxonomy = Taxonomy.from_document(
        doc(
            {
                "key": "battery-life",
                "labels": {"en": "Battery life", "de": "Akkulaufzeit", "pt-BR": "Bateria"},
                "words": {"en": ["battery"]},
            }
        )
    )
    assert taxonomy.label("battery-life", "de-AT") == "Akkulaufzeit"
    assert taxonomy.label("battery-life", "pt-br") == "Bateria"
    assert taxonomy.label("battery-life", "pt") == "Battery life"
    assert taxonomy.label("battery-life", "ja") == "Battery life"
    assert taxonomy.label("battery-life") == "Battery life"
    assert taxonomy.label("retired") is None
    with pytest.raises(InvalidLanguage):
        taxonomy.label("battery-life", "de_AT")


# Cost


def test_the_largest_taxonomy_tags_a_long_comment_in_bounded_lookups() -> None:
    """5,000 phrases that share their first three words: every token of the comment
    starts a walk three words deep and no further."""
    document = doc(
        *(
            topic(f"t-{i}", *(f"alpha bravo charlie t{i}w{j}" for j in range(25)))
            for i in range(TOPICS_MAX)
        )
    )
    taxonomy = Taxonomy.from_document(document)
    assert sum(len(e) for t in taxonomy.topics for _, e in t.words) == WORDS_MAX
    run = Tagger.for_taxonomy(taxonomy)
    unit = "alpha bravo charlie zulu, "
    text = (unit * (10_000 // len(unit)))[:-100] + " ".join(f"t{i}w0" for i in range(10))
    text = text[:9_900] + " alpha bravo charlie t3w1 alpha bravo charlie t4w2"
    tokens = analyze(text, "en")
    tagging = run.tag(text, "en")
    assert len(text) < 10_000
    assert tagging.topics == ("t-3", "t-4")
    assert tagging.steps <= len(tokens) * (PHRASE_WORDS_MAX + 1)


def test_a_long_comment_of_characters_is_bounded_by_the_longest_entry() -> None:
    """An entry of 40 characters whose first 39 the whole comment repeats: a walk from
    every character, each at most 40 deep, never a pass over the text per entry."""
    entries = ["电" * (WORD_CHARS_MAX - 1) + chr(0x6C60 + i) for i in range(WORDS_PER_LANGUAGE_MAX)]
    run = tagger(topic("battery", *entries, language="zh"))
    text = "电" * 10_000
    tagging = run.tag(text, "zh")
    assert tagging.topics == ()
    assert tagging.steps <= 10_000 * (WORD_CHARS_MAX + 1)
    found = run.tag(text[:5_000] + entries[7][-2:] + text[:4_998], "zh")
    assert [m.word for m in found.matches] == [entries[7]]
    assert json.dumps(found.topics) == '["battery"]'
