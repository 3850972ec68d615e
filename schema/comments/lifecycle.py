"""The life of a comment as clients see it: its status, the moderator's view, the merchant's
reply."""

from __future__ import annotations

import enum
from typing import Self

import strawberry

from schema.scalars import DateTime
from storage.model import comments as model


@strawberry.enum(description="Where a comment is in its life.")
class CommentStatus(enum.Enum):
    PENDING = strawberry.enum_value(
        "PENDING",
        description="Waiting for a moderator: visible to its author and moderators only, "
        "counted nowhere.",
    )
    PUBLISHED = strawberry.enum_value(
        "PUBLISHED", description="In listings, counters and the leaderboard."
    )
    REJECTED = strawberry.enum_value(
        "REJECTED",
        description="Refused by a moderator: visible to its author and moderators only, "
        "counted nowhere.",
    )


@strawberry.enum(description="A viewer's verdict on whether a comment helped.")
class HelpfulVote(enum.Enum):
    HELPFUL = strawberry.enum_value("HELPFUL", description="It helped.")
    NOT_HELPFUL = strawberry.enum_value("NOT_HELPFUL", description="It did not help.")

    @classmethod
    def of(cls, vote: model.Vote | None) -> HelpfulVote | None:
        return None if vote is None else cls[vote.name]

    def stored(self) -> model.Vote:
        return model.Vote[self.name]


@strawberry.enum(description="A moderator's decision on a comment.")
class ModerationDecision(enum.Enum):
    APPROVE = strawberry.enum_value("APPROVE", description="Publish it.")
    REJECT = strawberry.enum_value("REJECT", description="Take it out of every listing.")


@strawberry.enum(description="Why a viewer reports a comment.")
class ReportReason(enum.Enum):
    SPAM = "SPAM"
    OFFENSIVE = "OFFENSIVE"
    OFF_TOPIC = "OFF_TOPIC"
    PRIVATE_INFORMATION = "PRIVATE_INFORMATION"
    FAKE = "FAKE"
    OTHER = "OTHER"


@strawberry.type(description="The merchant's answer, shown under the comment.")
class MerchantReply:
    body: str = strawberry.field(description="The text of the reply.")
    author: str = strawberry.field(description="Who answered: the merchant's display name.")
    created_at: DateTime = strawberry.field(description="When the reply was first written.")
    edited_at: DateTime | None = strawberry.field(
        description="When the reply was last replaced; null if never."
    )

    @classmethod
    def of(cls, reply: model.Reply) -> Self:
        return cls(
            body=reply.body,
            author=reply.author,
            created_at=DateTime(reply.created_at),
            edited_at=None if reply.edited_at is None else DateTime(reply.edited_at),
        )


@strawberry.type(description="What moderators see of a comment's reports and decisions.")
class Moderation:
    report_count: int = strawberry.field(
        description="Distinct viewers who reported the comment since the last decision."
    )
    reasons: list[ReportReason] = strawberry.field(
        description="The reasons those reports gave, each once."
    )
    decided_by: str | None = strawberry.field(
        description="The moderator of the last decision; null if none was taken."
    )
    decided_at: DateTime | None = strawberry.field(description="When it was taken.")
    note: str | None = strawberry.field(
        description="The note of the last decision, shown to the author."
    )

    @classmethod
    def of(cls, m: model.Moderation) -> Self:
        return cls(
            report_count=m.report_count,
            reasons=[ReportReason(r) for r in m.reasons],
            decided_by=m.decided_by,
            decided_at=None if m.decided_at is None else DateTime(m.decided_at),
            note=m.note,
        )
