from __future__ import annotations

import pytest

from storage.base.errors import InvalidCommentText, InvalidFacet, InvalidPageRequest, InvalidRating
from storage.model.comments import NewComment, PageRequest, RatingCounts
from storage.model.facets import MAX_FACET_VALUES, FacetKind, FacetValue
from storage.model.items import comment_to_item, item_to_comment


def test_page_size_bounds() -> None:
    assert PageRequest(0).size == 0
    assert PageRequest(100).size == 100
    with pytest.raises(InvalidPageRequest):
        PageRequest(True)


def _new(**overrides: object) -> NewComment:
    fields: dict[str, object] = {
        "product_id": "42",
        "language": "en",
        "rating": 4,
        "body": "Good",
        "author_id": "ann",
    }
    fields.update(overrides)
    return NewComment(**fields)  # type: ignore[arg-type]


def test_new_comment_normalises() -> None:
    c = _new(language="PT-br", title="   ")
    assert c.language == "pt-br"
    assert c.title is None


@pytest.mark.parametrize(
    "overrides",
    [
        {"body": ""},
        {"body": "   "},
        {"body": "x" * 10_001},
        {"title": "t" * 201},
        {"body": "bell\x07"},
        {"author_id": ""},
        {"idempotency_key": ""},
        # C1 controls, bidi overrides and isolates: text that displays as something else.
        {"body": "price \x85 list"},
        {"body": "great \u202egnirts"},
        {"title": "\u2067hidden\u2069"},
        {"author_name": "admin\u202e"},
        # Nothing visible: zero-width spaces, joiners, BOM, soft hyphens, Hangul fillers.
        {"body": "\u200b\u200c\u200d\ufeff"},
        {"body": " \u00ad\u3164\u2800 \u034f"},
        {"body": "\U000e0041\U000e0042"},  # tag characters
        # Bytes are limited too: 10,000 emoji are 10,000 characters but 40,000 bytes.
        {"body": "\U0001f600" * 10_000},
        {"title": "\U0001f600" * 201},
        # Lone surrogates (JSON admits "\ud800"): not text at all, they cannot be encoded.
        {"body": "fine \ud800 words"},
        {"title": "\udfff"},
        {"author_name": "Ann\ud83d"},
        {"author_id": "ann\ud800"},
        {"idempotency_key": "key\ud800"},
        {"author_id": "ann\u200b"},  # an id with an invisible character in it
    ],
)
def test_new_comment_rejects_bad_text(overrides: dict[str, object]) -> None:
    with pytest.raises(InvalidCommentText):
        _new(**overrides)


def test_texts_are_stored_in_nfc_and_right_to_left_text_is_fine() -> None:
    decomposed = "Cafe\u0301"
    c = _new(body=decomposed, title=decomposed)
    assert c.body == c.title == "Caf\u00e9"
    # Arabic and Hebrew with marks, emoji with joiners and line breaks are ordinary text.
    for body in ("\u0645\u0645\u062a\u0627\u0632 \u200f", "\U0001f469\u200d\U0001f4bb\nok"):
        assert _new(body=body).body == body
    assert _new(body="\U0001f600" * 5000).body


def test_new_comment_rejects_bad_rating() -> None:
    with pytest.raises(InvalidRating):
        _new(rating=0)


def test_rating_counts() -> None:
    c = RatingCounts("42", None, (1, 0, 0, 0, 3))
    assert c.total == 4
    assert c.average == 4.0
    assert c.matching(frozenset({1, 2})) == 1
    assert RatingCounts("42", None).average is None
    with pytest.raises(ValueError, match="non-negative"):
        RatingCounts("42", None, (1, -1, 0, 0, 0))


def test_a_comment_keeps_its_facet_values_and_incentive_through_its_item() -> None:
    new = NewComment(
        "p1",
        "en",
        4,
        "Fits well",
        "ann",
        facets=frozenset({FacetValue.attribute("fit", "small"), FacetValue.topic("battery")}),
        incentivized=True,
    )
    comment = new.stored_as("0" * 32, "2026-11-28T10:00:00.000Z", None)
    item = comment_to_item(comment)
    assert item["facets"] == {"SS": ["a:fit=small", "t:battery"]}
    assert item["incentivized"] == {"BOOL": True}
    assert item_to_comment(item) == comment
    # None of them: no attribute at all (a string set cannot be empty).
    plain = comment_to_item(
        NewComment("p1", "en", 4, "x", "a").stored_as("1" * 32, "2026-11-28T10:00:00.000Z", None)
    )
    assert "facets" not in plain
    assert "incentivized" not in plain
    assert item_to_comment(plain).facets == frozenset()


@pytest.mark.parametrize(
    "facets",
    [
        {FacetValue.attribute("fit", "small"), FacetValue.attribute("fit", "large")},
        {FacetValue(FacetKind.GROUP_ALL)},
        {FacetValue.topic(f"t{n}") for n in range(MAX_FACET_VALUES + 1)},
    ],
    ids=["answered-twice", "group-listing", "too-many"],
)
def test_a_comment_names_each_attribute_once_and_few_values(facets: set[FacetValue]) -> None:
    with pytest.raises(InvalidFacet):
        NewComment("p1", "en", 4, "x", "a", facets=frozenset(facets))
