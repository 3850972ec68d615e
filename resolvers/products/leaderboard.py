"""The leaderboard: products by 5-star count."""

from __future__ import annotations

from resolvers import read_set
from resolvers.context import Context
from storage.reads.leaders import LeaderEntry, leaderboard


async def top_products(ctx: Context, first: int) -> list[LeaderEntry]:
    """The leaderboard: products by 5-star count, most first (storage checks ``first``)."""
    read_set.leaders()
    return await ctx.storage(leaderboard(ctx.table, first))
