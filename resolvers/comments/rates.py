"""Every write but a create first spends one turn of its author's rate (a create's limits
are in its own transaction); over the rate, ``WriteRateLimited`` reaches the client as
RATE_LIMITED with ``retryAfter``, and nothing is written."""

from __future__ import annotations

from resolvers.auth import Viewer
from resolvers.context import Context
from storage.writes.rates import Family, spend


async def take_turn(ctx: Context, who: Viewer, family: Family) -> None:
    """Count the viewer's write of ``family``, or refuse it (``WriteRateLimited``)."""
    limit = ctx.write_limits.rates.limit(family)
    await ctx.storage(spend(ctx.table, who.author_id, family, limit))
