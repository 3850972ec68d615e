"""The facets' brute-force model: what every counter, entry, held count, summary and
listing of every facet must be, recomputed from the comments as stored, and a check that
the table and the reads say exactly that (``tests/storage/test_facet_model.py`` drives it).

The model is written from docs/facets.md, not from the code: it does not call
``facet_moves``, ``listed`` or the summaries' own sums, so a transition that leaves a move
out is found by a recount that does not share its mistake.
"""

from __future__ import annotations

import asyncio
import json
from collections import Counter
from dataclasses import dataclass, field, replace
from typing import Any

from storage.base.types import Item
from storage.engine.table import TableRef
from storage.model import keys
from storage.model.attributes import parse_definitions
from storage.model.comments import Comment, Direction, ListingFilter, Order, Status
from storage.model.facets import FacetKind, FacetValue, Scope, ScopeKind
from storage.model.groups import (
    COUNT_ATTR,
    GROUP_ATTR,
    HELD_PREFIX,
    MEMBERSHIP_SK,
    MOVING_ATTR,
)
from storage.model.indexes import SORT_KEY
from storage.model.items import is_comment_item, is_entry_item, item_to_comment
from storage.model.topics import TOPICS_MAX, Taxonomy
from storage.ops.group_move import move_product
from storage.ops.verify import scan_pages, verify
from storage.reads.facet_reader import facet_listing_counts
from storage.reads.facet_summaries import attribute_distributions, scope_counters, topic_mentions
from storage.writes.facet_settings import read_taxonomy, save_definitions, save_taxonomy
from tests.helpers import oracle, walk

PRODUCTS = ("p1", "p2", "p3")
GROUPS = ("g1", "g2")
LANGUAGES = ("en", "de")
# Where the world starts: p1 and p2 share g1, p3 is in no group.
START = {"p1": "g1", "p2": "g1", "p3": None}

FIT = {
    "key": "fit",
    "kind": "CHOICE",
    "defaultLanguage": "en",
    "label": {"en": "How does it fit?"},
    "values": [
        {"value": "small", "label": {"en": "Small"}},
        {"value": "true-to-size", "label": {"en": "True to size"}},
        {"value": "large", "label": {"en": "Large"}},
    ],
}
RECOMMEND = {
    "key": "would-recommend",
    "kind": "BOOLEAN",
    "defaultLanguage": "en",
    "label": {"en": "Would you recommend it?"},
}
DEFINITIONS = [FIT, RECOMMEND]
# Answer sets a create or an edit gives (an edit may also keep the stored ones: None).
ANSWERS: tuple[tuple[dict[str, str], ...], ...] = (
    (),
    ({"key": "fit", "value": "small"},),
    ({"key": "fit", "value": "large"}, {"key": "would-recommend", "value": "yes"}),
    ({"key": "would-recommend", "value": "no"},),
    ({"key": "fit", "value": "true-to-size"}, {"key": "would-recommend", "value": "no"}),
)
SMALL = FacetValue.attribute("fit", "small")

# Three topics; German words for two of them, so a German comment never mentions sound.
TAXONOMY = {
    "format": 1,
    "defaultLanguage": "en",
    "topics": [
        {
            "key": "battery",
            "labels": {"en": "Battery"},
            "words": {"en": ["battery", "charge"], "de": ["Akku"]},
        },
        {
            "key": "screen",
            "labels": {"en": "Screen"},
            "words": {"en": ["screen"], "de": ["Bildschirm"]},
        },
        {"key": "sound", "labels": {"en": "Sound"}, "words": {"en": ["sound", "speaker"]}},
    ],
}
# The texts comments are written with, and the topics each tags in each language, worked
# out by hand from the taxonomy above.
TEXTS: tuple[tuple[str, dict[str, frozenset[str]]], ...] = (
    ("Nothing special to say.", {"en": frozenset(), "de": frozenset()}),
    (
        "The battery lasts and the screen is sharp.",
        {"en": frozenset({"battery", "screen"}), "de": frozenset()},
    ),
    ("Great sound, slow charge.", {"en": frozenset({"sound", "battery"}), "de": frozenset()}),
    (
        "Der Akku ist gut, der Bildschirm hell.",
        {"en": frozenset(), "de": frozenset({"battery", "screen"})},
    ),
    ("Akku leer, battery dead.", {"en": frozenset({"battery"}), "de": frozenset({"battery"})}),
)
TOPICS_OF = dict(TEXTS)

# Filters the summaries are checked under: (language, ratings, verified only).
SUMMARY_FILTERS: tuple[tuple[str | None, frozenset[int] | None, bool], ...] = (
    (None, None, False),
    ("de", None, False),
    (None, frozenset({4, 5}), True),
    ("en", frozenset({1, 2, 3}), False),
)
# Listing flags the counts are checked under: (verified only, leaving out incentivized).
FLAGS = ((False, False), (True, False), (False, True), (True, True))


async def build_world(table: TableRef) -> None:
    """Each product's and each group's definitions (the same questions: a product answers
    its group's), the shop's taxonomy, and the starting memberships."""
    definitions = parse_definitions(DEFINITIONS)
    for scope in [*map(Scope.product, PRODUCTS), *map(Scope.group, GROUPS)]:
        await save_definitions(table, scope, definitions, revision=0)
    stored = await read_taxonomy(table, consistent=True)
    await save_taxonomy(table, Taxonomy.from_document(TAXONOMY), revision=stored.revision)
    for pid, group in START.items():
        if group is not None:
            await move_product(table, pid, group)


@dataclass
class Scanned:
    """The table as one strongly consistent scan finds it."""

    comments: dict[str, Comment] = field(default_factory=dict)
    sort_keys: dict[str, str] = field(default_factory=dict)  # a published comment's GSISK
    entries: dict[tuple[str, str], Item] = field(default_factory=dict)  # (id, SK) -> entry
    counters: dict[tuple[str, str], dict[str, int]] = field(default_factory=dict)
    held: dict[tuple[str, str], int] = field(default_factory=dict)  # (product, group) -> n
    memberships: dict[str, tuple[str | None, bool]] = field(default_factory=dict)


async def scan(table: TableRef) -> Scanned:
    found = Scanned()
    async for page in scan_pages(table):
        for item in page.get("Items", []):
            pk, sk = item["PK"]["S"], item["SK"]["S"]
            if is_comment_item(item):
                c = item_to_comment(item)
                found.comments[c.comment_id] = c
                if SORT_KEY in item:
                    found.sort_keys[c.comment_id] = item[SORT_KEY]["S"]
            elif is_entry_item(item):
                found.entries[(pk.removeprefix(keys.COMMENT_PREFIX), sk)] = item
            elif pk.startswith(("PRODUCT#", "GROUP#")) and sk.startswith("F#"):
                counts = {n: int(v["N"]) for n, v in item.items() if n not in ("PK", "SK")}
                assert all(n >= 0 for n in counts.values()), (pk, sk, counts)
                kept = {n: v for n, v in counts.items() if v}
                if kept:
                    found.counters[(pk, sk)] = kept
            elif pk.startswith("PRODUCT#") and sk.startswith(HELD_PREFIX):
                n = int(item.get(COUNT_ATTR, {"N": "0"})["N"])
                assert n >= 0, (pk, sk, n)
                if n:
                    found.held[(pk.removeprefix("PRODUCT#"), sk.removeprefix(HELD_PREFIX))] = n
            elif pk.startswith("PRODUCT#") and sk == MEMBERSHIP_SK:
                group = item.get(GROUP_ATTR, {}).get("S")
                found.memberships[pk.removeprefix("PRODUCT#")] = (group, MOVING_ATTR in item)
    return found


def scopes_of(c: Comment) -> list[tuple[str, str]]:
    """(scope token, scope partition) of each scope a published comment counts in."""
    found = [(f"P:{c.product_id}", f"PRODUCT#{c.product_id}")]
    if c.group_id is not None:
        found.append((f"G:{c.group_id}", f"GROUP#{c.group_id}"))
    return found


def tokens_in(c: Comment, scope: str) -> set[str]:
    """The values a published comment has in one of its scopes, by token."""
    found = {f.token for f in c.facets}
    if c.incentivized:
        found.add("inc")
    if scope.startswith("G:"):
        found.add("*")
    return found


@dataclass
class Expected:
    counters: dict[tuple[str, str], dict[str, int]]
    entries: dict[tuple[str, str], tuple[Comment, str, str]]  # -> (comment, FPK, FLPK)
    held: dict[tuple[str, str], int]


def recount(comments: dict[str, Comment]) -> Expected:
    """Every counter, entry and held count the published comments call for."""
    counters: dict[tuple[str, str], Counter[str]] = {}
    entries: dict[tuple[str, str], tuple[Comment, str, str]] = {}
    held: Counter[tuple[str, str]] = Counter()
    for c in comments.values():
        if c.status is not Status.PUBLISHED:
            continue
        if c.group_id is not None:
            held[(c.product_id, c.group_id)] += 1
        kinds = ["c"]
        kinds += ["v"] if c.verified else []
        kinds += ["i"] if c.incentivized else []
        kinds += ["x"] if c.verified and c.incentivized else []
        for scope, pk in scopes_of(c):
            for token in tokens_in(c, scope):
                into = counters.setdefault((pk, f"F#{token}"), Counter())
                for language in (c.language, "*"):
                    for kind in kinds:
                        into[f"{kind}#{language}#{c.rating}"] += 1
                if token != "inc":  # counted, never listed
                    fpk = f"F#{scope}#{token}#{c.rating}"
                    flpk = f"F#{scope}#{token}#{c.language}#{c.rating}"
                    entries[(c.comment_id, f"FACET#{scope}#{token}")] = (c, fpk, flpk)
    return Expected({k: dict(v) for k, v in counters.items()}, entries, dict(held))


def shown(c: Comment) -> Comment:
    """What an entry copies of its comment: all a page shows (its counts too), not the
    group it counts in nor how it was tagged."""
    return replace(c, group_id=None, tagging=None)


def check_items(found: Scanned, imported: set[str]) -> None:
    """Counters, entries and held counts equal the recount; every comment sits where its
    product's membership says and is tagged as its text says."""
    want = recount(found.comments)
    for key in want.counters.keys() | found.counters.keys():
        assert found.counters.get(key) == want.counters.get(key), (
            f"counter {key}: stored {found.counters.get(key)} != {want.counters.get(key)}"
        )
    assert found.entries.keys() == want.entries.keys(), (
        f"entries left over {sorted(found.entries.keys() - want.entries.keys())}, "
        f"missing {sorted(want.entries.keys() - found.entries.keys())}"
    )
    for key, (c, fpk, flpk) in want.entries.items():
        entry = found.entries[key]
        assert entry["FPK"]["S"] == fpk, (key, entry["FPK"])
        assert entry["FLPK"]["S"] == flpk, (key, entry["FLPK"])
        assert entry[SORT_KEY]["S"] == found.sort_keys[c.comment_id], key
        assert item_to_comment(entry) == shown(c), f"entry {key} copies another comment"
    assert found.held == want.held, (found.held, want.held)
    for c in found.comments.values():
        if c.status is Status.PUBLISHED:
            group, moving = found.memberships.get(c.product_id, (None, False))
            assert not moving, f"{c.product_id}: a move left unfinished"
            # Imported ones too: the import places them once it has written them.
            assert c.group_id == group, (
                f"{c.comment_id} of {c.product_id} counts in {c.group_id}, not in {group}"
            )
        else:
            assert c.group_id is None, f"{c.comment_id} is unpublished and stores a group"
        topics = {f.key for f in c.facets if f.kind is FacetKind.TOPIC}
        if c.tagging is None:
            assert c.comment_id in imported, f"{c.comment_id} was never tagged"
            assert not topics, c
        else:
            assert topics == TOPICS_OF[c.body][c.language], (c.body, c.language, topics)


def in_scope(comments: dict[str, Comment], scope: Scope) -> list[Comment]:
    published = [c for c in comments.values() if c.status is Status.PUBLISHED]
    if scope.token.startswith("P:"):
        return [c for c in published if c.product_id == scope.id]
    return [c for c in published if c.group_id == scope.id]


def _filtered(
    comments: list[Comment], language: str | None, ratings: frozenset[int] | None, verified: bool
) -> list[Comment]:
    return [
        c
        for c in comments
        if language in (None, c.language)
        and (ratings is None or c.rating in ratings)
        and (c.verified or not verified)
    ]


async def check_summaries(table: TableRef, comments: dict[str, Comment], scope: Scope) -> None:
    """``attribute_distributions`` and ``topic_mentions`` of the scope equal brute force."""
    answers = await scope_counters(table, scope, FacetKind.ATTRIBUTE)
    topics = await scope_counters(table, scope, FacetKind.TOPIC)
    everyone = in_scope(comments, scope)
    for language, ratings, verified in SUMMARY_FILTERS:
        chosen = _filtered(everyone, language, ratings, verified)
        by_key: dict[str, Counter[str]] = {}
        mentions: Counter[str] = Counter()
        positive: Counter[str] = Counter()
        negative: Counter[str] = Counter()
        for c in chosen:
            for f in c.facets:
                if f.kind is FacetKind.ATTRIBUTE:
                    by_key.setdefault(f.key, Counter())[f.value] += 1
                elif f.kind is FacetKind.TOPIC:
                    mentions[f.key] += 1
                    positive[f.key] += c.rating >= 4
                    negative[f.key] += c.rating <= 2
        dist = attribute_distributions(
            answers, language=language, ratings=ratings, verified_only=verified
        )
        got = [(d.key, d.answered, {v.value: v.count for v in d.values}) for d in dist]
        want = [(k, sum(n.values()), dict(n)) for k, n in sorted(by_key.items())]
        assert got == want, (scope.token, language, ratings, verified)
        top = topic_mentions(topics, language=language, ratings=ratings, verified_only=verified)
        got_topics = [(m.topic, m.count, m.positive, m.negative) for m in top]
        ranked = sorted(mentions, key=lambda t: (-mentions[t], t))[:TOPICS_MAX]
        want_topics = [(t, mentions[t], positive[t], negative[t]) for t in ranked]
        assert got_topics == want_topics, (scope.token, language, ratings, verified)


def values_of(comments: dict[str, Comment], scope: Scope) -> list[FacetValue]:
    """The listable values the scope's published comments have, and one more that may
    have none."""
    found = {f for c in in_scope(comments, scope) for f in c.facets}
    return sorted(found | {SMALL}, key=lambda v: v.token)


async def check_counts(
    table: TableRef, comments: dict[str, Comment], scope: Scope, turn: int
) -> None:
    """Every count a facet listing of the product or group takes from its counters (one
    value or none; all languages and one; verified only and without incentivized reviews;
    some ratings) equals the comments the oracle lists."""
    everything = list(comments.values())
    grouped = scope.kind is ScopeKind.GROUP
    for language in (None, LANGUAGES[turn % 2]):
        for value in [None, *values_of(comments, scope)]:
            facets = frozenset() if value is None else frozenset({value})
            asked = ListingFilter(scope.id, language, facets=facets, of_group=grouped)
            counts = await facet_listing_counts(table, asked)
            for verified, exclude in FLAGS:
                for ratings in (None, frozenset({4, 5})):
                    listing = ListingFilter(
                        scope.id, language, ratings, verified, facets, exclude, grouped
                    )
                    total = counts.total(listing)
                    assert total == len(oracle(everything, listing)), (listing, total)


def listings_of(
    comments: dict[str, Comment], scope: Scope, turn: int, position: int
) -> list[ListingFilter]:
    """Two facet listings of the product or group, chosen anew each turn from its values
    and from four kinds: one value; another, of a language, without incentivized reviews
    (verified only every third turn); two values of some ratings; the scope's own
    without incentivized reviews (a group's: all of it)."""
    values = values_of(comments, scope)
    one = values[turn % len(values)]
    other = values[(turn + 1) % len(values)]
    grouped = scope.kind is ScopeKind.GROUP
    sid = scope.id
    kinds = [
        ListingFilter(sid, facets=frozenset({one}), of_group=grouped),
        ListingFilter(
            sid, LANGUAGES[turn % 2], None, turn % 3 == 0, frozenset({other}), True, grouped
        ),
        ListingFilter(
            sid, None, frozenset({1, 2, 5}), False, frozenset({one, other}), False, grouped
        ),
        ListingFilter(sid, exclude_incentivized=not grouped, of_group=grouped),
    ]
    shift = turn + position  # the scopes of one turn take different kinds
    return [kinds[shift % 4], kinds[(shift + 2) % 4]]


async def check_listing(
    table: TableRef, comments: dict[str, Comment], listing: ListingFilter, order: Order
) -> None:
    want = [c.comment_id for c in oracle(list(comments.values()), listing, order)]
    for direction in Direction:
        got, _ = await walk(table, listing, 4, direction, order=order)
        assert [c.comment_id for c in got] == want, (listing, order, direction)
        for c in got:
            assert shown(c) == shown(comments[c.comment_id]), (
                f"a page shows {c.comment_id} otherwise"
            )


async def check_model(
    table: TableRef, imported: set[str], turn: int = 0, *, with_verify: bool = True
) -> Scanned:
    """Everything the facets hold equals brute force from the comments as stored (and,
    with ``with_verify``, ``verify`` finds the table exact). Nothing may write meanwhile."""
    found = await scan(table)
    check_items(found, imported)
    scopes = [*map(Scope.product, PRODUCTS), *map(Scope.group, GROUPS)]
    checks = [check_summaries(table, found.comments, scope) for scope in scopes]
    checks += [check_counts(table, found.comments, scope, turn) for scope in scopes]
    orders = (Order.NEWEST, Order.LOWEST_RATING if turn % 2 else Order.HIGHEST_RATING)
    for position, scope in enumerate(scopes):
        for listing in listings_of(found.comments, scope, turn, position):
            checks += [check_listing(table, found.comments, listing, o) for o in orders]
    if with_verify:
        checks.append(_verified(table))
    await asyncio.gather(*checks)
    return found


async def _verified(table: TableRef) -> None:
    report = await verify(table)
    assert report.exact, report.describe()
    assert report.moving == (), f"products not all in their group: {report.moving}"


def import_line(
    external_id: str,
    product: str,
    language: str,
    rating: int,
    body: str,
    verified: bool,
    status: Status,
    created_at: str,
) -> bytes:
    """One review of a shop's history, as the importer reads it."""
    value: dict[str, Any] = {
        "externalId": external_id,
        "productId": product,
        "rating": rating,
        "language": language,
        "body": body,
        "author": f"shopper-{external_id}",
        "createdAt": created_at,
        "verified": verified,
        "status": status.value,
    }
    return json.dumps(value).encode()
