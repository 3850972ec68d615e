"""Where the comments live (``TableRef``: the client behind the seam and the table name)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TypeVar, cast

from storage.base.locks import KeyedLocks
from storage.base.types import DynamoClient
from storage.engine.seam import at_seam
from storage.model.leaderboard import LayoutMemory

M = TypeVar("M")


@dataclass(frozen=True, slots=True)
class TableRef:
    """Where the comments live: the client and the table name travel together.

    Made once per application lifespan, next to the client. ``five_star_locks`` lets the
    writes of one process that change the same product's 5-star count take turns instead
    of racing (the conditions in the transactions still guard against other processes).
    ``leader_layout`` remembers the leaderboard's layout as last read
    (``storage.model.leaderboard``): a hint that writes condition on and reads check, never
    trusted alone.

    ``memories`` holds what a concern above keeps for the whole process, one object per
    type, so that this module names none of them (the engine sits below reads and writes):
    the read path's snapshots of counters and page heads (``PlanMemory``), the votes
    waiting for their comment's next transaction (``VoteLanes``). Each concern reaches its
    own through ``memory``; one made with settings is given at construction (``keep``).

    The client is put behind the seam (``storage.engine.seam``) on creation: every call storage
    makes goes through ``table.client``, so every engine failure leaves as a storage error.
    """

    client: DynamoClient
    name: str
    five_star_locks: KeyedLocks = field(default_factory=KeyedLocks, compare=False, repr=False)
    leader_layout: LayoutMemory = field(default_factory=LayoutMemory, compare=False, repr=False)
    memories: dict[type, object] = field(default_factory=dict, compare=False, repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "client", at_seam(self.client))

    def keep(self, *memories: object) -> TableRef:
        """This table with ``memories`` as the process's own of their types (made with
        settings, or shared with another view of the table); returns ``self``."""
        for memory in memories:
            self.memories[type(memory)] = memory
        return self

    def memory(self, kind: type[M]) -> M:
        """The process's one ``kind`` for this table, made on first use."""
        found = self.memories.get(kind)
        if found is None:
            found = self.memories[kind] = kind()
        return cast(M, found)
