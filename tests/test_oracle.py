"""Property: every listing, walked page by page in either direction, equals brute force.

Random data sets (several products, 1-6 languages, skewed ratings with some ratings empty,
many identical timestamps); random filters and page sizes. Counters and leaderboard entries
must equal a recount. Most examples run against the in-memory engine
(benchmarks/fake_dynamo.py, itself checked against the oracle), bulk-loaded; a smaller set
runs against DynamoDB Local, written through the real create and delete paths.
"""

from __future__ import annotations

import asyncio
import hashlib
import uuid
from dataclasses import dataclass

from hypothesis import event, given, settings
from hypothesis import strategies as st

from benchmarks.fake_dynamo import FakeDynamo
from storage.bulk import load_new_products
from storage.executor import Page
from storage.model import Comment, Direction, ListingFilter, NewComment, PageRequest
from storage.reads import list_comments
from storage.table import TableRef, create_table
from storage.writes import delete_comment
from tests.helpers import FAST, assert_counters_exact, create_many, oracle, stamp, walk

LANGUAGES = ["en", "de", "fr", "es", "pt-br", "ja"]


@dataclass(frozen=True)
class Spec:
    product: int
    language: str
    rating: int
    moment: int


@dataclass(frozen=True)
class Query:
    product: int
    language: str | None
    ratings: frozenset[int] | None
    size: int


@st.composite
def scenarios(draw: st.DrawFn) -> tuple[int, list[Spec], list[int], list[Query]]:
    products = draw(st.integers(1, 3))
    languages = LANGUAGES[: draw(st.integers(1, 6))]
    # J-shaped or arbitrary skew, with some ratings absent altogether.
    weights = draw(st.lists(st.sampled_from([0, 0, 1, 2, 6, 12]), min_size=5, max_size=5))
    if not any(weights):
        weights[draw(st.integers(0, 4))] = 6
    weighted = [r for r, w in zip(range(1, 6), weights, strict=True) for _ in range(w)]
    moments = draw(st.integers(1, 8))  # few distinct timestamps: ties everywhere
    specs = draw(
        st.lists(
            st.builds(
                Spec,
                st.integers(0, products - 1),
                st.sampled_from(languages),
                st.sampled_from(weighted),
                st.integers(0, moments - 1),
            ),
            min_size=draw(st.sampled_from([0, 10, 25])),
            max_size=50,
        )
    )
    deletes = draw(st.lists(st.integers(0, max(0, len(specs) - 1)), max_size=len(specs) // 4))
    queries = draw(
        st.lists(
            st.builds(
                Query,
                st.integers(0, products - 1),
                st.sampled_from([None, None, *languages, "it"]),
                # Mostly several ratings (the fan-out and filtered plans), sometimes none or one.
                st.sampled_from([None, 1, 2, 2, 3, 3, 4]).flatmap(
                    lambda k: (
                        st.none()
                        if k is None
                        else st.frozensets(st.integers(1, 5), min_size=k, max_size=k)
                    )
                ),
                st.integers(1, 8),
            ),
            min_size=1,
            max_size=3,
        )
    )
    return products, specs, sorted(set(deletes)) if specs else [], queries


# Examples against DynamoDB Local, through the write paths; the rest of the profile's
# examples run in memory.
LOCAL_EXAMPLES = 25


def _note(page: Page) -> None:
    if page.rounds > 1:
        event("page needed a second round")
    if any(e.ranged for e in page.executed):
        event("page used a range top-up")


async def _listings_equal_brute_force(
    table: TableRef, alive: list[Comment], pids: list[str], queries: list[Query]
) -> None:
    for q in queries:
        listing = ListingFilter(pids[q.product], q.language, q.ratings)
        expected = oracle(alive, listing)
        first = await list_comments(table, listing, PageRequest(q.size))
        event(f"strategy {first.plan.strategy.value}")
        event(f"pages {'one' if not first.has_more else 'several'}")
        for direction in Direction:
            got, lengths = await walk(table, listing, q.size, direction, on_page=_note)
            assert got == expected, (direction, listing)
            in_travel_order = lengths if direction is Direction.FORWARD else lengths[::-1]
            assert all(n == q.size for n in in_travel_order[:-1]), lengths
            assert sum(lengths) == len(expected)
    for pid in pids:
        await assert_counters_exact(table, pid)


@given(scenarios())
async def test_listings_equal_brute_force_in_memory(
    scenario: tuple[int, list[Spec], list[int], list[Query]],
) -> None:
    # The fake has no transactions: the comments that survive the deletes are bulk-loaded,
    # with ids of the shape the write path makes (random-looking, so ties order by chance).
    products, specs, deletes, queries = scenario
    table = TableRef(FakeDynamo(), "oracle")
    await create_table(table.client, table.name)
    pids = [f"o-{i}" for i in range(products)]
    gone = set(deletes)
    alive = [
        Comment(
            comment_id=hashlib.sha256(f"comment {n}".encode()).hexdigest()[:32],
            product_id=pids[s.product],
            language=s.language,
            rating=s.rating,
            title=None,
            body=f"b{n}",
            author_id=f"a{n % 3}",
            created_at=stamp(s.moment),
        )
        for n, s in enumerate(specs)
        if n not in gone
    ]
    await load_new_products(table, alive)
    await _listings_equal_brute_force(table, alive, pids, queries)


@settings(max_examples=LOCAL_EXAMPLES)
@given(scenarios())
async def test_listings_equal_brute_force(
    table: TableRef, scenario: tuple[int, list[Spec], list[int], list[Query]]
) -> None:
    products, specs, deletes, queries = scenario
    prefix = uuid.uuid4().hex[:10]
    pids = [f"o{prefix}-{i}" for i in range(products)]
    made = await create_many(
        table,
        [
            NewComment(
                pids[s.product],
                s.language,
                s.rating,
                f"b{n}",
                f"a{n % 3}",
                created_at=stamp(s.moment),
            )
            for n, s in enumerate(specs)
        ],
    )
    await asyncio.gather(
        *(delete_comment(table, made[i].comment_id, backoff=FAST) for i in deletes)
    )
    alive = [c for n, c in enumerate(made) if n not in set(deletes)]
    await _listings_equal_brute_force(table, alive, pids, queries)
