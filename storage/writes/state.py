"""A comment as stored, with what writes condition on: its version and whether it holds a
per-author slot."""

from __future__ import annotations

from dataclasses import dataclass

from storage.base.expressions import Attr, Condition, all_of
from storage.base.types import Item
from storage.engine.table import TableRef
from storage.model import rules
from storage.model.comments import Comment
from storage.model.items import VERSION_ATTR, comment_key, holds_slot, item_to_comment, item_version
from storage.writes.transaction import CallBudget


@dataclass(frozen=True, slots=True)
class Stored:
    """A comment as read (strongly consistent), and the state a write conditions on."""

    comment: Comment
    version: int
    holds_slot: bool

    @classmethod
    def of(cls, item: Item) -> Stored:
        """The write state of a comment item read strongly consistent."""
        return cls(item_to_comment(item), item_version(item), holds_slot(item))

    def unchanged(self) -> Condition:
        """True only while the comment is exactly as read: the same version, and the same
        rating and language (what counters were computed from), so a write computed from
        this read cannot commit over any later write."""
        version = Attr(VERSION_ATTR)
        same = [
            Attr("rating").eq(self.comment.rating),
            Attr("language").eq(self.comment.language),
            # Written before comments carried versions: the first versioned write adds one.
            version.not_exists() if self.version == 0 else version.eq(self.version),
        ]
        condition = all_of(same)
        assert condition is not None
        return condition


async def read_stored(
    table: TableRef, comment_id: str, budget: CallBudget | None = None
) -> Stored | None:
    """The comment with this id and its write state, or None."""
    if budget is not None:
        budget.spend()
    response = await table.client.get_item(
        TableName=table.name,
        Key=comment_key(rules.validate_comment_id(comment_id)),
        ConsistentRead=True,
    )
    item = response.get("Item")
    return Stored.of(item) if item else None


async def get_comment(table: TableRef, comment_id: str) -> Comment | None:
    """The comment with this id, or None (strongly consistent)."""
    stored = await read_stored(table, comment_id)
    return None if stored is None else stored.comment
