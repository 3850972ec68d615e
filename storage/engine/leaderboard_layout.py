"""Reading the leaderboard's layout item, and the process's memory of it.

Below reads and writes, because both act on the layout: the leaderboard read chooses its
shards by it (``storage.reads.leaders``), every 5-star move places its entry by it and
conditions on it (``storage.writes.counters``), and a reshard moves it
(``storage.ops.reshard``).
"""

from __future__ import annotations

from storage.base.expressions import get_request
from storage.engine.table import TableRef
from storage.model.leaderboard import LAYOUT_KEY, LeaderLayout, layout_of


async def read_layout(table: TableRef) -> LeaderLayout:
    """The layout as recorded now (strongly consistent), remembered by this process."""
    response = await table.client.get_item(**get_request(table.name, LAYOUT_KEY, consistent=True))
    layout = layout_of(response.get("Item"))
    table.leader_layout.known = layout
    return layout


async def known_layout(table: TableRef) -> LeaderLayout:
    """The layout this process remembers, read once when it has none."""
    known = table.leader_layout.known
    return known if known is not None else await read_layout(table)
