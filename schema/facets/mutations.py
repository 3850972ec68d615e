"""The facet settings' mutation family: attribute definitions, the topic taxonomy, and a
product's group, changed by moderators and the merchant role."""

from __future__ import annotations

import strawberry

from resolvers.facets import settings
from resolvers.user_errors import Problems
from schema.context import Info
from schema.facets.types import AttributeDefinition, AttributeKind
from schema.products.groups import ProductGroup
from schema.products.types import Product
from schema.user_errors import UserError
from storage.model.attributes import ATTRIBUTES_MAX, LABEL_MAX, VALUES_MAX


@strawberry.input(description="A text in one language.")
class LabelInput:
    language: str = strawberry.field(description="BCP 47 language tag (de, pt-BR).")
    text: str = strawberry.field(description=f"At most {LABEL_MAX} characters, one line.")


@strawberry.input(description="One allowed value of an attribute.")
class AttributeValueInput:
    value: str = strawberry.field(
        description="Lower-case letters, digits and hyphens (true-to-size)."
    )
    labels: list[LabelInput] = strawberry.field(
        description="Its label per language, the definition's default language among them."
    )


@strawberry.input(description="One question the shop asks reviewers.")
class AttributeDefinitionInput:
    key: str = strawberry.field(description="Lower-case letters, digits and hyphens (fit).")
    kind: AttributeKind = strawberry.field(description="What values it takes.")
    default_language: str = strawberry.field(
        description="The language shown when a label is asked for in one it lacks."
    )
    labels: list[LabelInput] = strawberry.field(description="The question per language.")
    values: list[AttributeValueInput] | None = strawberry.field(
        default=None,
        description=f"CHOICE: 2 to {VALUES_MAX} values in display order. SCALE (1..5) and "
        "BOOLEAN (yes, no) have theirs: give them only to label them.",
    )


@strawberry.input(
    description="A scope's attribute definitions, replacing the ones of the revision read."
)
class SetAttributeDefinitionsInput:
    product_id: strawberry.ID | None = strawberry.field(
        default=None,
        description="A product outside any group (a grouped product's reviewers answer its "
        "group's definitions). Exactly one of productId and groupId.",
    )
    group_id: strawberry.ID | None = strawberry.field(default=None, description="A group.")
    definitions: list[AttributeDefinitionInput] = strawberry.field(
        description=f"At most {ATTRIBUTES_MAX}, in display order; [] removes every question "
        "(answers stay stored and counted, as retired)."
    )
    revision: int = strawberry.field(
        description="attributeDefinitionsRevision as read: a change made since by someone "
        "else refuses this one (CHANGED), so that no change is lost."
    )


@strawberry.type(description="The definitions as stored.")
class SetAttributeDefinitionsPayload:
    definitions: list[AttributeDefinition] | None = strawberry.field(
        description="The definitions now; null when userErrors is not empty."
    )
    revision: int | None = strawberry.field(
        description="Their revision now, to make the next change from."
    )
    user_errors: list[UserError] = strawberry.field(
        description="Every problem, each at its path (a label: ['input', 'definitions', "
        "'0', 'values', '2', 'labels', 'de']), the reason in its message; empty when stored."
    )


async def set_attribute_definitions(
    info: Info, input: SetAttributeDefinitionsInput
) -> SetAttributeDefinitionsPayload:
    try:
        stored = await settings.set_definitions(
            info.context,
            product_id=None if input.product_id is None else str(input.product_id),
            group_id=None if input.group_id is None else str(input.group_id),
            definitions=[_definition(d) for d in input.definitions],
            revision=input.revision,
        )
    except Problems as refused:
        return SetAttributeDefinitionsPayload(
            definitions=None, revision=None, user_errors=UserError.all(refused)
        )
    return SetAttributeDefinitionsPayload(
        definitions=[AttributeDefinition.of(d) for d in stored.definitions],
        revision=stored.revision,
        user_errors=[],
    )


def _labels(labels: list[LabelInput]) -> dict[str, str] | list[list[str]]:
    """Labels as the stored format has them (language -> text); a language given twice is
    passed on as such, for the check to name it."""
    by_language = {label.language: label.text for label in labels}
    if len(by_language) != len(labels):
        return [[label.language, label.text] for label in labels]
    return by_language


def _definition(d: AttributeDefinitionInput) -> dict[str, object]:
    data: dict[str, object] = {
        "key": d.key,
        "kind": d.kind.value,
        "defaultLanguage": d.default_language,
        "label": _labels(d.labels),
    }
    if d.values is not None:
        data["values"] = [{"value": v.value, "label": _labels(v.labels)} for v in d.values]
    return data


@strawberry.input(description="The shop's topic taxonomy, replacing the revision read.")
class SetTopicTaxonomyInput:
    document: str = strawberry.field(
        description="The taxonomy as JSON, in the format `comments taxonomy load` reads "
        "(docs: Facets, topics): format, defaultLanguage, and topics with their key, labels "
        "and words per language."
    )
    revision: int = strawberry.field(
        description="topicTaxonomy.revision as read (0: none yet); another refuses (CHANGED)."
    )


@strawberry.type(description="The taxonomy as stored.")
class SetTopicTaxonomyPayload:
    revision: int | None = strawberry.field(
        description="Its revision now; null when userErrors is not empty. Existing comments "
        "are re-tagged by `comments retag`; new and edited ones are tagged at once."
    )
    topics: int | None = strawberry.field(description="How many topics it has.")
    user_errors: list[UserError] = strawberry.field(
        description="Every problem (the document's own path in the message); empty when stored."
    )


async def set_topic_taxonomy(info: Info, input: SetTopicTaxonomyInput) -> SetTopicTaxonomyPayload:
    try:
        stored = await settings.set_taxonomy(
            info.context, document=input.document, revision=input.revision
        )
    except Problems as refused:
        return SetTopicTaxonomyPayload(
            revision=None, topics=None, user_errors=UserError.all(refused)
        )
    count = 0 if stored.taxonomy is None else len(stored.taxonomy.topics)
    return SetTopicTaxonomyPayload(revision=stored.revision, topics=count, user_errors=[])


@strawberry.input(description="Which group a product belongs to.")
class SetProductGroupInput:
    product_id: strawberry.ID = strawberry.field(description="The product.")
    group_id: strawberry.ID | None = strawberry.field(
        default=None, description="Its group; null: it leaves its group for none."
    )


@strawberry.type(description="The product in its group.")
class SetProductGroupPayload:
    product: Product | None = strawberry.field(
        description="The product; null when userErrors is not empty."
    )
    group: ProductGroup | None = strawberry.field(description="Its group now; null for none.")
    complete: bool = strawberry.field(
        description="Every published comment of the product counts in its new group (and in "
        "no other). false: the move of its comments goes on with the next call (each comment "
        "counts in exactly one group meanwhile, so every count stays exact)."
    )
    user_errors: list[UserError] = strawberry.field(
        description="Every problem with the input; empty when the membership was set."
    )


async def set_product_group(info: Info, input: SetProductGroupInput) -> SetProductGroupPayload:
    try:
        changed = await settings.set_group(
            info.context,
            product_id=str(input.product_id),
            group_id=None if input.group_id is None else str(input.group_id),
        )
    except Problems as refused:
        return SetProductGroupPayload(
            product=None, group=None, complete=False, user_errors=UserError.all(refused)
        )
    return SetProductGroupPayload(
        product=Product.of(changed.product_id),
        group=None if changed.group_id is None else ProductGroup.of(changed.group_id),
        complete=changed.complete,
        user_errors=[],
    )
