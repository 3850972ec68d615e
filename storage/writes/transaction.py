"""One TransactWriteItems of named parts, what its cancellation says about each part, and the
budget of storage calls a write may make, retries included."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from storage.base.errors import (
    EngineFault,
    StorageUnavailable,
    Throttled,
    TransactionCancelled,
    WriteConflict,
)
from storage.base.types import Item
from storage.engine.seam import TRANSIENT_CANCELLATIONS
from storage.engine.table import TableRef

# Storage calls one create or delete may make, every read and retry included. The GraphQL
# cost model prices a mutation at this many points, so it must stay a true bound. 32 lets
# a 5-star write lose the count_5 race to other processes many times in a row (each loss
# means another write committed) before it reports a conflict; 16 ran out under load.
MAX_WRITE_CALLS = 32

# A cancellation reason's codes (one per action): "None" is DynamoDB's own code for an
# action that was fine and cancelled with the others; the transient ones are the seam's.
CONDITION_FAILED = "ConditionalCheckFailed"


class CallBudget:
    """The storage calls a write may still make; when they run out it reports a conflict."""

    def __init__(self, calls: int = MAX_WRITE_CALLS) -> None:
        self.left = calls

    def spend(self) -> None:
        if self.left <= 0:
            raise WriteConflict("the write kept meeting concurrent writes; retry later")
        self.left -= 1


@dataclass(frozen=True, slots=True)
class Part:
    """One action of a transaction (``{"Put": ...}``, ``{"Update": ...}``...), named so that
    a cancellation can be read by role rather than by position."""

    name: str
    action: dict[str, Any]


@dataclass(frozen=True, slots=True)
class Cancellation:
    """Why a transaction did not commit: each part's code and, for a failed condition with
    ALL_OLD, the item as it was."""

    reasons: dict[str, tuple[str, Item | None]]

    def failed(self, name: str) -> bool:
        """The named part's own condition failed (the state is not what we computed from)."""
        return self.reasons.get(name, ("None", None))[0] == CONDITION_FAILED

    def item(self, name: str) -> Item:
        return self.reasons.get(name, ("None", None))[1] or {}

    @property
    def any_condition_failed(self) -> bool:
        return any(code == CONDITION_FAILED for code, _ in self.reasons.values())


async def transact(
    table: TableRef, parts: Sequence[Part], budget: CallBudget
) -> Cancellation | None:
    """Run the transaction; None when it committed, else why each part was cancelled.

    Conflicts and throttling come back as a cancellation without a failed condition, for
    the caller to retry after a pause; anything else fails as ``StorageUnavailable``.
    """
    budget.spend()
    names = [p.name for p in parts]
    if len(set(names)) != len(names):
        raise ValueError(f"transaction parts need distinct names: {names}")
    try:
        await table.client.transact_write_items(TransactItems=[p.action for p in parts])
    except TransactionCancelled as exc:
        reasons: dict[str, tuple[str, Item | None]] = dict.fromkeys(names, ("None", None))
        for name, reason in zip(names, exc.reasons, strict=False):
            reasons[name] = (str(reason.get("Code") or "None"), reason.get("Item"))
        codes = {c for c, _ in reasons.values()}
        if codes - TRANSIENT_CANCELLATIONS - {CONDITION_FAILED}:
            raise StorageUnavailable("the write was rejected by storage") from exc
        return Cancellation(reasons)
    except (Throttled, EngineFault) as exc:
        # The whole call failed for a transient reason: every action carries its code.
        return Cancellation(dict.fromkeys(names, (exc.code, None)))
    return None
