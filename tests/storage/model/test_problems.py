"""Problems found all at once: their paths, their cap, and the errors they stand for."""

from __future__ import annotations

import pytest

from resolvers.user_errors import ProblemCode, code_of
from storage.base.errors import InvalidInput, TextMissing, TextTooLong
from storage.model.problems import (
    MORE_PROBLEMS,
    REQUIRED,
    SHAPE,
    UNKNOWN_FIELD,
    Collector,
    InvalidFields,
    Problem,
    expect_list,
    expect_object,
    expect_string,
)


@pytest.mark.parametrize(
    ("path", "dotted"),
    [
        (("definitions", 1, "values", 3, "label", "de"), "definitions[1].values[3].label.de"),
        (("attributes", 2, "value"), "attributes[2].value"),
        (("attributes",), "attributes"),
        (("gtin",), "gtin"),
        ((), ""),
    ],
)
def test_a_path_prints_as_people_read_it(path: tuple[str | int, ...], dotted: str) -> None:
    assert Problem(path, "X", "m").dotted == dotted


def test_a_path_is_strings_for_user_errors() -> None:
    problem = Problem(("attributes", 2, "value"), "X", "m")
    assert problem.field == ("attributes", "2", "value")


@pytest.mark.parametrize(
    ("error", "code"),
    [
        (InvalidInput, ProblemCode.INVALID),
        (TextMissing, ProblemCode.REQUIRED),
        (TextTooLong, ProblemCode.TOO_LONG),
    ],
)
def test_the_api_maps_a_problem_by_the_error_it_stands_for(
    error: type[InvalidInput], code: ProblemCode
) -> None:
    exc = Problem(("x",), "ANY", "the words", error).as_error()
    assert type(exc) is error
    assert str(exc) == "the words"
    assert code_of(exc) is code


def test_the_collector_keeps_every_problem_in_order_and_raises_them_together() -> None:
    out = Collector()
    out.raise_any()  # none: nothing raised
    out.add(("a",), "ONE", "first")
    out.add(("b", 0), "TWO", "second", TextMissing)
    assert len(out) == 2
    with pytest.raises(InvalidFields) as caught:
        out.raise_any()
    assert [(p.path, p.code) for p in caught.value.problems] == [(("a",), "ONE"), (("b", 0), "TWO")]
    assert str(caught.value) == "a: first; b[0]: second"
    assert isinstance(caught.value, InvalidInput)


def test_the_collector_lists_a_bounded_number_and_says_there_were_more() -> None:
    out = Collector(limit=3)
    for i in range(10):
        out.add(("x", i), "BAD", "bad")
    assert len(out) == 10
    listed = out.problems
    assert [p.code for p in listed] == ["BAD", "BAD", "BAD", MORE_PROBLEMS]
    assert listed[-1].path == ()
    assert str(InvalidFields(listed)).endswith("(input): more problems than the 3 listed")


def test_exactly_the_limit_says_nothing_more() -> None:
    out = Collector(limit=3)
    for i in range(3):
        out.add(("x", i), "BAD", "bad")
    assert MORE_PROBLEMS not in [p.code for p in out.problems]


def test_shape_helpers() -> None:
    out = Collector()
    assert expect_list([1], ("l",), out) == [1]
    assert expect_list((1,), ("l",), out) == (1,)
    assert expect_object({"a": 1}, ("o",), ("a",), out) == {"a": 1}
    assert expect_string("s", ("s",), out) == "s"
    assert len(out) == 0
    assert expect_list("abc", ("l",), out) is None
    assert expect_list({"a": 1}, ("l",), out) is None
    assert expect_object([("a", 1)], ("o",), ("a",), out) is None
    assert expect_object({"a": 1, "b": 2}, ("o",), ("a",), out) == {"a": 1, "b": 2}
    assert expect_string(None, ("s",), out) is None
    assert expect_string(5, ("s",), out) is None
    found = [(p.dotted, p.code, p.error) for p in out.problems]
    assert found == [
        ("l", SHAPE, InvalidInput),
        ("l", SHAPE, InvalidInput),
        ("o", SHAPE, InvalidInput),
        ("o.b", UNKNOWN_FIELD, InvalidInput),
        ("s", REQUIRED, TextMissing),
        ("s", SHAPE, InvalidInput),
    ]
