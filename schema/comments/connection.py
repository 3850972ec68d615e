"""The keyset connection that pages through a product's comments, with its EXPLAIN."""

from __future__ import annotations

import enum
from typing import Self

import strawberry
from strawberry import relay

from resolvers.comments.reads import Listing, Total
from schema.comments.types import Comment
from storage.model import comments as model
from storage.reads import executor
from storage.reads.cursor import encode_cursor


@strawberry.enum(
    description="The access path of a page: one index (ALL, BY_LANG, BY_RATING, "
    "BY_LANG_AND_RATING), parallel queries merged (FAN_OUT), one index read with a filter "
    "(FILTERED_SCAN_OF_INDEX), the rating partitions one after another for a rating order "
    "(IN_TURN), or nothing to read (EMPTY); BY_AUTHOR and MODERATION_QUEUE page the "
    "viewer's own comments and the moderation queue. MOST_HELPFUL reads the same "
    "strategies on the indexes' helpful twins."
)
class PlanStrategy(enum.Enum):
    """The public names of ``storage.reads.planner.Strategy``: the contract's, kept apart from the
    planner's so that renaming a strategy inside storage cannot change the API."""

    EMPTY = "EMPTY"
    ALL = "ALL"
    BY_LANG = "BY_LANG"
    BY_RATING = "BY_RATING"
    BY_LANG_AND_RATING = "BY_LANG_AND_RATING"
    FAN_OUT = "FAN_OUT"
    FILTERED_SCAN_OF_INDEX = "FILTERED_SCAN_OF_INDEX"
    IN_TURN = "IN_TURN"
    BY_AUTHOR = "BY_AUTHOR"
    MODERATION_QUEUE = "MODERATION_QUEUE"


@strawberry.type(name="PlannedQuery", description="One storage query issued for a page.")
class ExecutedQuery:
    """A storage query as it ran (``storage.reads.executor.ExecutedQuery``), with what it read.

    The contract calls the type PlannedQuery (a name from v1); in Python it is named for
    what it shows. ``storage.reads.planner.PlannedQuery`` is the plan before execution."""

    index: str = strawberry.field(description="The DynamoDB index queried.")
    partition_key: str = strawberry.field(description="The partition read.")
    limit: int = strawberry.field(description="The Limit asked for.")
    items_read: int = strawberry.field(description="Items storage read for this query.")
    round: int = strawberry.field(
        description="1 for the first, concurrent round; 2 for top-ups the merge needed."
    )
    ranged: bool = strawberry.field(
        description="True for a top-up that read a key range up to a cut key."
    )

    @classmethod
    def of(cls, q: executor.ExecutedQuery) -> Self:
        return cls(
            index=q.index,
            partition_key=q.partition_key,
            limit=q.limit,
            items_read=q.items_read,
            round=q.round,
            ranged=q.ranged,
        )


@strawberry.type(description="How storage answered this page (EXPLAIN).")
class QueryPlan:
    strategy: PlanStrategy = strawberry.field(
        description="Which access path the planner chose for this page."
    )
    index: str | None = strawberry.field(description="Index queried, null when no query ran.")
    queries: list[ExecutedQuery] = strawberry.field(
        description="One entry per storage query issued for this page."
    )
    skipped_ratings: list[int] = strawberry.field(
        description="Ratings left out because their count is zero."
    )
    items_read: int = strawberry.field(
        description="Items storage read to build this page (the page itself included)."
    )
    rounds: int = strawberry.field(
        description="Sequential rounds of queries (0 to 2; more when a plan made from the "
        "process's snapshot of the counters had to run again)."
    )
    storage_rounds: int = strawberry.field(
        description="Sequential storage rounds of the page, the counters' read included "
        "when the page waited for it (the process had no snapshot of them yet)."
    )
    read_capacity_units: float = strawberry.field(
        description="Read capacity the page's queries consumed."
    )
    explain: str = strawberry.field(description="The plan as text, as the planner prints it.")

    @classmethod
    def of(cls, page: executor.Page) -> Self:
        plan = page.plan
        return cls(
            strategy=PlanStrategy[plan.strategy.name],
            index=None if plan.index is None else plan.index.value,
            queries=[ExecutedQuery.of(q) for q in page.executed],
            skipped_ratings=list(plan.skipped_ratings),
            items_read=page.items_read,
            rounds=page.rounds,
            storage_rounds=page.storage_rounds,
            read_capacity_units=page.capacity_units,
            explain=plan.explain(),
        )


def edge_of(comment: model.Comment) -> relay.Edge[Comment]:
    """A comment as an edge of its product's connection (newest first, as listed)."""
    return relay.Edge(cursor=encode_cursor(comment.sort_key), node=Comment.of(comment))


@strawberry.type(
    name="CommentConnection",
    description="A page of comments in the order of its listing (newest first, the "
    "moderation queue oldest first), with exact totals and its EXPLAIN.",
)
class CommentConnection(relay.Connection[Comment]):
    nodes: list[Comment] = strawberry.field(description="The comments of this page, in order.")
    total: strawberry.Private[Total]

    @strawberry.field(
        description="Exact number of comments matching the filter, from the maintained "
        "counters (no scan). With several facet values it is counted from the narrowest "
        "one's entries, priced before it runs: a request that cannot afford it is refused "
        "with QUERY_TOO_COMPLEX (leave totalCount out; the page stays within budget)."
    )
    async def total_count(self) -> int:
        return self.total if isinstance(self.total, int) else await self.total()

    plan: QueryPlan | None = strawberry.field(
        description="How storage answered this page (EXPLAIN); null where plans are not exposed."
    )

    @classmethod
    def from_listing(cls, listing: Listing) -> Self:
        # A cursor is the comment's position in the order read (the queue orders by
        # submission time, every other listing by creation time).
        page = listing.page
        edges = [
            relay.Edge(cursor=encode_cursor(position, listing.ordering), node=Comment.of(c))
            for c, position in zip(page.comments, page.positions, strict=True)
        ]
        cursors = [e.cursor for e in edges]
        return cls(
            edges=edges,
            nodes=[e.node for e in edges],
            page_info=relay.PageInfo(
                has_next_page=listing.has_next,
                has_previous_page=listing.has_previous,
                start_cursor=cursors[0] if cursors else None,
                end_cursor=cursors[-1] if cursors else None,
            ),
            total=listing.total,
            plan=QueryPlan.of(listing.page) if listing.show_plan else None,
        )
