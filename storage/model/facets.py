"""Facets as data: every filter dimension beyond language, ratings and verified is a *facet
kind*, declared here once, served by two generic indexes, never by an index of its own.

A facet value is an equality (``a:fit=small``, ``t:battery-life``, ``photos``). For each
facet value a published comment has, in each of its *scopes* (its product, and its product's
group when it has one), the table holds:

- one **entry** item in the comment's own partition (PK = COMMENT#<id>,
  SK = FACET#<scope>#<value>), a copy of what a page shows of the comment, carrying two
  index keys: ``FPK`` = F#<scope>#<value>#<rating> (index ``facetByRating``) and
  ``FLPK`` = F#<scope>#<value>#<lang>#<rating> (index ``facetByLangAndRating``), both
  sorted by ``GSISK`` like today's listings. A listing with one
  facet value, a language or none, and any ratings is then the rating fan-out the planner
  already makes over ``byRating`` and ``byLangAndRating``: the same plan, other partitions.
- one **counter** item per (scope, value): PK = the scope's partition (PRODUCT#<id>, GROUP#<id>),
  SK = F#<value>, with a count per (language or all, rating), verified and incentivized
  beside them. It sizes the plan (exact per-rating counts, so ratings with none are
  skipped) and gives ``totalCount``, ``attributeSummary`` and ``topics`` exactly: a summary
  is one Query of the scope's partition for the SK prefix of its kind.

A group's own listing (all its variants' comments) is the facet value ``*`` in the group's
scope: every comment of a grouped product has that entry too; its counter item is the
group's stats (every language and rating, verified and incentivized, in one item).
``facets.productId`` on a group's listing is the product's own listing (its indexes of
today), or the product scope's entries with another facet.

Entries and counters move in the comment's own transaction, under its version condition
(STYLE rule 11), in every transition: create, edit (answers, topics, rating, language),
moderation, delete, import and a group move. What bounds them is DynamoDB's 100 actions per
transaction: ``transaction_actions`` counts them, and the per-comment maxima below are
chosen so that the largest edit of the largest comment in a group fits with room to spare
(``tests/storage/model/test_facets.py``).

MOST_HELPFUL is not served on facet listings: it would take the helpful twins of both
indexes (two more GSIs, over the budget of two) and a rewrite of every entry of a comment
on each vote follow-up (up to ``MAX_FACET_VALUES`` x 2 more items per vote); see
docs/facets.md.

Pure: no I/O.
"""

from __future__ import annotations

import enum
import re
from dataclasses import dataclass

from storage.base.errors import InvalidFacet
from storage.model.indexes import Index
from storage.model.rules import validate_language, validate_product_id, validate_rating

ENTRY_PREFIX = "FACET#"
COUNTER_PREFIX = "F#"
GROUP_PREFIX = "GROUP#"
# The two generic indexes' partition key attributes; both sort by GSISK.
FACET_PARTITION = Index.FACET_BY_RATING.partition_attr
FACET_LANG_PARTITION = Index.FACET_BY_LANG_AND_RATING.partition_attr

# Per comment (each value costs two actions per scope in the comment's transaction, four
# in a group): answers to the shop's questions, topics tagged, and one for a photo.
MAX_ATTRIBUTE_ANSWERS = 4
MAX_TOPICS = 4
MAX_FACET_VALUES = MAX_ATTRIBUTE_ANSWERS + MAX_TOPICS + 1  # + photos
# DynamoDB's actions per transaction, and what the largest transition may take of them.
TRANSACTION_ACTIONS = 100
ACTION_BUDGET = 90
# A transition's own actions besides facets, at most: a create's comment, its two stats
# items, the leaderboard's layout check, the queue's count, the author's slot, the hourly
# count, the idempotency record and the check that no erasure of the author runs
# (``storage.model.erasure``) (9); an edit's comment, three stats items (a language
# change) and the layout check (5). A grouped product adds the group's own listing (its
# entry and its counter item, which is the group's stats, every language in one item) and
# the count of the product's comments the group holds (storage.model.groups). A
# transition that makes a comment published checks its product's membership (1), grouped
# or not: the product may be joining a group.
BASE_ACTIONS = 9
GROUP_ACTIONS = 3
MEMBERSHIP_ACTIONS = 1

# A facet value's own part: letters, digits and a few separators, never '#' or '/' (key
# delimiters) nor '=' (the attribute's separator).
_PART = re.compile(r"[a-z0-9][a-z0-9._:-]{0,63}")


class FacetKind(enum.Enum):
    """What a facet value is about; its token's prefix."""

    ATTRIBUTE = "a"  # a:<key>=<value>, an answer to the shop's question
    TOPIC = "t"  # t:<topic key>
    PHOTOS = "photos"  # the comment has a published photo (a later issue sets it)
    GROUP_ALL = "*"  # every comment of a group: the group's own listing
    # The comment was written in exchange for something: counted, never listed (a listing
    # leaves such comments out by a filter, and its count is the scope's less this one's).
    INCENTIVIZED = "inc"

    @property
    def listed(self) -> bool:
        """Whether a value of this kind has entries (a listing of its own), or only its
        counter item."""
        return self is not FacetKind.INCENTIVIZED


@dataclass(frozen=True, slots=True, order=True)
class FacetValue:
    """One equality a comment has, as its token (the keys' part) shows it."""

    kind: FacetKind
    key: str = ""
    value: str = ""

    @classmethod
    def attribute(cls, key: str, value: str) -> FacetValue:
        return cls(FacetKind.ATTRIBUTE, _part(key, "attribute key"), _part(value, "value"))

    @classmethod
    def topic(cls, key: str) -> FacetValue:
        return cls(FacetKind.TOPIC, _part(key, "topic"))

    @property
    def token(self) -> str:
        if self.kind is FacetKind.ATTRIBUTE:
            return f"a:{self.key}={self.value}"
        if self.kind is FacetKind.TOPIC:
            return f"t:{self.key}"
        return str(self.kind.value)

    @classmethod
    def parse(cls, token: str) -> FacetValue:
        """The value a token names (ValueError for anything else)."""
        if token in (
            FacetKind.PHOTOS.value,
            FacetKind.GROUP_ALL.value,
            FacetKind.INCENTIVIZED.value,
        ):
            return cls(FacetKind(token))
        if token.startswith("t:"):
            return cls.topic(token[2:])
        if token.startswith("a:") and "=" in token:
            key, value = token[2:].split("=", 1)
            return cls.attribute(key, value)
        raise InvalidFacet(f"not a facet value: {token!r}")


# The kinds whose token is their kind alone.
_BARE = frozenset(k.value for k in (FacetKind.PHOTOS, FacetKind.GROUP_ALL, FacetKind.INCENTIVIZED))


def _part(text: str, what: str) -> str:
    if not _PART.fullmatch(text):
        raise InvalidFacet(
            f"{what} {text!r}: 1 to 64 of a-z, 0-9, '.', '_', ':', '-', starting with a "
            "letter or digit"
        )
    return text


class ScopeKind(enum.Enum):
    PRODUCT = "P"
    GROUP = "G"


@dataclass(frozen=True, slots=True)
class Scope:
    """Where a listing's comments come from: one product's, or one group's (all variants)."""

    kind: ScopeKind
    id: str

    @classmethod
    def product(cls, product_id: str) -> Scope:
        return cls(ScopeKind.PRODUCT, validate_product_id(product_id))

    @classmethod
    def group(cls, group_id: str) -> Scope:
        return cls(ScopeKind.GROUP, validate_product_id(group_id))  # the same rule

    @property
    def token(self) -> str:
        return f"{self.kind.value}:{self.id}"

    @property
    def pk(self) -> str:
        """The scope's own partition: its stats and its facet counters."""
        prefix = "PRODUCT#" if self.kind is ScopeKind.PRODUCT else GROUP_PREFIX
        return prefix + self.id


def entry_sk(scope: Scope, value: FacetValue) -> str:
    """An entry's sort key in its comment's partition."""
    return f"{ENTRY_PREFIX}{scope.token}#{value.token}"


def facet_partition(scope: Scope, value: FacetValue, rating: int) -> str:
    """``FPK``: the entries of one value and one rating, all languages (facetByRating)."""
    return f"{COUNTER_PREFIX}{scope.token}#{value.token}#{validate_rating(rating)}"


def facet_lang_partition(scope: Scope, value: FacetValue, language: str, rating: int) -> str:
    """``FLPK``: the entries of one value, one language and one rating."""
    lang = validate_language(language)
    return f"{COUNTER_PREFIX}{scope.token}#{value.token}#{lang}#{validate_rating(rating)}"


def counter_sk(value: FacetValue) -> str:
    """A value's counter item's sort key, in its scope's partition."""
    return COUNTER_PREFIX + value.token


# The kinds of count a counter item keeps, per language (and ``*``) and rating: published
# comments, of them verified purchases, incentivized ones, and both verified and
# incentivized (so that "verified, leaving out incentivized" is a difference of two).
COUNT_KINDS = ("c", "v", "i", "x")


def counter_attr(kind: str, language: str | None, rating: int) -> str:
    """A count's attribute in a counter item: ``kind`` one of ``COUNT_KINDS``, per language
    or ``*`` for all, per rating."""
    if kind not in COUNT_KINDS:
        raise ValueError(f"count kind {kind!r}")
    lang = "*" if language is None else validate_language(language)
    return f"{kind}#{lang}#{validate_rating(rating)}"


def transaction_actions(
    before: frozenset[FacetValue],
    after: frozenset[FacetValue],
    *,
    grouped: bool,
    incentivized: bool = False,
) -> int:
    """The actions of one transition of a published comment from the facet values
    ``before`` to ``after`` (empty: not listed, e.g. a create or a delete): for each value
    in either, in each scope, its entry (put, rewritten or deleted) and its counter item
    (one update, whatever moves inside it), and the incentivized counter item when the
    comment is, besides the transition's own actions. A bound: the membership's check and
    the held count are counted whether or not this transition needs them."""
    scopes = 2 if grouped else 1
    own = BASE_ACTIONS + MEMBERSHIP_ACTIONS + (GROUP_ACTIONS if grouped else 0)
    return own + (len(before | after) * 2 + incentivized) * scopes


# What a comment is, as facets see it: listed or not, and where it counts.
@dataclass(frozen=True, slots=True)
class Listed:
    """A published comment's place in the facets: its scopes and its values in each (the
    group's listing ``*`` in its group's scope), and what its counters count it as."""

    language: str
    rating: int
    verified: bool
    incentivized: bool
    values: dict[Scope, frozenset[FacetValue]]

    @classmethod
    def of(
        cls,
        *,
        language: str,
        rating: int,
        verified: bool,
        incentivized: bool,
        facets: frozenset[FacetValue],
        product: Scope,
        group: Scope | None,
    ) -> Listed:
        own = facets | {FacetValue(FacetKind.INCENTIVIZED)} if incentivized else facets
        values = {product: own}
        if group is not None:
            values[group] = own | {FacetValue(FacetKind.GROUP_ALL)}
        return cls(language, rating, verified, incentivized, values)

    def counts(self) -> dict[str, int]:
        """The counter attributes one value's counter item holds for this comment: 1 each."""
        found = {}
        both = self.verified and self.incentivized
        for language in (self.language, None):
            kinds = ["c"] + ["v"] * self.verified + ["i"] * self.incentivized + ["x"] * both
            for kind in kinds:
                found[counter_attr(kind, language, self.rating)] = 1
        return found


@dataclass(frozen=True, slots=True)
class FacetMoves:
    """What one transition does to facet items: entries to put (rewritten whole: a copy of
    the comment as it becomes) or delete, and counter deltas per (scope, value)."""

    put: frozenset[tuple[Scope, FacetValue]]
    delete: frozenset[tuple[Scope, FacetValue]]
    counters: dict[tuple[Scope, FacetValue], dict[str, int]]

    @property
    def actions(self) -> int:
        """Transaction actions: one per entry, one per counter item with a delta."""
        return len(self.put) + len(self.delete) + len(self.counters)


def facet_moves(before: Listed | None, after: Listed | None) -> FacetMoves:
    """The facet items' moves of a transition from ``before`` to ``after`` (None: not
    listed: a create, a delete, a comment leaving or entering PUBLISHED). An entry is
    rewritten whenever the comment stays listed in its value (the copy follows any change
    of what a page shows); a counter item moves only by what differs."""
    had = _pairs(before)
    has = _pairs(after)
    counters: dict[tuple[Scope, FacetValue], dict[str, int]] = {}
    for pair in had | has:
        deltas: dict[str, int] = {}
        if before is not None and pair in had:
            for name, n in before.counts().items():
                deltas[name] = deltas.get(name, 0) - n
        if after is not None and pair in has:
            for name, n in after.counts().items():
                deltas[name] = deltas.get(name, 0) + n
        moved = {name: d for name, d in deltas.items() if d}
        if moved:
            counters[pair] = moved
    entries = {pair for pair in has if pair[1].kind.listed}
    gone = {pair for pair in had - has if pair[1].kind.listed}
    return FacetMoves(frozenset(entries), frozenset(gone), counters)


def _pairs(listed: Listed | None) -> set[tuple[Scope, FacetValue]]:
    if listed is None:
        return set()
    return {(scope, value) for scope, values in listed.values.items() for value in values}
