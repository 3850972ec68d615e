"""Facet values, their keys, and the transaction budget that bounds them per comment."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from storage.base.errors import InvalidFacet
from storage.model.facets import (
    ACTION_BUDGET,
    MAX_FACET_VALUES,
    TRANSACTION_ACTIONS,
    FacetKind,
    FacetValue,
    Listed,
    Scope,
    counter_attr,
    counter_sk,
    entry_sk,
    facet_lang_partition,
    facet_moves,
    facet_partition,
    transaction_actions,
)

parts = st.from_regex(r"[a-z0-9][a-z0-9._:-]{0,20}", fullmatch=True)


@given(key=parts, value=parts, topic=parts)
def test_a_token_names_its_value_and_nothing_else(key: str, value: str, topic: str) -> None:
    for facet in (FacetValue.attribute(key, value), FacetValue.topic(topic)):
        assert FacetValue.parse(facet.token) == facet
        assert "#" not in facet.token
        assert "/" not in facet.token
    assert FacetValue.parse("photos").kind is FacetKind.PHOTOS
    assert FacetValue.parse("*").kind is FacetKind.GROUP_ALL


@pytest.mark.parametrize(
    ("key", "value"),
    [("fit#1", "small"), ("fit", "small/large"), ("fit", "a=b"), ("", "x"), ("Fit", "x")],
)
def test_a_part_keys_cannot_carry_is_refused(key: str, value: str) -> None:
    with pytest.raises(InvalidFacet):
        FacetValue.attribute(key, value)


def test_unknown_tokens_are_refused() -> None:
    for token in ("x:fit", "a:fit", "t:", "photo", ""):
        with pytest.raises(InvalidFacet):
            FacetValue.parse(token)


def test_the_keys_of_an_entry_and_its_counter() -> None:
    fit = FacetValue.attribute("fit", "small")
    product, group = Scope.product("sku-1"), Scope.group("boot-x")
    assert entry_sk(product, fit) == "FACET#P:sku-1#a:fit=small"
    assert entry_sk(group, fit) == "FACET#G:boot-x#a:fit=small"
    assert facet_partition(group, fit, 4) == "F#G:boot-x#a:fit=small#4"
    assert facet_lang_partition(product, fit, "pt-BR", 2) == "F#P:sku-1#a:fit=small#pt-br#2"
    assert (product.pk, group.pk) == ("PRODUCT#sku-1", "GROUP#boot-x")
    assert counter_sk(FacetValue.topic("battery-life")) == "F#t:battery-life"
    assert counter_attr("v", None, 5) == "v#*#5"
    assert counter_attr("c", "de", 1) == "c#de#1"


def _values(prefix: str, n: int) -> frozenset[FacetValue]:
    return frozenset(FacetValue.topic(f"{prefix}{i}") for i in range(n))


def test_the_largest_edit_of_the_largest_comment_fits_with_room_to_spare() -> None:
    # Every value replaced by another, in a group: each value of either side moves an
    # entry and a counter item in both scopes.
    # An incentivized comment moves its incentivized counter item in both scopes too.
    before, after = _values("old", MAX_FACET_VALUES), _values("new", MAX_FACET_VALUES)
    worst = transaction_actions(before, after, grouped=True, incentivized=True)
    # Its own 9, the membership's check, the group's listing entry and stats and the
    # count the group holds of the product (3), then the values.
    assert worst == 9 + 1 + 3 + (2 * MAX_FACET_VALUES * 2 + 1) * 2 == 87
    assert worst <= ACTION_BUDGET < TRANSACTION_ACTIONS
    # One more value each side would not fit the budget: the maxima are the limit.
    bigger = transaction_actions(
        _values("old", MAX_FACET_VALUES + 1),
        _values("new", MAX_FACET_VALUES + 1),
        grouped=True,
        incentivized=True,
    )
    assert bigger > ACTION_BUDGET


def test_the_worst_transition_the_moves_make_is_the_one_counted() -> None:
    # The moves themselves, not only the formula: every value replaced, in a group,
    # incentivized and verified, with a rating change.
    def state(prefix: str, rating: int) -> Listed:
        return Listed.of(
            language="en",
            rating=rating,
            verified=True,
            incentivized=True,
            facets=_values(prefix, MAX_FACET_VALUES),
            product=Scope.product("p1"),
            group=Scope.group("g1"),
        )

    moves = facet_moves(state("old", 2), state("new", 5))
    counted = transaction_actions(
        _values("old", MAX_FACET_VALUES),
        _values("new", MAX_FACET_VALUES),
        grouped=True,
        incentivized=True,
    )
    # All but the transition's own actions, the membership's check and the held count
    # are facet moves (the group's listing included).
    assert moves.actions == counted - 9 - 1 - 1


def test_incentivized_is_counted_in_a_counter_item_and_never_listed() -> None:
    inc = FacetValue(FacetKind.INCENTIVIZED)
    assert FacetValue.parse("inc") == inc
    state = Listed.of(
        language="de",
        rating=3,
        verified=True,
        incentivized=True,
        facets=frozenset(),
        product=Scope.product("p1"),
        group=None,
    )
    moves = facet_moves(None, state)
    assert moves.put == frozenset()
    assert moves.counters == {
        (Scope.product("p1"), inc): {
            f"{kind}#{lang}#3": 1 for kind in ("c", "v", "i", "x") for lang in ("de", "*")
        }
    }


def test_a_create_outside_a_group_costs_two_actions_per_value() -> None:
    three = _values("t", 3)
    # Its own 8 and the membership's check (the product may be joining a group).
    assert transaction_actions(frozenset(), three, grouped=False) == 9 + 1 + 6
    assert transaction_actions(three, three, grouped=False) == 9 + 1 + 6


# A model of transitions: random comments' states, moved one after another; the counter
# deltas summed must equal a recount of the final states, and the entries present must be
# exactly the final pairs. A move left out (say, the group scope on a language change)
# makes a count drift.
languages = st.sampled_from(["en", "de"])
values = st.frozensets(
    st.sampled_from(
        [FacetValue.attribute("fit", "small"), FacetValue.topic("battery"), FacetValue.topic("fit")]
    )
)
states = st.one_of(
    st.none(),
    st.builds(
        lambda language, rating, verified, incentivized, facets, grouped: Listed.of(
            language=language,
            rating=rating,
            verified=verified,
            incentivized=incentivized,
            facets=facets,
            product=Scope.product("p1"),
            group=Scope.group(grouped) if grouped else None,
        ),
        languages,
        st.integers(1, 5),
        st.booleans(),
        st.booleans(),
        values,
        st.sampled_from([None, "g1", "g2"]),
    ),
)


@given(st.lists(st.lists(states, min_size=1, max_size=6), min_size=1, max_size=4))
def test_moves_summed_over_any_transitions_equal_a_recount(
    lives: list[list[Listed | None]],
) -> None:
    counted: dict[tuple[Scope, FacetValue], dict[str, int]] = {}
    entries: set[tuple[int, Scope, FacetValue]] = set()
    for n, life in enumerate(lives):  # each list: one comment's states, in turn
        previous: Listed | None = None
        for state in life:
            moves = facet_moves(previous, state)
            for pair, deltas in moves.counters.items():
                into = counted.setdefault(pair, {})
                for name, delta in deltas.items():
                    into[name] = into.get(name, 0) + delta
                    assert into[name] >= 0  # a decrement never takes a count below zero
            entries -= {(n, *pair) for pair in moves.delete}
            entries |= {(n, *pair) for pair in moves.put}
            assert all(pair[1].kind.listed for pair in moves.put | moves.delete)
            previous = state
    expected: dict[tuple[Scope, FacetValue], dict[str, int]] = {}
    present: set[tuple[int, Scope, FacetValue]] = set()
    for n, life in enumerate(lives):
        final = life[-1]
        if final is None:
            continue
        for scope, vals in final.values.items():
            for value in vals:
                if value.kind.listed:
                    present.add((n, scope, value))
                into = expected.setdefault((scope, value), {})
                for name, one in final.counts().items():
                    into[name] = into.get(name, 0) + one
    nonzero = {k: {a: c for a, c in v.items() if c} for k, v in counted.items()}
    assert {k: v for k, v in nonzero.items() if v} == expected
    assert entries == present


def test_a_body_edit_rewrites_the_entries_and_moves_no_counter() -> None:
    listed = Listed.of(
        language="en",
        rating=4,
        verified=False,
        incentivized=False,
        facets=frozenset({FacetValue.topic("battery")}),
        product=Scope.product("p1"),
        group=Scope.group("g1"),
    )
    moves = facet_moves(listed, listed)
    assert moves.counters == {}
    assert len(moves.put) == 3  # the topic in both scopes, and the group's listing
    assert moves.actions == 3
