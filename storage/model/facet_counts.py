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
from storage.model.comments import ListingFilter, RatingCounts
from storage.model.facets import COUNT_KINDS, FacetKind, FacetValue, Scope, counter_attr

Counts = tuple[int, int, int, int, int]  # ratings 1..5
# A group's own listing: every comment counted in the group (its counter item is the
# group's stats).
GROUP_LISTING = FacetValue(FacetKind.GROUP_ALL)


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


@dataclass(frozen=True, slots=True)
class FacetListingCounts:
    """The counters a facet listing is planned and counted from: the product's own (of the
    listing's language), each of the listing's values' counter items, and the product's
    incentivized counter item."""

    scope: RatingCounts
    values: Mapping[FacetValue, FacetCounts]
    incentivized: FacetCounts

    def primary(self, listing: ListingFilter) -> FacetValue | None:
        """The value whose entries are read: the fewest matching comments, then by token;
        a group's own listing (``*``) when a group's listing has no other value; None for
        a product's listing without values (its own partitions are read)."""
        if not listing.facets:
            return GROUP_LISTING if listing.of_group else None
        return min(listing.facets, key=lambda v: (sum(self._matching(listing, v)), v.token))

    def held(self, listing: ListingFilter) -> Counts:
        """Per rating, the items of the partitions the fan-out reads."""
        primary = self.primary(listing)
        if primary is None:
            own = self.scope.only_verified() if listing.verified_only else self.scope
            return own.by_rating
        return self.values[primary].by_rating("c", listing.language)

    def matching(self, listing: ListingFilter) -> Counts:
        """Per rating, exactly the comments the listing holds when it has at most one
        facet value; with more, those of its primary value (an upper bound)."""
        return self._matching(listing, self.primary(listing))

    def total(self, listing: ListingFilter) -> int | None:
        """``totalCount`` from the counters: exact with at most one facet value; None with
        more (the comments having all of them are counted from entries, not counters)."""
        if len(listing.facets) > 1:
            return None
        asked = listing.ratings or frozenset(rules.RATINGS)
        return sum(
            n for r, n in zip(rules.RATINGS, self.matching(listing), strict=True) if r in asked
        )

    def version(self, listing: ListingFilter) -> RatingCounts:
        """What a remembered page head was read under: held and matching counts."""
        return RatingCounts(
            self.scope.product_id, listing.language, self.held(listing), self.matching(listing)
        )

    def _matching(self, listing: ListingFilter, value: FacetValue | None) -> Counts:
        verified, exclude = listing.verified_only, listing.exclude_incentivized
        if value is not None:
            counts = self.values[value]
            return counts.matching(
                listing.language, verified_only=verified, exclude_incentivized=exclude
            )
        own = less(self.scope, self.incentivized) if exclude else self.scope
        return (own.only_verified() if verified else own).by_rating

    def selectivity(self, listing: ListingFilter, primary: FacetValue | None) -> float:
        """The share of the primary's matching comments expected to have the other values
        too, taking values as independent (it sizes a first round, never bounds a page)."""
        share = 1.0
        everything = self.scope.total
        for value in listing.facets - {primary} if primary is not None else ():
            has = sum(self.values[value].by_rating("c", listing.language))
            share *= min(1.0, has / everything) if everything else 0.0
        return share
