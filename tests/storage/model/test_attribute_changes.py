"""Changing definitions: what is retired, what a remap may move, and what it does."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from storage.model.attribute_changes import (
    MOVES_MAX,
    NOTHING_RETIRED,
    RETIRED_MAX,
    RETIRED_MAX_BYTES,
    Move,
    Remap,
    Retired,
    RetiredValue,
    parse_remap,
    retire,
)
from storage.model.attributes import (
    ATTRIBUTES_MAX,
    LANGUAGES_MAX,
    VALUES_MAX,
    Answer,
    AttributeKind,
    DefinitionSet,
    Labels,
    parse_definitions,
    validate_answers,
)
from storage.model.problems import InvalidFields


def choice(key: str, values: tuple[str, ...], *, lang: str = "en") -> Any:
    return {
        "key": key,
        "kind": "CHOICE",
        "defaultLanguage": lang,
        "label": {lang: f"{key}?"},
        "values": [{"value": v, "label": {lang: v.title()}} for v in values],
    }


def fixed(key: str, kind: str) -> Any:
    return {"key": key, "kind": kind, "defaultLanguage": "en", "label": {"en": f"{key}?"}}


def defs(*items: Any) -> DefinitionSet:
    return parse_definitions(list(items))


FIT = choice("fit", ("xs", "small", "large"))
COMFORT = fixed("comfort", "SCALE")


def pairs(retired: Retired) -> list[tuple[str, str]]:
    return [(r.key, r.value) for r in retired]


def problems_of(call: Callable[[], object]) -> list[tuple[str, str]]:
    with pytest.raises(InvalidFields) as caught:
        call()
    return [(p.dotted, p.code) for p in caught.value.problems]


# --- Retired values ------------------------------------------------------------------------


def test_no_change_retires_nothing() -> None:
    old = defs(FIT, COMFORT)
    assert retire(old, old) == NOTHING_RETIRED
    assert retire(DefinitionSet(), old) == NOTHING_RETIRED  # the first set


def test_a_removed_value_is_retired_with_the_labels_it_had() -> None:
    old = defs(FIT)
    new = defs(choice("fit", ("small", "large")))
    retired = retire(old, new)
    assert retired.values == (
        RetiredValue(
            key="fit",
            kind=AttributeKind.CHOICE,
            value="xs",
            label=Labels("en", (("en", "Xs"),)),
            attribute_label=Labels("en", (("en", "fit?"),)),
        ),
    )
    assert retired.get("fit", "xs") is not None
    assert retired.get("fit", "small") is None
    assert len(retired) == 1


def test_a_removed_attribute_retires_every_value() -> None:
    old = defs(FIT, COMFORT)
    retired = retire(old, defs(FIT))
    assert pairs(retired) == [("comfort", v) for v in "12345"]
    assert [r.kind for r in retired.of("comfort")] == [AttributeKind.SCALE] * 5
    assert retired.of("fit") == ()


def test_reordering_and_relabelling_retire_nothing() -> None:
    old = defs(FIT, COMFORT)
    relabelled = choice("fit", ("large", "small", "xs"), lang="de")
    assert retire(old, defs(COMFORT, relabelled)) == NOTHING_RETIRED


def test_retired_values_accumulate_and_come_back_when_offered_again() -> None:
    v1 = defs(FIT)
    v2 = defs(choice("fit", ("small", "large")))
    v3 = defs(choice("fit", ("small", "medium")))
    after_v2 = retire(v1, v2)
    after_v3 = retire(v2, v3, after_v2)
    assert pairs(after_v3) == [("fit", "large"), ("fit", "xs")]
    v4 = defs(choice("fit", ("xs", "small", "medium")))
    after_v4 = retire(v3, v4, after_v3)
    assert pairs(after_v4) == [("fit", "large")]  # xs is offered again: its answers count as such


def test_a_value_retired_again_takes_its_latest_labels() -> None:
    v1 = defs(choice("fit", ("xs", "small")))
    v2 = defs(choice("fit", ("small", "large")))
    relabelled = choice("fit", ("xs", "small", "large"))
    relabelled["values"][0]["label"] = {"en": "Extra small"}
    v3 = defs(relabelled)
    retired = retire(v1, v2)
    retired = retire(v2, v3, retired)
    retired = retire(v3, v2, retired)
    found = retired.get("fit", "xs")
    assert found is not None
    assert found.label.get() == "Extra small"


def test_a_key_keeps_its_kind() -> None:
    old = defs(FIT, COMFORT)
    new = defs(FIT, fixed("comfort", "BOOLEAN"))
    assert problems_of(lambda: retire(old, new)) == [("definitions[1].kind", "KIND_CHANGED")]


def test_a_removed_key_keeps_its_kind_while_its_answers_count() -> None:
    old = defs(FIT, COMFORT)
    without = defs(FIT)
    retired = retire(old, without)
    back_as_choice = defs(FIT, choice("comfort", ("soft", "hard")))
    assert problems_of(lambda: retire(without, back_as_choice, retired)) == [
        ("definitions[1].kind", "KIND_CHANGED")
    ]
    # Its answers remapped (settled), the key is free for another kind.
    settled = retired.without((r.key, r.value) for r in retired.of("comfort"))
    assert retire(without, back_as_choice, settled) == NOTHING_RETIRED
    # Back with its own kind, its values count again.
    assert retire(without, defs(FIT, COMFORT), retired) == NOTHING_RETIRED


def test_too_many_retired_values_are_refused() -> None:
    full = defs(
        *(choice(f"q{a}", tuple(f"v{v}" for v in range(VALUES_MAX))) for a in range(ATTRIBUTES_MAX))
    )
    assert ATTRIBUTES_MAX * VALUES_MAX == RETIRED_MAX
    retired = retire(full, DefinitionSet())
    assert len(retired) == RETIRED_MAX  # at the limit: accepted
    # One fewer, then two more: one over the limit.
    almost = retired.without([("q0", "v0")])
    again = defs(choice("other", ("a", "b")))
    assert problems_of(lambda: retire(again, DefinitionSet(), almost)) == [
        ("definitions", "TOO_MANY_RETIRED")
    ]


def labelled(key: str, values: tuple[str, ...], chars: int) -> Any:
    """A CHOICE labelled in every language with texts of ``chars`` characters."""
    languages = [f"l{chr(97 + i // 26)}{chr(97 + i % 26)}" for i in range(LANGUAGES_MAX)]
    label = dict.fromkeys(languages, "x" * chars)
    return {
        "key": key,
        "kind": "CHOICE",
        "defaultLanguage": languages[0],
        "label": label,
        "values": [{"value": v, "label": label} for v in values],
    }


def test_retired_values_are_bounded_in_bytes_too() -> None:
    # Each retired value keeps its labels and its attribute's: 2 x 24 texts with their
    # 3-byte tags. With 12 values of 12 attributes, 144 x 48 texts of 9 characters are
    # 82,944 bytes, over the bound; of 5 characters, 55,296, under it.
    def removed(chars: int) -> Retired:
        values = tuple(f"v{v}" for v in range(VALUES_MAX))
        sets = [defs(labelled(f"q{a}", values, chars)) for a in range(ATTRIBUTES_MAX)]
        retired = NOTHING_RETIRED
        for one in sets:  # one attribute removed at a time: each set is within its own bound
            retired = retire(one, DefinitionSet(), retired)
        return retired

    small = removed(5)
    assert len(small) == RETIRED_MAX
    assert sum(r.size for r in small) <= RETIRED_MAX_BYTES
    with pytest.raises(InvalidFields) as caught:
        removed(9)
    assert [(p.dotted, p.code) for p in caught.value.problems] == [
        ("definitions", "RETIRED_TOO_LARGE")
    ]


def test_a_retired_values_size_counts_every_text() -> None:
    retired = retire(defs(choice("fit", ("xs", "small"))), DefinitionSet())
    # fit CHOICE small + "en" "Small" + "en" "fit?"; fit CHOICE xs + "en" "Xs" + "en" "fit?"
    assert [(r.value, r.size) for r in retired] == [
        ("small", 3 + 6 + 5 + 7 + 6),
        ("xs", 3 + 6 + 2 + 4 + 6),
    ]


def test_retired_values_keep_their_invariant() -> None:
    en = Labels("en", (("en", "x"),))
    a = RetiredValue("fit", AttributeKind.CHOICE, "a", en, en)
    b = RetiredValue("fit", AttributeKind.CHOICE, "b", en, en)
    assert list(Retired((a, b))) == [a, b]
    with pytest.raises(ValueError, match="sorted"):
        Retired((b, a))
    with pytest.raises(ValueError, match="sorted"):
        Retired((a, a))
    assert Retired((a, b)).without([("fit", "a"), ("fit", "zzz")]) == Retired((b,))


# --- Remaps --------------------------------------------------------------------------------


@pytest.fixture
def scene() -> tuple[DefinitionSet, Retired]:
    """fit lost 'xs' and 'large' (now 'small', 'medium', 'x-large'); comfort was removed."""
    old = defs(FIT, COMFORT)
    new = defs(choice("fit", ("small", "medium", "x-large")))
    return new, retire(old, new)


def test_the_scene() -> None:
    old = defs(FIT, COMFORT)
    new = defs(choice("fit", ("small", "medium", "x-large")))
    expected = [("comfort", v) for v in "12345"] + [("fit", "large"), ("fit", "xs")]
    assert pairs(retire(old, new)) == expected


def test_a_valid_remap_moves_or_drops_each_retired_value_once(
    scene: tuple[DefinitionSet, Retired],
) -> None:
    definitions, retired = scene
    data = [
        {"key": "fit", "value": "xs", "to": "small"},
        {"key": "comfort", "value": "1", "to": None},
        {"key": "fit", "value": "large", "to": "x-large"},
    ]
    remap = parse_remap(data, definitions, retired)
    assert remap.moves == (
        Move("comfort", "1", None),
        Move("fit", "large", "x-large"),
        Move("fit", "xs", "small"),
    )
    assert remap.pairs == (("comfort", "1"), ("fit", "large"), ("fit", "xs"))
    assert parse_remap(remap.to_data(), definitions, retired) == remap
    assert parse_remap([], definitions, retired) == Remap()


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        ("fit", [("remap", "SHAPE")]),
        (["x"], [("remap[0]", "SHAPE")]),
        (
            [{"key": "fit", "value": "xs", "to": "small", "why": 1}],
            [("remap[0].why", "UNKNOWN_FIELD")],
        ),
        ([{"key": "fit", "value": "xs"}], [("remap[0].to", "REQUIRED")]),
        ([{"key": "fit", "value": "xs", "to": 3}], [("remap[0].to", "SHAPE")]),
        ([{"value": "xs", "to": "small"}], [("remap[0].key", "REQUIRED")]),
        ([{"key": "fit", "to": "small"}], [("remap[0].value", "REQUIRED")]),
        # Only a retired value moves: not a current one, not one never offered.
        ([{"key": "fit", "value": "small", "to": "medium"}], [("remap[0].value", "NOT_RETIRED")]),
        ([{"key": "fit", "value": "xxl", "to": None}], [("remap[0].value", "NOT_RETIRED")]),
        ([{"key": "size", "value": "m", "to": None}], [("remap[0].value", "NOT_RETIRED")]),
        # To a current value of the same key.
        ([{"key": "fit", "value": "xs", "to": "large"}], [("remap[0].to", "TARGET_NOT_ALLOWED")]),
        ([{"key": "fit", "value": "xs", "to": "5"}], [("remap[0].to", "TARGET_NOT_ALLOWED")]),
        ([{"key": "comfort", "value": "1", "to": "2"}], [("remap[0].to", "TARGET_NOT_ALLOWED")]),
        (
            [
                {"key": "fit", "value": "xs", "to": "small"},
                {"key": "fit", "value": "xs", "to": None},
            ],
            [("remap[1]", "DUPLICATE_MOVE")],
        ),
    ],
)
def test_each_remap_rule_names_its_path_and_code(
    scene: tuple[DefinitionSet, Retired], data: object, expected: list[tuple[str, str]]
) -> None:
    definitions, retired = scene
    assert problems_of(lambda: parse_remap(data, definitions, retired)) == expected


def test_every_remap_problem_is_reported_at_once(scene: tuple[DefinitionSet, Retired]) -> None:
    definitions, retired = scene
    data = [
        {"key": "fit", "value": "small", "to": "medium"},
        {"key": "fit", "value": "xs", "to": "large"},
        {"key": "comfort", "value": "1", "to": "2"},
        {"key": "fit", "value": "xs", "to": "small"},
    ]
    assert problems_of(lambda: parse_remap(data, definitions, retired, field="moves")) == [
        ("moves[0].value", "NOT_RETIRED"),
        ("moves[1].to", "TARGET_NOT_ALLOWED"),
        ("moves[2].to", "TARGET_NOT_ALLOWED"),
        ("moves[3]", "DUPLICATE_MOVE"),
    ]


def test_the_messages_say_what_is_offered(scene: tuple[DefinitionSet, Retired]) -> None:
    definitions, retired = scene
    data = [
        {"key": "fit", "value": "xs", "to": "large"},
        {"key": "comfort", "value": "1", "to": "2"},
    ]
    with pytest.raises(InvalidFields) as caught:
        parse_remap(data, definitions, retired)
    assert [p.message for p in caught.value.problems] == [
        "'fit' offers 'small', 'medium', 'x-large'",
        "'comfort' is retired: only drop",
    ]


def test_moves_are_bounded(scene: tuple[DefinitionSet, Retired]) -> None:
    definitions, retired = scene
    data = [{"key": "fit", "value": "xs", "to": "small"}] * (MOVES_MAX + 1)
    found = problems_of(lambda: parse_remap(data, definitions, retired))
    assert found[0] == ("remap", "TOO_MANY_MOVES")


def test_a_remap_keeps_its_invariant() -> None:
    with pytest.raises(ValueError, match="sorted"):
        Remap((Move("fit", "xs", None), Move("fit", "a", None)))
    with pytest.raises(ValueError, match="sorted"):
        Remap((Move("fit", "xs", None), Move("fit", "xs", "small")))


def test_apply_moves_drops_and_leaves_the_rest() -> None:
    remap = Remap((Move("comfort", "1", None), Move("fit", "xs", "small")))
    answers = (Answer("comfort", "1"), Answer("fit", "xs"), Answer("would-recommend", "yes"))
    assert remap.apply(answers) == (Answer("fit", "small"), Answer("would-recommend", "yes"))
    assert remap.touches(answers)
    untouched = (Answer("comfort", "2"), Answer("fit", "small"))
    assert remap.apply(untouched) == untouched
    assert not remap.touches(untouched)
    assert remap.moved(Answer("fit", "xs")) == Answer("fit", "small")
    assert remap.moved(Answer("comfort", "1")) is None
    assert remap.moved(Answer("comfort", "3")) == Answer("comfort", "3")


def test_a_remapped_comment_passes_the_definitions(scene: tuple[DefinitionSet, Retired]) -> None:
    definitions, retired = scene
    data = [{"key": r.key, "value": r.value, "to": None} for r in retired.of("comfort")]
    data += [
        {"key": "fit", "value": "xs", "to": "small"},
        {"key": "fit", "value": "large", "to": "x-large"},
    ]
    remap = parse_remap(data, definitions, retired)
    stored = (Answer("comfort", "4"), Answer("fit", "large"))
    after = remap.apply(stored)
    assert after == (Answer("fit", "x-large"),)
    # Every retired value settled, the answers are current ones.
    payload = [{"key": a.key, "value": a.value} for a in after]
    assert validate_answers(definitions, payload) == after
    assert retired.without(remap.pairs) == NOTHING_RETIRED


@given(
    st.lists(
        st.tuples(
            st.sampled_from(["fit", "comfort", "would-recommend"]),
            st.sampled_from(["xs", "1", "small", "5", "yes"]),
        ),
        max_size=3,
        unique_by=lambda t: t[0],
    )
)
def test_apply_is_settled_after_once(items: list[tuple[str, str]]) -> None:
    """Sources are retired values and targets current ones, so a remap applied to its own
    result changes nothing, and no key is ever answered twice."""
    remap = Remap((Move("comfort", "1", None), Move("fit", "xs", "small")))
    answers = tuple(Answer(k, v) for k, v in items)
    once = remap.apply(answers)
    assert remap.apply(once) == once
    assert not remap.touches(once)
    assert len({a.key for a in once}) == len(once)
    assert list(once) == sorted(once)
    dropped = sum(1 for a in answers if (a.key, a.value) == ("comfort", "1"))
    assert len(once) == len(answers) - dropped
