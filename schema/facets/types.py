"""Facets in GraphQL: the shop's attributes and their answers, topics, and the filters a
listing takes beyond language, ratings and verified purchase."""

from __future__ import annotations

import enum
from typing import Self

import strawberry

from resolvers.facets.filters import Facets, facets_of
from resolvers.facets.summaries import Mention
from storage.model import attributes as model
from storage.model.facets import MAX_ATTRIBUTE_ANSWERS
from storage.model.topics import Topic
from storage.reads import facet_summaries as summaries
from storage.writes.facet_settings import StoredTaxonomy


@strawberry.enum(description="What values an attribute takes.")
class AttributeKind(enum.Enum):
    CHOICE = strawberry.enum_value(
        "CHOICE", description="One value of a fixed list (fit: small, true to size, large)."
    )
    SCALE = strawberry.enum_value("SCALE", description="A number from 1 to 5 (comfort, quality).")
    BOOLEAN = strawberry.enum_value("BOOLEAN", description="yes or no (would recommend).")


@strawberry.type(description="One allowed value of an attribute.")
class AttributeValue:
    value: str = strawberry.field(description="The value as answers and filters name it.")
    stored: strawberry.Private[model.AttributeValueDef]

    @strawberry.field(
        description="In the language asked for (or the nearest it narrows, de-CH then de), "
        "else the definition's default language."
    )
    def label(self, language: str | None = None) -> str:
        return self.stored.label(language)


@strawberry.type(
    description="A question the shop asks reviewers of some products; answers are filters "
    "with exact counts."
)
class AttributeDefinition:
    key: str = strawberry.field(description="The attribute's key, as answers name it.")
    kind: AttributeKind = strawberry.field(description="What values it takes.")
    values: list[AttributeValue] = strawberry.field(
        description='The allowed values, in display order (SCALE: "1".."5"; BOOLEAN: "yes", "no").'
    )
    stored: strawberry.Private[model.AttributeDefinition]

    @strawberry.field(
        description="In the language asked for, else the definition's default language."
    )
    def label(self, language: str | None = None) -> str:
        return self.stored.label(language)

    @classmethod
    def of(cls, d: model.AttributeDefinition) -> Self:
        return cls(
            key=d.key,
            kind=AttributeKind[d.kind.name],
            values=[AttributeValue(value=v.value, stored=v) for v in d.values],
            stored=d,
        )


@strawberry.type(description="A reviewer's answer to one attribute.")
class CommentAttribute:
    key: str = strawberry.field(description="The attribute answered.")
    value: str = strawberry.field(description="The value given.")


@strawberry.type(description="How many comments in scope gave one value.")
class AttributeValueCount:
    value: str = strawberry.field(description="The value.")
    count: int = strawberry.field(description="Exact number of comments that gave it.")


@strawberry.type(
    description="How the published comments in scope answered one attribute: exact counts."
)
class AttributeDistribution:
    key: str = strawberry.field(description="The attribute.")
    answered: int = strawberry.field(description="Comments in scope that answered this attribute.")
    values: list[AttributeValueCount] = strawberry.field(
        description="Every defined value in display order (0 when no comment gave it), then "
        "values no longer defined that comments still hold."
    )

    @classmethod
    def of(cls, d: summaries.AttributeDistribution) -> Self:
        return cls(
            key=d.key,
            answered=d.answered,
            values=[AttributeValueCount(value=v.value, count=v.count) for v in d.values],
        )


@strawberry.type(
    description='A theme of the shop\'s taxonomy that reviews mention ("battery life"), '
    "with exact counts."
)
class TopicMention:
    topic: str = strawberry.field(description="The topic's key in the taxonomy.")
    count: int = strawberry.field(description="Published comments in scope that mention it.")
    positive: int = strawberry.field(description="Of those, rated 4 or 5 stars.")
    negative: int = strawberry.field(description="Of those, rated 1 or 2 stars.")
    mention: strawberry.Private[Mention]

    @strawberry.field(
        description="In the language asked for (or the nearest it narrows), else the "
        "taxonomy's default language; the key when the topic has left the taxonomy."
    )
    def label(self, language: str | None = None) -> str:
        topic = self.mention.topic
        if topic is None:
            return self.topic
        for tag in (language, self.mention.default_language):
            if tag:
                found = topic.label(tag.lower())
                if found is not None:
                    return found
        return self.topic

    @classmethod
    def of(cls, m: Mention) -> Self:
        c = m.counts
        return cls(
            topic=c.topic, count=c.count, positive=c.positive, negative=c.negative, mention=m
        )


@strawberry.input(description="An answer to one attribute, or a filter on one.")
class AttributeInput:
    key: str = strawberry.field(description="The attribute's key.")
    value: str = strawberry.field(description="One of its values.")


@strawberry.input(
    description="Filters beyond language, ratings and verified purchase. Every field narrows "
    "the listing (AND)."
)
class CommentFacets:
    attributes: list[AttributeInput] | None = strawberry.field(
        default=None,
        description="Comments that answered these attributes with these values (one value "
        f"per key, at most {MAX_ATTRIBUTE_ANSWERS}).",
    )
    topic: str | None = strawberry.field(
        default=None, description="Comments that mention this topic."
    )
    with_photos: bool | None = strawberry.field(
        default=None,
        description="true: comments with at least one published photo (none yet: photos "
        "come with a later release, so true lists nothing and counts 0); false or null: no "
        "filter.",
    )
    exclude_incentivized: bool | None = strawberry.field(
        default=None,
        description="true: leave out reviews written in exchange for something (free "
        "product, discount); false or null: no filter.",
    )
    product_id: strawberry.ID | None = strawberry.field(
        default=None,
        description="On a group's listing: only the comments written on this product. On a "
        "product's own listing it may only name that product.",
    )

    def checked(self) -> Facets:
        """The filters as storage takes them (BAD_USER_INPUT naming the field otherwise)."""
        return facets_of(
            [(a.key, a.value) for a in self.attributes or ()],
            self.topic,
            self.with_photos,
            self.exclude_incentivized,
            None if self.product_id is None else str(self.product_id),
        )


@strawberry.type(description="A topic of the shop's taxonomy.")
class TopicDefinition:
    key: str = strawberry.field(description="The topic's key, as Comment.topics names it.")
    stored: strawberry.Private[Topic]
    default_language: strawberry.Private[str]

    @strawberry.field(
        description="In the language asked for (or the nearest it narrows), else the "
        "taxonomy's default language."
    )
    def label(self, language: str | None = None) -> str:
        for tag in (language, self.default_language):
            if tag:
                found = self.stored.label(tag.lower())
                if found is not None:
                    return found
        return self.key


@strawberry.type(description="The shop's topics, which comments are tagged with.")
class TopicTaxonomy:
    revision: int = strawberry.field(
        description="Its revision (0: none yet), which setTopicTaxonomy changes from."
    )
    default_language: str | None = strawberry.field(
        description="The language of labels asked for in one they lack; null without topics."
    )
    topics: list[TopicDefinition] = strawberry.field(description="Its topics, in its order.")

    @classmethod
    def of(cls, stored: StoredTaxonomy) -> Self:
        taxonomy = stored.taxonomy
        if taxonomy is None:
            return cls(revision=stored.revision, default_language=None, topics=[])
        default = taxonomy.default_language
        return cls(
            revision=stored.revision,
            default_language=default,
            topics=[
                TopicDefinition(key=t.key, stored=t, default_language=default)
                for t in taxonomy.topics
            ],
        )


@strawberry.type(
    description="Why a comment has a topic: the taxonomy's word that matched, and where."
)
class TopicMatch:
    topic: str = strawberry.field(description="The topic tagged.")
    word: str = strawberry.field(description="The taxonomy's word or phrase that matched.")
    language: str = strawberry.field(description="The language of the word's list.")
    field: str = strawberry.field(description="title or body: where it matched.")
    start: int = strawberry.field(description="Where the match starts in that text.")
    end: int = strawberry.field(description="Where it ends (exclusive).")
    text: str = strawberry.field(description="The matched text itself.")
