"""CommentOrder: the sort orders of a product's comments."""

from __future__ import annotations

import enum

import strawberry

from storage.model.comments import Order


@strawberry.enum(description="How a product's comments are sorted; ties go newest first.")
class CommentOrder(enum.Enum):
    NEWEST = strawberry.enum_value(
        "NEWEST", description="Newest first (the default; v1's only order)."
    )
    OLDEST = strawberry.enum_value("OLDEST", description="Oldest first.")
    HIGHEST_RATING = strawberry.enum_value(
        "HIGHEST_RATING", description="5 stars first, newest first within a rating."
    )
    LOWEST_RATING = strawberry.enum_value(
        "LOWEST_RATING", description="1 star first, newest first within a rating."
    )
    MOST_HELPFUL = strawberry.enum_value(
        "MOST_HELPFUL",
        description="Most helpful votes first, then newest first (comments without votes last).",
    )

    def stored(self) -> Order:
        return Order[self.name]
