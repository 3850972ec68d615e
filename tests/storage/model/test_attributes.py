"""Attribute definitions and answers: every rule, every limit, every path and code."""

from __future__ import annotations

import copy
import re
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from storage.base.errors import InvalidInput, TextMissing, TextTooLong
from storage.model import attributes
from storage.model.attributes import (
    ANSWERS_MAX,
    ATTRIBUTES_MAX,
    DEFINITIONS_MAX_BYTES,
    KEY_MAX,
    LABEL_MAX,
    LANGUAGES_MAX,
    VALUE_MAX,
    VALUES_MAX,
    VALUES_MIN,
    Answer,
    AttributeDefinition,
    AttributeKind,
    AttributeValueDef,
    Code,
    DefinitionSet,
    Labels,
    answers_of,
    parse_definitions,
    validate_answers,
)
from storage.model.facets import MAX_ATTRIBUTE_ANSWERS, FacetKind, FacetValue
from storage.model.problems import MORE_PROBLEMS, PROBLEMS_MAX, InvalidFields

Data = list[dict[str, Any]]


def choice(key: str = "fit", values: tuple[str, ...] = ("small", "true-to-size", "large")) -> Any:
    return {
        "key": key,
        "kind": "CHOICE",
        "defaultLanguage": "en",
        "label": {"en": f"{key}?", "de": f"{key} (de)?"},
        "values": [{"value": v, "label": {"en": v.title(), "de": v.upper()}} for v in values],
    }


def fixed(key: str, kind: str) -> Any:
    return {"key": key, "kind": kind, "defaultLanguage": "en", "label": {"en": f"{key}?"}}


def sample() -> Data:
    return [choice(), fixed("comfort", "SCALE"), fixed("would-recommend", "BOOLEAN")]


def problems_of(call: Callable[[], object]) -> list[tuple[str, str]]:
    with pytest.raises(InvalidFields) as caught:
        call()
    return [(p.dotted, p.code) for p in caught.value.problems]


def definition_problems(data: object) -> list[tuple[str, str]]:
    return problems_of(lambda: parse_definitions(data))


# --- Definitions -----------------------------------------------------------------------


def test_the_module_docstring_example_is_a_valid_set() -> None:
    doc = attributes.__doc__ or ""
    example = doc[doc.index("    [{") : doc.index("}]\n\n") + 2]
    data = eval(" ".join(example.split()))  # the docstring shows Python data
    definitions = parse_definitions(data)
    assert [d.key for d in definitions] == ["fit", "would-recommend"]
    fit = definitions.get("fit")
    assert fit is not None
    assert fit.label("de") == "Wie passt es?"
    assert fit.values[2].label("de") == "Groß"


def test_a_valid_set_keeps_its_order_kinds_and_labels() -> None:
    definitions = parse_definitions(sample())
    assert [d.key for d in definitions] == ["fit", "comfort", "would-recommend"]
    assert len(definitions) == 3
    fit, comfort, recommend = definitions
    assert fit.kind is AttributeKind.CHOICE
    assert [v.value for v in fit.values] == ["small", "true-to-size", "large"]
    assert fit.default_language == "en"
    assert comfort.kind is AttributeKind.SCALE
    assert [v.value for v in comfort.values] == ["1", "2", "3", "4", "5"]
    assert [v.label("de") for v in recommend.values] == ["yes", "no"]  # no labels: the value
    assert definitions.get("nope") is None
    assert definitions.allows("fit", "small")
    assert not definitions.allows("fit", "Small")
    assert not definitions.allows("nope", "small")


def test_the_set_round_trips_through_its_data() -> None:
    definitions = parse_definitions(sample())
    assert parse_definitions(definitions.to_data()) == definitions
    assert parse_definitions([]) == DefinitionSet()


def test_kind_may_be_given_as_the_enum_member() -> None:
    data = [dict(fixed("comfort", "SCALE"), kind=AttributeKind.SCALE)]
    assert parse_definitions(data).definitions[0].kind is AttributeKind.SCALE


def test_labels_are_stored_in_nfc_under_lower_case_tags() -> None:
    data = [dict(fixed("comfort", "SCALE"), defaultLanguage="EN", label={"EN": "Cafe\u0301"})]
    labels = parse_definitions(data).definitions[0].labels
    assert labels == Labels("en", (("en", "Caf\u00e9"),))


def test_fixed_kinds_take_labels_for_their_values_in_their_order() -> None:
    labelled = dict(
        fixed("would-recommend", "BOOLEAN"),
        values=[
            {"value": "yes", "label": {"en": "Yes", "de": "Ja"}},
            {"value": "no", "label": {"en": "No"}},
        ],
    )
    definition = parse_definitions([labelled]).definitions[0]
    assert [v.label("de") for v in definition.values] == ["Ja", "No"]


@pytest.mark.parametrize(
    ("asked", "shown"),
    [
        ("de", "Passform"),
        ("DE", "Passform"),
        ("de-ch", "Passform (CH)"),
        ("de-CH-1996", "Passform (CH)"),  # narrowed to de-ch
        ("de-at", "Passform"),  # narrowed to de
        ("pt-br", "Caimento"),
        ("pt-x-private", "Caimento"),
        ("fr", "Fit"),  # none: the default
        (None, "Fit"),
        ("", "Fit"),
        ("not a tag!", "Fit"),
    ],
)
def test_a_label_falls_back_to_the_tag_it_narrows_then_the_default(
    asked: str | None, shown: str
) -> None:
    labels = Labels(
        "en",
        (("de", "Passform"), ("de-ch", "Passform (CH)"), ("en", "Fit"), ("pt", "Caimento")),
    )
    assert labels.get(asked) == shown
    value = AttributeValueDef("small", labels)
    assert value.label(asked) == shown


def test_definition_label_uses_its_default_language() -> None:
    definition = parse_definitions([dict(choice(), defaultLanguage="de")]).definitions[0]
    assert definition.label("fr") == "fit (de)?"
    assert definition.values[0].label("fr") == "SMALL"


def test_values_default_to_their_definition_default_language() -> None:
    data = choice()
    data["values"][0]["label"] = {"en": "Small"}
    definition = parse_definitions([data]).definitions[0]
    assert definition.values[0].label("de") == "Small"


def mutate(change: Callable[[Data], object]) -> Data:
    data = copy.deepcopy(sample())
    change(data)
    return data


def _set(path: list[Any], value: object) -> Callable[[Data], None]:
    def change(data: Data) -> None:
        target: Any = data
        for part in path[:-1]:
            target = target[part]
        target[path[-1]] = value

    return change


def _delete(path: list[Any]) -> Callable[[Data], None]:
    def change(data: Data) -> None:
        target: Any = data
        for part in path[:-1]:
            target = target[part]
        del target[path[-1]]

    return change


ONE_LINE_LABEL_BREAKS = ["a\nb", "a\rb", "a\tb", "a\u2028b", "a\u2029b"]


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        # Shapes.
        (_set([0], "fit"), [("definitions[0]", "SHAPE")]),
        (_set([0, "label"], ["en", "Fit"]), [("definitions[0].label", "SHAPE")]),
        (_set([0, "values"], {"small": "Small"}), [("definitions[0].values", "SHAPE")]),
        (_set([0, "values", 1], "small"), [("definitions[0].values[1]", "SHAPE")]),
        (_set([0, "key"], 7), [("definitions[0].key", "SHAPE")]),
        (_set([0, "label", "en"], 7), [("definitions[0].label.en", "SHAPE")]),
        (_set([0, "extra"], 1), [("definitions[0].extra", "UNKNOWN_FIELD")]),
        (_set([0, "values", 0, "extra"], 1), [("definitions[0].values[0].extra", "UNKNOWN_FIELD")]),
        # Required fields.
        (_delete([0, "key"]), [("definitions[0].key", "REQUIRED")]),
        (_delete([1, "kind"]), [("definitions[1].kind", "REQUIRED")]),
        (_set([1, "kind"], None), [("definitions[1].kind", "REQUIRED")]),
        (_delete([0, "defaultLanguage"]), [("definitions[0].defaultLanguage", "REQUIRED")]),
        (_delete([2, "label"]), [("definitions[2].label", "REQUIRED")]),
        (_delete([0, "values"]), [("definitions[0].values", "REQUIRED")]),
        (_delete([0, "values", 2, "label"]), [("definitions[0].values[2].label", "REQUIRED")]),
        (_delete([0, "values", 2, "value"]), [("definitions[0].values[2].value", "REQUIRED")]),
        (_set([0, "label", "en"], None), [("definitions[0].label.en", "REQUIRED")]),
        # Keys.
        (_set([1, "key"], "fit"), [("definitions[1].key", "DUPLICATE_KEY")]),
        *[
            (_set([0, "key"], bad), [("definitions[0].key", "KEY_INVALID")])
            for bad in ["Fit", "1fit", "fit--x", "fit_x", "-fit", "fit-", "fi t", "a=b", "a#b", ""]
        ],
        (_set([0, "key"], "k" * (KEY_MAX + 1)), [("definitions[0].key", "KEY_INVALID")]),
        # Kinds.
        *[
            (_set([1, "kind"], bad), [("definitions[1].kind", "KIND_INVALID")])
            for bad in ["scale", "RANGE", 3, ""]
        ],
        # Languages.
        (
            _set([0, "defaultLanguage"], "english"),
            [("definitions[0].defaultLanguage", "LANGUAGE_INVALID")],
        ),
        (_set([0, "label", "en_US"], "Fit"), [("definitions[0].label.en_US", "LANGUAGE_INVALID")]),
        (_set([0, "label", "DE"], "Fit"), [("definitions[0].label.DE", "DUPLICATE_LANGUAGE")]),
        (_delete([0, "label", "en"]), [("definitions[0].label", "LABEL_DEFAULT_MISSING")]),
        (
            _delete([0, "values", 1, "label", "en"]),
            [("definitions[0].values[1].label", "LABEL_DEFAULT_MISSING")],
        ),
        # Label texts.
        *[
            (
                _set([0, "values", 1, "label", "de"], blank),
                [("definitions[0].values[1].label.de", "LABEL_EMPTY")],
            )
            for blank in ["", "   ", "\u200b", "\u3164"]
        ],
        (
            _set([0, "label", "de"], "x" * (LABEL_MAX + 1)),
            [("definitions[0].label.de", "LABEL_TOO_LONG")],
        ),
        *[
            (_set([0, "label", "de"], bad), [("definitions[0].label.de", "LABEL_INVALID")])
            for bad in ["a\x07b", "a\u202eb", "\ud800", *ONE_LINE_LABEL_BREAKS]
        ],
        # Values.
        *[
            (
                _set([0, "values", 1, "value"], bad),
                [("definitions[0].values[1].value", "VALUE_INVALID")],
            )
            for bad in ["Small", "small size", "a=b", "a/b", "-a", "a-", "", "v" * (VALUE_MAX + 1)]
        ],
        (
            _set([0, "values", 2, "value"], "small"),
            [("definitions[0].values[2].value", "DUPLICATE_VALUE")],
        ),
        (
            _set([0, "values"], [{"value": "one", "label": {"en": "One"}}]),
            [("definitions[0].values", "TOO_FEW_VALUES")],
        ),
        (_set([0, "values"], []), [("definitions[0].values", "TOO_FEW_VALUES")]),
        (
            _set([1, "values"], [{"value": v, "label": {"en": v}} for v in "01234"]),
            [(f"definitions[1].values[{i}].value", "VALUES_FIXED") for i in range(5)],
        ),
        (
            _set([2, "values"], [{"value": v, "label": {"en": v}} for v in ("no", "yes")]),
            [
                ("definitions[2].values[0].value", "VALUES_FIXED"),
                ("definitions[2].values[1].value", "VALUES_FIXED"),
            ],
        ),
        (
            _set([1, "values"], [{"value": v, "label": {"en": v}} for v in "1234"]),
            [("definitions[1].values", "VALUES_FIXED")],
        ),
        (
            _set([2, "values"], [{"value": v, "label": {"en": v}} for v in ("yes", "no", "maybe")]),
            [
                ("definitions[2].values", "VALUES_FIXED"),
                ("definitions[2].values[2].value", "VALUES_FIXED"),
            ],
        ),
    ],
)
def test_each_rule_names_its_path_and_code(
    change: Callable[[Data], None], expected: list[tuple[str, str]]
) -> None:
    assert definition_problems(mutate(change)) == expected


@pytest.mark.parametrize("data", ["fit", {"key": "fit"}, None, 3])
def test_a_set_is_a_list(data: object) -> None:
    assert definition_problems(data) == [("definitions", "SHAPE")]


def test_the_field_name_is_the_callers() -> None:
    assert problems_of(lambda: parse_definitions("x", field="set")) == [("set", "SHAPE")]


def test_every_problem_is_reported_at_once_with_its_path() -> None:
    data = sample()
    data[0]["values"] = [{"value": f"v{i}", "label": {"en": f"V{i}"}} for i in range(4)]
    data[0]["values"][3]["label"]["de"] = "\u202eevil"
    data[1]["kind"] = "RANGE"
    data[2]["key"] = "fit"
    data[2]["label"] = {"fr": "Recommanderiez-vous ?"}
    assert definition_problems(data) == [
        ("definitions[0].values[3].label.de", "LABEL_INVALID"),
        ("definitions[1].kind", "KIND_INVALID"),
        ("definitions[2].key", "DUPLICATE_KEY"),
        ("definitions[2].label", "LABEL_DEFAULT_MISSING"),
    ]


def test_problems_stand_for_the_errors_the_api_maps() -> None:
    data = sample()
    del data[0]["key"]
    data[1]["label"]["en"] = "x" * (LABEL_MAX + 1)
    data[2]["key"] = "Bad"
    with pytest.raises(InvalidFields) as caught:
        parse_definitions(data)
    assert [p.error for p in caught.value.problems] == [TextMissing, TextTooLong, InvalidInput]


# --- Limits: at the limit accepted, one over refused ---------------------------------------


def test_attributes_per_set() -> None:
    at_limit = [fixed(f"q{i}", "BOOLEAN") for i in range(ATTRIBUTES_MAX)]
    assert len(parse_definitions(at_limit)) == ATTRIBUTES_MAX
    over = [*at_limit, fixed("one-more", "BOOLEAN")]
    assert definition_problems(over) == [("definitions", "TOO_MANY_ATTRIBUTES")]


def test_values_per_choice() -> None:
    at_limit = choice(values=tuple(f"v{i}" for i in range(VALUES_MAX)))
    assert len(parse_definitions([at_limit]).definitions[0].values) == VALUES_MAX
    at_least = choice(values=tuple(f"v{i}" for i in range(VALUES_MIN)))
    assert len(parse_definitions([at_least]).definitions[0].values) == VALUES_MIN
    over = choice(values=tuple(f"v{i}" for i in range(VALUES_MAX + 1)))
    assert definition_problems([over]) == [("definitions[0].values", "TOO_MANY_VALUES")]


def test_languages_per_label() -> None:
    languages = ["en", *(f"l{chr(97 + i // 26)}{chr(97 + i % 26)}" for i in range(LANGUAGES_MAX))]
    data = fixed("comfort", "SCALE")
    data["label"] = dict.fromkeys(languages[:LANGUAGES_MAX], "Comfort")
    assert len(parse_definitions([data]).definitions[0].labels.texts) == LANGUAGES_MAX
    data["label"] = dict.fromkeys(languages[: LANGUAGES_MAX + 1], "Comfort")
    assert definition_problems([data]) == [("definitions[0].label", "TOO_MANY_LANGUAGES")]


def test_label_length_in_characters() -> None:
    for text in ("x" * LABEL_MAX, "\U0001f600" * LABEL_MAX, "\u00e9" * LABEL_MAX):
        data = fixed("comfort", "SCALE")
        data["label"] = {"en": text}
        assert parse_definitions([data]).definitions[0].label() == text


def test_key_and_value_length() -> None:
    key, value = "k" * KEY_MAX, "v" * VALUE_MAX
    definition = parse_definitions([choice(key, (value, "b"))]).definitions[0]
    assert (definition.key, definition.values[0].value) == (key, value)


def big_set(label_chars: int) -> Data:
    """A full set: every attribute a CHOICE of every value, labelled in every language."""
    languages = [f"l{chr(97 + i // 26)}{chr(97 + i % 26)}" for i in range(LANGUAGES_MAX)]
    label = dict.fromkeys(languages, "x" * label_chars)
    return [
        {
            "key": f"q{a}",
            "kind": "CHOICE",
            "defaultLanguage": languages[0],
            "label": label,
            "values": [{"value": f"v{v}", "label": label} for v in range(VALUES_MAX)],
        }
        for a in range(ATTRIBUTES_MAX)
    ]


def test_the_whole_set_is_bounded_in_bytes() -> None:
    # 12 attributes x 13 labels x 24 languages = 3,744 texts; with 14 characters each the
    # texts alone are 52,416 bytes, with 20 each 74,880.
    small = parse_definitions(big_set(14))
    assert small.size <= DEFINITIONS_MAX_BYTES
    assert definition_problems(big_set(20)) == [("definitions", "DEFINITIONS_TOO_LARGE")]


def test_the_size_counts_utf8_bytes_of_every_text() -> None:
    data = [
        {
            "key": "fit",  # 3
            "kind": "CHOICE",  # 6
            "defaultLanguage": "en",  # 2
            "label": {"en": "\u00e9"},  # 2 + 2
            "values": [
                {"value": "a", "label": {"en": "A"}},  # 1 + 2 + 1
                {"value": "b", "label": {"en": "\U0001f600"}},  # 1 + 2 + 4
            ],
        }
    ]
    assert parse_definitions(data).size == 3 + 6 + 2 + 4 + 4 + 7


def test_too_large_is_reported_with_other_problems() -> None:
    data = big_set(20)
    data[0]["key"] = "Bad"
    assert definition_problems(data) == [
        ("definitions[0].key", "KEY_INVALID"),
        ("definitions", "DEFINITIONS_TOO_LARGE"),
    ]


# --- Keys and values go into facet tokens --------------------------------------------------


def key_oracle(text: str) -> bool:
    """The key rule, written out the long way."""
    parts = text.split("-")
    ascii_lower_digits = set("abcdefghijklmnopqrstuvwxyz0123456789")
    return (
        0 < len(text) <= KEY_MAX
        and text[0] in "abcdefghijklmnopqrstuvwxyz"
        and all(part and set(part) <= ascii_lower_digits for part in parts)
    )


@given(st.text(alphabet="abcXYZ019-_=#/ é", max_size=40))
def test_keys_are_accepted_exactly_by_the_rule(key: str) -> None:
    data = [fixed("comfort", "SCALE") | {"key": key}]
    if key_oracle(key):
        assert parse_definitions(data).definitions[0].key == key
    else:
        assert ("definitions[0].key", "KEY_INVALID") in definition_problems(data)


keys = st.from_regex(r"[a-z][a-z0-9]{0,7}(-[a-z0-9]{1,7}){0,2}", fullmatch=True)
values = st.from_regex(r"[a-z0-9]{1,8}(-[a-z0-9]{1,7}){0,2}", fullmatch=True)


@given(key=keys, value=values)
def test_every_valid_key_and_value_make_a_facet_value(key: str, value: str) -> None:
    definition = parse_definitions([choice(key, (value, f"{value}-other"))]).definitions[0]
    facet = Answer(definition.key, definition.values[0].value).facet
    assert facet.kind is FacetKind.ATTRIBUTE
    assert facet.token == f"a:{key}={value}"


@given(
    st.lists(
        st.tuples(
            keys,
            st.sampled_from(["CHOICE", "SCALE", "BOOLEAN"]),
            st.lists(values, min_size=2, max_size=4, unique=True),
        ),
        max_size=5,
        unique_by=lambda t: t[0],
    ),
    st.dictionaries(
        st.sampled_from(["de", "fr", "pt-br", "zh-hant"]),
        st.text(alphabet="abcäöüß日本\U0001f600", min_size=1, max_size=10),
    ),
)
def test_any_valid_set_round_trips(
    spec: list[tuple[str, str, list[str]]], extra_labels: dict[str, str]
) -> None:
    data: Data = []
    for key, kind, vals in spec:
        item = fixed(key, kind)
        item["label"] |= extra_labels
        if kind == "CHOICE":
            item["values"] = [{"value": v, "label": {"en": v} | extra_labels} for v in vals]
        data.append(item)
    definitions = parse_definitions(data)
    assert parse_definitions(definitions.to_data()) == definitions
    assert [d.key for d in definitions] == [key for key, _, _ in spec]


def test_a_comments_answers_come_back_from_its_facet_values() -> None:
    facets = frozenset(
        {
            FacetValue.attribute("would-recommend", "yes"),
            FacetValue.topic("battery-life"),
            FacetValue.attribute("fit", "small"),
            FacetValue(FacetKind.PHOTOS),
        }
    )
    answers = answers_of(facets)
    assert answers == (Answer("fit", "small"), Answer("would-recommend", "yes"))
    assert {a.facet for a in answers} == facets - {
        FacetValue.topic("battery-life"),
        FacetValue(FacetKind.PHOTOS),
    }
    assert answers_of(()) == ()


# --- The values themselves keep their invariants ------------------------------------------


def test_frozen_values_refuse_what_the_parser_never_makes() -> None:
    with pytest.raises(ValueError, match="default"):
        Labels("en", (("de", "x"),))
    with pytest.raises(ValueError, match="default"):
        Labels("en", (("en", "x"), ("de", "y")))  # unsorted
    en = Labels("en", (("en", "x"),))
    with pytest.raises(ValueError, match="kind"):
        AttributeDefinition("comfort", AttributeKind.SCALE, en, (AttributeValueDef("1", en),))
    with pytest.raises(ValueError, match="kind"):
        AttributeDefinition(
            "fit",
            AttributeKind.CHOICE,
            en,
            (AttributeValueDef("a", en), AttributeValueDef("a", en)),
        )
    definition = AttributeDefinition("fit", AttributeKind.CHOICE, en, (AttributeValueDef("a", en),))
    with pytest.raises(ValueError, match="repeat"):
        DefinitionSet((definition, definition))


# --- Answers ---------------------------------------------------------------------------


@pytest.fixture
def definitions() -> DefinitionSet:
    return parse_definitions(sample())


def answer_problems(
    definitions: DefinitionSet, answers: object, **kw: Any
) -> list[tuple[str, str]]:
    return problems_of(lambda: validate_answers(definitions, answers, **kw))


def test_answers_are_returned_sorted_by_key(definitions: DefinitionSet) -> None:
    answers = [
        {"key": "would-recommend", "value": "no"},
        {"key": "fit", "value": "large"},
        Answer("comfort", "5"),
    ]
    assert validate_answers(definitions, answers) == (
        Answer("comfort", "5"),
        Answer("fit", "large"),
        Answer("would-recommend", "no"),
    )
    assert validate_answers(definitions, []) == ()
    assert validate_answers(definitions, ()) == ()


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("comfort", v)
        for v in [
            "05",
            "0",
            "6",
            " 5",
            "5 ",
            "5.0",
            "five",
            "",
            "\uff15",
            "\u0665",
        ]  # fullwidth, arabic 5
    ]
    + [("would-recommend", v) for v in ["Yes", "YES", "true", "1", "y", "yes "]]
    + [("fit", v) for v in ["Small", "medium", "1", "yes"]],
)
def test_only_an_offered_value_is_an_answer(
    definitions: DefinitionSet, key: str, value: str
) -> None:
    answers = [{"key": key, "value": value}]
    assert answer_problems(definitions, answers) == [("attributes[0].value", "VALUE_NOT_ALLOWED")]


@pytest.mark.parametrize(
    ("key", "value"),
    [("comfort", v) for v in "12345"] + [("would-recommend", "yes"), ("would-recommend", "no")],
)
def test_the_fixed_values_are_answers(definitions: DefinitionSet, key: str, value: str) -> None:
    assert validate_answers(definitions, [{"key": key, "value": value}]) == (Answer(key, value),)


@pytest.mark.parametrize(
    ("answers", "expected"),
    [
        ("fit=small", [("attributes", "SHAPE")]),
        ({"key": "fit", "value": "small"}, [("attributes", "SHAPE")]),
        (None, [("attributes", "SHAPE")]),
        (["fit"], [("attributes[0]", "SHAPE")]),
        (
            [{"key": "fit", "value": "small", "note": "x"}],
            [("attributes[0].note", "UNKNOWN_FIELD")],
        ),
        ([{"value": "small"}], [("attributes[0].key", "REQUIRED")]),
        ([{"key": "fit"}], [("attributes[0].value", "REQUIRED")]),
        ([{"key": "fit", "value": None}], [("attributes[0].value", "REQUIRED")]),
        ([{"key": 1, "value": "small"}], [("attributes[0].key", "SHAPE")]),
        ([{"key": "fit", "value": 5}], [("attributes[0].value", "SHAPE")]),
        ([{"key": "size", "value": "small"}], [("attributes[0].key", "UNKNOWN_KEY")]),
        (
            [{"key": "fit", "value": "small"}, {"key": "fit", "value": "large"}],
            [("attributes[1].key", "DUPLICATE_ANSWER")],
        ),
        (
            [{"key": "fit", "value": "small"}, {"key": "fit", "value": "small"}],
            [("attributes[1].key", "DUPLICATE_ANSWER")],
        ),
    ],
)
def test_each_answer_rule_names_its_path_and_code(
    definitions: DefinitionSet, answers: object, expected: list[tuple[str, str]]
) -> None:
    assert answer_problems(definitions, answers) == expected


def test_every_answer_problem_is_reported_at_once(definitions: DefinitionSet) -> None:
    answers = [
        {"key": "fit", "value": "medium"},
        {"key": "size", "value": "m"},
        {"key": "comfort", "value": "05"},
        {"key": "fit", "value": "Small"},
        {"key": "would-recommend", "value": "yes"},
    ]
    too_many = [("attributes", "TOO_MANY_ANSWERS")] if len(answers) > ANSWERS_MAX else []
    assert answer_problems(definitions, answers) == [
        *too_many,
        ("attributes[0].value", "VALUE_NOT_ALLOWED"),
        ("attributes[1].key", "UNKNOWN_KEY"),
        ("attributes[2].value", "VALUE_NOT_ALLOWED"),
        ("attributes[3].key", "DUPLICATE_ANSWER"),
        ("attributes[3].value", "VALUE_NOT_ALLOWED"),
    ]


def test_messages_say_what_is_offered(definitions: DefinitionSet) -> None:
    with pytest.raises(InvalidFields) as caught:
        validate_answers(definitions, [{"key": "fit", "value": "m"}, {"key": "size", "value": "m"}])
    not_allowed, unknown = caught.value.problems
    assert not_allowed.message == "'fit' takes one of 'small', 'true-to-size', 'large'"
    assert unknown.message == "'size' is not asked here; asked: fit, comfort, would-recommend"
    with pytest.raises(InvalidFields) as caught:
        validate_answers(DefinitionSet(), [{"key": "size", "value": "m"}])
    assert caught.value.problems[0].message == "'size': this product asks no questions"


def test_answers_per_comment_follow_the_facet_budget() -> None:
    assert ANSWERS_MAX == MAX_ATTRIBUTE_ANSWERS
    many = parse_definitions([fixed(f"q{i}", "BOOLEAN") for i in range(ANSWERS_MAX + 1)])
    at_limit = [{"key": f"q{i}", "value": "yes"} for i in range(ANSWERS_MAX)]
    assert len(validate_answers(many, at_limit)) == ANSWERS_MAX
    over = [*at_limit, {"key": f"q{ANSWERS_MAX}", "value": "no"}]
    assert answer_problems(many, over) == [("attributes", "TOO_MANY_ANSWERS")]


def test_problems_are_capped_however_long_the_input(definitions: DefinitionSet) -> None:
    answers = [{"key": f"k{i}", "value": "x"} for i in range(500)]
    found = answer_problems(definitions, answers)
    assert len(found) == PROBLEMS_MAX + 1
    assert found[0] == ("attributes", "TOO_MANY_ANSWERS")
    assert found[-1] == ("", MORE_PROBLEMS)


def test_a_stored_answer_sent_back_unchanged_is_kept_though_retired(
    definitions: DefinitionSet,
) -> None:
    stored = (Answer("fit", "medium"), Answer("size", "m"))
    resent = [{"key": "fit", "value": "medium"}, {"key": "size", "value": "m"}]
    assert validate_answers(definitions, resent, stored=stored) == stored
    # Without the stored answers, both are refused.
    assert answer_problems(definitions, resent) == [
        ("attributes[0].value", "VALUE_NOT_ALLOWED"),
        ("attributes[1].key", "UNKNOWN_KEY"),
    ]


def test_a_retired_answer_may_stay_but_not_change_to_another_retired_value(
    definitions: DefinitionSet,
) -> None:
    stored = (Answer("fit", "medium"), Answer("size", "m"))
    changed = [{"key": "fit", "value": "x-large"}, {"key": "size", "value": "l"}]
    assert answer_problems(definitions, changed, stored=stored) == [
        ("attributes[0].value", "VALUE_NOT_ALLOWED"),
        ("attributes[1].value", "VALUE_NOT_ALLOWED"),
    ]
    # Changing to an offered value is an ordinary answer.
    moved = [{"key": "fit", "value": "small"}]
    assert validate_answers(definitions, moved, stored=stored) == (Answer("fit", "small"),)


POOL_KEYS = ["fit", "comfort", "would-recommend", "size", "Fit"]
POOL_VALUES = ["small", "large", "1", "5", "05", "yes", "no", "Yes", "m"]


@given(st.lists(st.tuples(st.sampled_from(POOL_KEYS), st.sampled_from(POOL_VALUES)), max_size=12))
def test_answers_against_a_brute_force_oracle(items: list[tuple[str, str]]) -> None:
    definitions = parse_definitions(sample())
    offered = {
        "fit": {"small", "true-to-size", "large"},
        "comfort": {"1", "2", "3", "4", "5"},
        "would-recommend": {"yes", "no"},
    }
    expected: list[tuple[str, str]] = []
    if len(items) > ANSWERS_MAX:
        expected.append(("attributes", "TOO_MANY_ANSWERS"))
    first: dict[str, int] = {}
    for i, (key, value) in enumerate(items):
        if key in first:
            expected.append((f"attributes[{i}].key", "DUPLICATE_ANSWER"))
        elif key not in offered:
            expected.append((f"attributes[{i}].key", "UNKNOWN_KEY"))
        first.setdefault(key, i)
        if key in offered and value not in offered[key]:
            expected.append((f"attributes[{i}].value", "VALUE_NOT_ALLOWED"))
    answers = [{"key": key, "value": value} for key, value in items]
    if expected:
        assert answer_problems(definitions, answers) == expected
    else:
        result = validate_answers(definitions, answers)
        assert result == tuple(sorted(Answer(k, v) for k, v in items))
        assert [a.key for a in result] == sorted({k for k, _ in items})


def test_codes_are_stable_strings() -> None:
    for code in Code:
        assert code.value == code.name
        assert re.fullmatch(r"[A-Z_]+", code.value)
