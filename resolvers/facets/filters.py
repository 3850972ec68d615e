"""A listing's facets from a client (``CommentFacets``), as storage's facet values."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from resolvers.errors import BadUserInput
from storage.base.errors import InvalidFacet
from storage.model import rules
from storage.model.facets import MAX_ATTRIBUTE_ANSWERS, FacetKind, FacetValue


@dataclass(frozen=True, slots=True)
class Facets:
    """What ``CommentFacets`` asks, checked: the values every comment must have, whether
    incentivized reviews are left out, and the product a group's listing is narrowed to."""

    values: frozenset[FacetValue] = frozenset()
    exclude_incentivized: bool = False
    product_id: str | None = None


NONE = Facets()


def facets_of(
    attributes: Sequence[tuple[str, str]] | None,
    topic: str | None,
    with_photos: bool | None,
    exclude_incentivized: bool | None,
    product_id: str | None,
) -> Facets:
    """The facets asked for; BAD_USER_INPUT naming the field for anything malformed. For
    every boolean, false or null is no filter."""
    values: set[FacetValue] = set()
    keys: set[str] = set()
    for n, (key, value) in enumerate(attributes or ()):
        if key in keys:
            raise BadUserInput(f"facets.attributes[{n}]: one value per attribute ({key!r})")
        keys.add(key)
        try:
            values.add(FacetValue.attribute(key, value))
        except InvalidFacet as exc:
            raise BadUserInput(f"facets.attributes[{n}]: {exc}") from exc
    if len(keys) > MAX_ATTRIBUTE_ANSWERS:
        raise BadUserInput(
            f"facets.attributes: a comment answers at most {MAX_ATTRIBUTE_ANSWERS} attributes"
        )
    if topic is not None:
        try:
            values.add(FacetValue.topic(topic))
        except InvalidFacet as exc:
            raise BadUserInput(f"facets.topic: {exc}") from exc
    if with_photos:
        values.add(FacetValue(FacetKind.PHOTOS))
    narrowed = None if product_id is None else rules.validate_product_id(product_id)
    return Facets(frozenset(values), bool(exclude_incentivized), narrowed)
