"""What a facet counter item says (``storage.model.facets``), as numbers a plan, a
``totalCount`` and the summaries are made from. Pure: no I/O.

A counter item keeps, per language (and ``*`` for all) and rating, how many published
comments of its scope have its value (``c``), and of those how many are verified purchases
(``v``), incentivized (``i``), and both (``x``). Every filter a facet listing takes besides
ratings is then a difference of two of them: verified only is ``v``; leaving out
incentivized reviews is ``c - i``; both is ``v - x``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from storage.base.types import Item
from storage.model import rules
from storage.model.comments import RatingCounts
from storage.model.facets import COUNT_KINDS, FacetValue, Scope, counter_attr

Counts = tuple[int, int, int, int, int]  # ratings 1..5


@dataclass(frozen=True, slots=True)
class FacetCounts:
    """One value's counter item in one scope: its counts by name (``c#en#5``)."""

    scope: Scope
    value: FacetValue
    numbers: Mapping[str, int] = field(default_factory=dict)

    @classmethod
    def of_item(cls, scope: Scope, value: FacetValue, item: Item | None) -> FacetCounts:
        """The counts of a counter item as read (None: no comment has the value yet).
        A count below zero is corruption, refused rather than hidden."""
        numbers: dict[str, int] = {}
        for name, wire in (item or {}).items():
            if "N" in wire and name[:1] in COUNT_KINDS and "#" in name:
                n = int(wire["N"])
                if n < 0:
                    raise ValueError(f"{scope.token} {value.token}: count {name} is {n}")
                numbers[name] = n
        return cls(scope, value, numbers)

    def count(self, kind: str, language: str | None, rating: int) -> int:
        return self.numbers.get(counter_attr(kind, language, rating), 0)

    def by_rating(self, kind: str, language: str | None) -> Counts:
        c1, c2, c3, c4, c5 = (self.count(kind, language, r) for r in rules.RATINGS)
        return c1, c2, c3, c4, c5

    def matching(
        self, language: str | None, *, verified_only: bool, exclude_incentivized: bool
    ) -> Counts:
        """Per rating, the comments a listing with these filters takes of this value."""
        kind = "v" if verified_only else "c"
        held = self.by_rating(kind, language)
        if not exclude_incentivized:
            return held
        left = self.by_rating("x" if verified_only else "i", language)
        a, b, c, d, e = (h - n for h, n in zip(held, left, strict=True))
        return a, b, c, d, e

    def of_language(self, language: str | None) -> FacetCounts:
        """Only the counts of one language (None: of all), what a listing of it needs."""
        lang = "*" if language is None else language
        kept = {n: c for n, c in self.numbers.items() if n.split("#")[1] == lang}
        return FacetCounts(self.scope, self.value, kept)

    def languages(self) -> tuple[str, ...]:
        """The languages it counts comments in, sorted."""
        found = {name.split("#")[1] for name in self.numbers if self.numbers[name]}
        return tuple(sorted(found - {"*"}))

    def as_rating_counts(self, product_id: str, language: str | None) -> RatingCounts:
        """Its counts of one language (None: all) as a stats item's: all and verified."""
        return RatingCounts(
            product_id, language, self.by_rating("c", language), self.by_rating("v", language)
        )


def less(counts: RatingCounts, incentivized: FacetCounts) -> RatingCounts:
    """A scope's counters without its incentivized comments (``incentivized`` is the
    scope's incentivized counter item): exact, as both count the same comments."""
    lang = counts.language
    all_left = tuple(
        n - i for n, i in zip(counts.by_rating, incentivized.by_rating("i", lang), strict=True)
    )
    verified_left = tuple(
        n - x for n, x in zip(counts.verified, incentivized.by_rating("x", lang), strict=True)
    )
    if any(n < 0 for n in all_left + verified_left):
        raise ValueError(f"{counts.product_id}: more incentivized comments than comments")
    a1, a2, a3, a4, a5 = all_left
    v1, v2, v3, v4, v5 = verified_left
    return RatingCounts(counts.product_id, lang, (a1, a2, a3, a4, a5), (v1, v2, v3, v4, v5))
