"""Property: every facet listing, in every order but the most helpful, walked page by page
both ways, equals brute force; in memory (testing/fake_dynamo.py), over random data sets.

Data sets: one product or a group of two, 1-3 languages, skewed ratings with some empty,
many equal timestamps, every status, verified and incentivized comments, answers and
topics drawn from a few values (some rare, some on almost every comment). Listings: one
to three facet values, with or without a language, ratings, verified only and leaving out
incentivized reviews. The comments are bulk-loaded and their facet items built by the
model's own functions (``testing.facet_items``); the write paths' moves are checked
against those by ``tests/storage/writes/test_facet_writes.py`` and the model test.

``FACET_ORACLE_EXAMPLES`` (default 30) sets the number of data sets; the exhaustive run
(docs/facets.md) sets it to 1000.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import replace

from hypothesis import given, settings
from hypothesis import strategies as st

from storage.engine.table import TableRef
from storage.model.comments import Comment, Direction, ListingFilter, Order, Status
from storage.model.facets import FacetValue
from storage.ops.bulk import load_new_products
from storage.ops.create import create_table
from storage.reads.facet_reader import facet_listing_counts
from testing.facet_items import facet_items
from testing.fake_dynamo import FakeDynamo
from tests.helpers import oracle, stamp, walk

EXAMPLES = int(os.environ.get("FACET_ORACLE_EXAMPLES", "30"))
VALUES = [
    FacetValue.attribute("fit", "small"),
    FacetValue.attribute("fit", "large"),
    FacetValue.topic("battery"),
    FacetValue.topic("sound"),
    FacetValue.topic("rare"),
]
# How often each value is on a comment: one on almost all, one rare.
SHARES = [0.45, 0.3, 0.9, 0.4, 0.05]
ORDERS = [Order.NEWEST, Order.OLDEST, Order.HIGHEST_RATING, Order.LOWEST_RATING]
GROUP = "g-oracle"

comment_specs = st.tuples(
    st.integers(0, 1),  # product
    st.sampled_from(["en", "de", "ja"]),
    st.sampled_from([1, 2, 4, 5, 5, 5]),  # no 3s: a rating counted zero
    st.sampled_from(list(Status) + [Status.PUBLISHED] * 4),
    st.booleans(),  # verified
    st.floats(0, 1),  # incentivized below 0.2
    st.lists(st.floats(0, 1), min_size=len(VALUES), max_size=len(VALUES)),
    st.integers(0, 11),  # moment: many ties
)
listings = st.tuples(
    st.sets(st.sampled_from(VALUES), min_size=0, max_size=3),
    st.sampled_from([None, "en", "de"]),
    st.sampled_from([None, frozenset({4, 5}), frozenset({1, 2, 3}), frozenset({5})]),
    st.booleans(),  # verified only
    st.booleans(),  # exclude incentivized
    st.booleans(),  # the group's listing
    st.sampled_from([1, 3, 7]),  # page size
)


def _comment(n: int, spec: tuple[object, ...], grouped: bool) -> Comment:
    product, language, rating, status, verified, inc, draws, moment = spec
    assert isinstance(draws, list)
    values = frozenset(v for v, share, d in zip(VALUES, SHARES, draws, strict=True) if d < share)
    # One answer per attribute: a comment answered "small" or "large", never both.
    if {VALUES[0], VALUES[1]} <= values:
        values -= {VALUES[1]}
    c = Comment(
        comment_id=hashlib.sha256(f"facet {n}".encode()).hexdigest()[:32],
        product_id=f"fo-{product}",
        language=str(language),
        rating=int(str(rating)),
        title=None,
        body=f"b{n}",
        author_id=f"a{n % 4}",
        created_at=stamp(int(str(moment))),
        status=status,  # type: ignore[arg-type]
        verified=bool(verified),
        facets=values,
        incentivized=float(str(inc)) < 0.2,
    )
    return replace(c, group_id=GROUP) if grouped and c.published else c


@settings(max_examples=EXAMPLES, deadline=None, derandomize=True)
@given(
    st.lists(comment_specs, min_size=1, max_size=60),
    st.lists(listings, min_size=1, max_size=3),
    st.booleans(),
)
async def test_facet_listings_equal_brute_force_in_memory(
    specs: list[tuple[object, ...]],
    asked: list[tuple[object, ...]],
    grouped: bool,
) -> None:
    table = TableRef(FakeDynamo(), "facet_oracle")
    await create_table(table.client, table.name)
    comments = [_comment(n, spec, grouped) for n, spec in enumerate(specs)]
    await load_new_products(table, comments)
    items = facet_items(comments)
    for start in range(0, len(items), 25):
        puts = [{"PutRequest": {"Item": item}} for item in items[start : start + 25]]
        await table.client.batch_write_item(RequestItems={table.name: puts})
    for facets, language, ratings, verified, exclude, of_group, size in asked:
        assert isinstance(facets, set)
        group = bool(of_group) and grouped
        listing = ListingFilter(
            GROUP if group else "fo-0",
            None if language is None else str(language),
            ratings,  # type: ignore[arg-type]
            bool(verified),
            frozenset(facets),
            bool(exclude),
            group,
        )
        if not listing.faceted:
            continue
        for order in ORDERS:
            want = [c.comment_id for c in oracle(comments, listing, order)]
            for direction in Direction:
                got, sizes = await walk(table, listing, int(str(size)), direction, order=order)
                assert [c.comment_id for c in got] == want, (listing, order, direction)
                inner = sizes[:-1] if direction is Direction.FORWARD else sizes[1:]
                assert all(n == size for n in inner), sizes
        counts = await facet_listing_counts(table, listing)
        total = counts.total(listing)
        assert total is None or total == len(oracle(comments, listing))
