"""The Comment type."""

from __future__ import annotations

from typing import Self

import strawberry
from strawberry import relay

from resolvers import authors, read_set
from resolvers.comments import votes
from resolvers.comments.visibility import reader
from schema.comments.lifecycle import CommentStatus, HelpfulVote, MerchantReply, Moderation
from schema.context import Info
from schema.facets.types import CommentAttribute, TopicMatch
from schema.products.types import Product
from schema.scalars import DateTime
from storage.model import comments as model
from storage.model import rules
from storage.model.facets import FacetKind
from storage.model.rules import TITLE_MAX


@strawberry.type(description="A comment (review) on a product.")
class Comment(relay.Node):
    comment_id: strawberry.ID = strawberry.field(description="The comment's own identifier.")
    product_id: strawberry.ID = strawberry.field(description="The product commented on.")
    rating: int = strawberry.field(description="1 to 5 stars.")
    language: str = strawberry.field(
        description="BCP 47 tag in its canonical case (en, de, pt-BR, zh-Hant), whatever case "
        "it was written in."
    )
    title: str | None = strawberry.field(
        description=f"Optional title, at most {TITLE_MAX} characters."
    )
    body: str = strawberry.field(description="The text of the comment.")
    author: str = strawberry.field(
        description="Display name of the author (from their token), or 'Anonymous'."
    )
    created_at: DateTime = strawberry.field(
        description="When the comment was written (UTC, milliseconds)."
    )

    @classmethod
    def resolve_id(cls, root: Self, *, info: Info) -> str:
        return str(root.comment_id)

    status: CommentStatus = strawberry.field(
        description="PUBLISHED comments are listed and counted; PENDING and REJECTED ones "
        "are seen by their author and moderators only."
    )
    edited_at: DateTime | None = strawberry.field(
        description="When the author last changed the text, rating or language; null if never."
    )
    revised_at: DateTime = strawberry.field(
        description="When the content last changed: the latest edit, or the creation. Each "
        "edit moves it forward, so it names one revision; a moderator passes it to "
        "moderateComment to decide on exactly what they read."
    )
    verified_purchase: bool = strawberry.field(
        description="True when the author's token listed this product in its `purchases` "
        "claim when the comment was written."
    )
    merchant_reply: MerchantReply | None = strawberry.field(
        description="The merchant's answer; null when there is none."
    )

    @classmethod
    def of(cls, c: model.Comment) -> Self:
        read_set.comment(c.comment_id)
        read_set.product(c.product_id)
        return cls(
            status=CommentStatus[c.status.name],
            edited_at=None if c.edited_at is None else DateTime(c.edited_at),
            revised_at=DateTime(c.revised_at),
            verified_purchase=c.verified,
            merchant_reply=None if c.reply is None else MerchantReply.of(c.reply),
            stored=c,
            comment_id=strawberry.ID(c.comment_id),
            product_id=strawberry.ID(c.product_id),
            rating=c.rating,
            language=rules.canonical_language(c.language),
            title=c.title,
            body=c.body,
            author=c.display_author,
            created_at=DateTime(c.created_at),
            subject=c.author_id,
        )

    # The token's sub of the author: never shown as is, except to its owner and moderators.
    subject: strawberry.Private[str]
    stored: strawberry.Private[model.Comment]

    @strawberry.field(description="How many viewers found it helpful.")
    def helpful_count(self) -> int:
        return self.stored.helpful

    @strawberry.field(description="How many viewers found it not helpful.")
    def not_helpful_count(self) -> int:
        return self.stored.not_helpful

    @strawberry.field(description="The signed-in viewer's vote on this comment; null without one.")
    async def viewer_vote(self, info: Info) -> HelpfulVote | None:
        return HelpfulVote.of(await votes.viewer_vote(info.context, self.stored.comment_id))

    @strawberry.field(description="Moderation details; null unless the viewer is a moderator.")
    def moderation(self, info: Info) -> Moderation | None:
        who = reader(info.context)
        if who is None or not who.is_moderator:
            return None
        return Moderation.of(self.stored.moderation)

    @strawberry.field(
        description="Why the comment was rejected, as the moderator wrote it: for its author "
        "while it is REJECTED, and for moderators (who see the note of any decision); "
        "null otherwise."
    )
    def moderation_note(self, info: Info) -> str | None:
        who = reader(info.context)
        if who is None:
            return None
        if who.is_moderator:
            return self.stored.moderation.note
        # A note on an approval is the moderators' own: the author sees rejection notes.
        if who.author_id == self.subject and self.stored.status is model.Status.REJECTED:
            return self.stored.moderation.note
        return None

    @strawberry.field(
        description="An opaque, stable identifier of the author: the same on all their "
        "comments, and not their account id."
    )
    def author_id(self, info: Info) -> strawberry.ID:
        return strawberry.ID(authors.public_author_id(info.context.author_key, self.subject))

    @strawberry.field(
        description="The author's account id (the token's sub); null unless the viewer is "
        "the author or a moderator."
    )
    def author_subject(self, info: Info) -> strawberry.ID | None:
        visible = authors.visible_subject(info.context.viewer(), self.subject)
        return None if visible is None else strawberry.ID(visible)

    @strawberry.field(description="The product commented on.")
    def product(self) -> Product:
        return Product.of(self.product_id)

    @strawberry.field(description="The author's answers to the shop's attributes, by key.")
    def attributes(self) -> list[CommentAttribute]:
        answers = sorted(
            (f for f in self.stored.facets if f.kind is FacetKind.ATTRIBUTE), key=lambda f: f.key
        )
        return [CommentAttribute(key=a.key, value=a.value) for a in answers]

    @strawberry.field(
        description="The keys of the shop's topics the comment mentions (tagged when it was "
        "written or last edited, or re-tagged after the taxonomy changed), sorted."
    )
    def topics(self) -> list[str]:
        return sorted(f.key for f in self.stored.facets if f.kind is FacetKind.TOPIC)

    @strawberry.field(
        description="Why the comment has its topics (at most three matches a topic), for "
        "moderators; null for anyone else, and for a comment tagged before explanations "
        "were kept."
    )
    def topic_matches(self, info: Info) -> list[TopicMatch] | None:
        who = reader(info.context)
        record = self.stored.tagging
        if who is None or not who.is_moderator or record is None:
            return None
        texts = {"title": self.stored.title or "", "body": self.stored.body}
        return [
            TopicMatch(
                topic=m.topic,
                word=m.word,
                language=m.language,
                field=m.field,
                start=m.start,
                end=m.end,
                text=texts.get(m.field, "")[m.start : m.end],
            )
            for m in record.matches
        ]

    @strawberry.field(
        description="The reviewer received something for this review (disclosed on the "
        "page, as the FTC requires)."
    )
    def incentivized(self) -> bool:
        return self.stored.incentivized
