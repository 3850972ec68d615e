"""Writing the demo data into a table: what ``serve`` does on the first start (the table
just made) and what ``comments seed`` does.

The comments of ``demo`` go in by the bulk loader, which writes their counters whole. The
facet reviews of ``demo_facets`` go in by the write path itself, as the API's creates do:
the taxonomy and the questions are saved first, the variants put in their group, then each
review is created with its answers and tagged with the stored taxonomy, so that its
entries, counters, group placement and tags are those every write keeps (and
``verify-stats`` recounts). Both refuse products that have comments already, so seeding
twice is refused, never counted twice.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence

from server.dev.demo_facets import (
    GROUP_DEFINITIONS,
    GROUP_ID,
    HEADPHONES,
    HEADPHONES_DEFINITIONS,
    TAXONOMY,
    VARIANTS,
    FacetReview,
)
from storage.base.errors import InvalidInput
from storage.engine.table import TableRef
from storage.model.attributes import parse_definitions
from storage.model.comments import Comment
from storage.model.facets import Scope
from storage.model.topics import Taxonomy
from storage.ops.bulk import load_new_products
from storage.ops.group_move import move_product
from storage.reads.reader import batch_get_counts
from storage.writes.create import create_comment
from storage.writes.facet_settings import (
    read_definitions,
    read_taxonomy,
    save_definitions,
    save_taxonomy,
)
from storage.writes.tagging import TaxonomyCache

Progress = Callable[[int], None]
# Creates in flight at once: the reviews of one product contend on its counters (and a
# group's variants on the group's), which a conflict makes the write retry; a few at a
# time keeps those rare while the engine is kept busy.
CONCURRENCY = 4


async def seed_demo(
    table: TableRef,
    comments: Sequence[Comment],
    reviews: Sequence[FacetReview],
    *,
    progress: Progress | None = None,
) -> int:
    """Write the demo's comments, then its facet reviews; returns how many were written.
    InvalidInput, before anything is written, when their products have comments."""
    await _check_no_comments(table, [r.new.product_id for r in reviews])
    loaded = await load_new_products(table, comments, progress=progress)
    shifted = None if progress is None else lambda n: progress(loaded + n)
    return loaded + await seed_facets(table, reviews, progress=shifted)


async def seed_facets(
    table: TableRef, reviews: Sequence[FacetReview], *, progress: Progress | None = None
) -> int:
    """The demo's taxonomy and questions (kept when the table holds the same ones already),
    its variants in their group, and ``reviews`` created with their answers and tagged;
    returns how many were created. InvalidInput when the table has other settings, or
    comments on these products."""
    await _check_no_comments(table, [r.new.product_id for r in reviews])
    await _settle_taxonomy(table)
    await _settle_definitions(table, Scope.group(GROUP_ID), GROUP_DEFINITIONS)
    await _settle_definitions(table, Scope.product(HEADPHONES), HEADPHONES_DEFINITIONS)
    for variant in VARIANTS:  # no comments yet: each move is its membership's change
        await move_product(table, variant, GROUP_ID)
    taxonomy = TaxonomyCache()
    gate = asyncio.Semaphore(CONCURRENCY)
    written = 0

    async def create(review: FacetReview) -> None:
        nonlocal written
        async with gate:
            await create_comment(table, review.new, answers=review.answers, taxonomy=taxonomy)
        written += 1
        if progress is not None:
            progress(written)

    await asyncio.gather(*(create(review) for review in reviews))
    return written


async def _check_no_comments(table: TableRef, products: Sequence[str]) -> None:
    counts = await batch_get_counts(table, [(p, None) for p in sorted(set(products))])
    taken = [c.product_id for c in counts if c.total > 0]
    if taken:
        raise InvalidInput(f"products already have comments: {', '.join(taken)}")


async def _settle_taxonomy(table: TableRef) -> None:
    demo = Taxonomy.from_document(TAXONOMY)
    stored = await read_taxonomy(table, consistent=True)
    if stored.revision == 0:
        await save_taxonomy(table, demo, revision=0)
    elif stored.taxonomy != demo:
        raise InvalidInput("the table has a taxonomy of its own: the demo's would replace it")


async def _settle_definitions(table: TableRef, scope: Scope, data: object) -> None:
    demo = parse_definitions(data)
    stored = await read_definitions(table, scope, consistent=True)
    if stored.revision == 0:
        await save_definitions(table, scope, demo, revision=0)
    elif stored.definitions != demo:
        raise InvalidInput(f"{scope.token} has questions of its own: the demo's would replace them")
