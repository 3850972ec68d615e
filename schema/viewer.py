"""The signed-in viewer and their own comments."""

from __future__ import annotations

from typing import Self

import strawberry

from resolvers.auth import MERCHANT, MODERATOR
from resolvers.auth import Viewer as SignedIn
from resolvers.comments import reads as comment_reads
from schema.comments.connection import CommentConnection
from schema.context import Info
from storage.model.comments import PAGE_SIZE_DEFAULT, PAGE_SIZE_MAX

# The roles this API acts on; a token's other roles mean nothing here and are not shown.
KNOWN_ROLES = (MODERATOR, MERCHANT)


@strawberry.type(description="Who is signed in (from the bearer token).")
class Viewer:
    author_id: strawberry.ID = strawberry.field(
        description="The author id of the token: its subject (`sub`, or the claim the server is "
        "set to read it from)."
    )
    roles: list[str] = strawberry.field(
        description=f"The token's roles this API acts on: {', '.join(KNOWN_ROLES)}."
    )

    @classmethod
    def of(cls, who: SignedIn) -> Self:
        return cls(
            author_id=strawberry.ID(who.author_id),
            roles=[r for r in KNOWN_ROLES if r in who.roles],
        )

    @strawberry.field(
        description="The viewer's own comments in every status, newest first. first/last: "
        f"0..{PAGE_SIZE_MAX} (default {PAGE_SIZE_DEFAULT})."
    )
    async def comments(
        self,
        info: Info,
        first: int | None = None,
        after: str | None = None,
        last: int | None = None,
        before: str | None = None,
    ) -> CommentConnection | None:
        listing = await comment_reads.viewer_comments(
            info.context, str(self.author_id), first=first, after=after, last=last, before=before
        )
        return CommentConnection.from_listing(listing)
