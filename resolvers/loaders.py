"""DataLoaders, made per request: one BatchGetItem (per 100 keys) for all the stats or
comments a query needs. Keys are validated by the resolvers before they are loaded, so one
bad key never fails a whole batch.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

from aiodataloader import DataLoader

from storage.engine.table import TableRef
from storage.model.comments import Comment, RatingCounts, Vote
from storage.model.stats import StatsScope
from storage.reads.reader import batch_get_comments, batch_get_counts, last_commented_at
from storage.writes.votes import votes_of


class StatsByProductLanguageLoader(DataLoader[StatsScope, RatingCounts]):
    """Counters by (product, language or None); missing items are zero counts."""

    def __init__(self, table: TableRef, deadline: float) -> None:
        super().__init__()
        self.table = table
        self.deadline = deadline

    async def batch_load_fn(self, keys: list[StatsScope]) -> list[RatingCounts]:
        async with asyncio.timeout_at(self.deadline):
            return await batch_get_counts(self.table, keys)


class CommentByIdLoader(DataLoader[str, Comment | None]):
    """Comments by id, None for ids that do not exist; ``read_units`` keeps what each
    comment found took to read, for a read the viewer may not know of (see
    ``Context.hide_read``)."""

    def __init__(self, table: TableRef, deadline: float) -> None:
        super().__init__()
        self.table = table
        self.deadline = deadline
        self.read_units: dict[str, float] = {}

    async def batch_load_fn(self, keys: list[str]) -> list[Comment | None]:
        async with asyncio.timeout_at(self.deadline):
            return await batch_get_comments(self.table, keys, read_units=self.read_units)


class LastCommentedAtByProductLoader(DataLoader[str, str | None]):
    """When each product's newest comment was written, None without comments."""

    def __init__(self, table: TableRef, deadline: float) -> None:
        super().__init__()
        self.table = table
        self.deadline = deadline

    async def batch_load_fn(self, keys: list[str]) -> list[str | None]:
        async with asyncio.timeout_at(self.deadline):
            return await last_commented_at(self.table, keys)


# (voter, comment id)
VoteKey = tuple[str, str]


class VoteByViewerCommentLoader(DataLoader[VoteKey, Vote | None]):
    """A viewer's helpful vote by comment, None where they have not voted."""

    def __init__(self, table: TableRef, deadline: float) -> None:
        super().__init__()
        self.table = table
        self.deadline = deadline

    async def batch_load_fn(self, keys: list[VoteKey]) -> list[Vote | None]:
        by_voter: dict[str, list[str]] = {}
        for voter, comment_id in keys:
            by_voter.setdefault(voter, []).append(comment_id)
        async with asyncio.timeout_at(self.deadline):
            found = await asyncio.gather(
                *(votes_of(self.table, voter, ids) for voter, ids in by_voter.items())
            )
        votes = dict(zip(by_voter, found, strict=True))
        return [votes[voter].get(comment_id) for voter, comment_id in keys]


@dataclass(frozen=True, slots=True)
class Loaders:
    stats: StatsByProductLanguageLoader
    comments: CommentByIdLoader
    last_commented: LastCommentedAtByProductLoader
    votes: VoteByViewerCommentLoader

    @classmethod
    def for_request(cls, table: TableRef, deadline: float) -> Loaders:
        return cls(
            StatsByProductLanguageLoader(table, deadline),
            CommentByIdLoader(table, deadline),
            LastCommentedAtByProductLoader(table, deadline),
            VoteByViewerCommentLoader(table, deadline),
        )

    def forget_writes(self, comment_id: str) -> None:
        """After a write: later fields of the request must not see what was loaded before."""
        self.stats.clear_all()
        self.last_commented.clear_all()
        self.comments.clear(comment_id)
