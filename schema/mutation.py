"""The Mutation root: writes need a bearer token. Each family's fields live with its domain
(``schema.comments.mutations``); the root only assembles them."""

from __future__ import annotations

import strawberry

from schema import privacy
from schema.comments import edits, moderation, replies, votes
from schema.comments import mutations as comments
from schema.facets import mutations as facets
from schema.webhooks import mutations as webhooks


@strawberry.type(description="Writes; each needs an Authorization: Bearer <JWT> header.")
class Mutation:
    create_comment: comments.CreateCommentPayload = strawberry.mutation(
        resolver=comments.create_comment,
        description="Requires a bearer token; the author is taken from it.",
    )
    delete_comment: comments.DeleteCommentPayload = strawberry.mutation(
        resolver=comments.delete_comment,
        description="Requires a bearer token of the comment's author or of a moderator.",
    )
    update_comment: edits.UpdateCommentPayload = strawberry.mutation(
        resolver=edits.update_comment,
        description="The author changes text, rating or language; counters and the "
        "leaderboard move in the same transaction.",
    )
    moderate_comment: moderation.ModerateCommentPayload = strawberry.mutation(
        resolver=moderation.moderate_comment, description="Moderators only."
    )
    report_comment: moderation.ReportCommentPayload = strawberry.mutation(
        resolver=moderation.report_comment,
        description="Any signed-in viewer, once per comment; a repeat changes nothing.",
    )
    reply_to_comment: replies.ReplyToCommentPayload = strawberry.mutation(
        resolver=replies.reply_to_comment,
        description="Tokens with the merchant role; one reply per comment, replacing the "
        "previous one.",
    )
    delete_reply: replies.DeleteReplyPayload = strawberry.mutation(
        resolver=replies.delete_reply,
        description="Tokens with the merchant role: removes the comment's reply.",
    )
    vote_helpful: votes.VoteHelpfulPayload = strawberry.mutation(
        resolver=votes.vote_helpful,
        description="Any signed-in viewer except the comment's author; one vote per viewer "
        "and comment, changeable.",
    )
    set_attribute_definitions: facets.SetAttributeDefinitionsPayload = strawberry.mutation(
        resolver=facets.set_attribute_definitions,
        description="Moderators and merchants: replace a product's (outside any group) or a "
        "group's attribute definitions, from the revision read.",
    )
    set_topic_taxonomy: facets.SetTopicTaxonomyPayload = strawberry.mutation(
        resolver=facets.set_topic_taxonomy,
        description="Moderators and merchants: replace the shop's topic taxonomy, from the "
        "revision read.",
    )
    set_product_group: facets.SetProductGroupPayload = strawberry.mutation(
        resolver=facets.set_product_group,
        description="Moderators and merchants: put a product in a group (or in none) and "
        "move its published comments there; every count stays exact during the move.",
    )
    erase_author: privacy.EraseAuthorPayload = strawberry.mutation(
        resolver=privacy.erase_author,
        description="Moderators only: erase an author's data (their comments deleted or "
        "anonymized, their votes and reports withdrawn); runs for a few seconds and goes on "
        "with the next call for the same subject until DONE.",
    )
    create_webhook_endpoint: webhooks.CreateWebhookEndpointPayload = strawberry.mutation(
        resolver=webhooks.create_webhook_endpoint,
        description="Moderators and merchants: register a webhook endpoint; its signing "
        "secret is in the payload, once.",
    )
    update_webhook_endpoint: webhooks.UpdateWebhookEndpointPayload = strawberry.mutation(
        resolver=webhooks.update_webhook_endpoint,
        description="Moderators and merchants: change an endpoint, from the version read.",
    )
    delete_webhook_endpoint: webhooks.DeleteWebhookEndpointPayload = strawberry.mutation(
        resolver=webhooks.delete_webhook_endpoint,
        description="Moderators and merchants: delete an endpoint, from the version read.",
    )
    rotate_webhook_secret: webhooks.RotateWebhookSecretPayload = strawberry.mutation(
        resolver=webhooks.rotate_webhook_secret,
        description="Moderators and merchants: a new signing secret for an endpoint; the "
        "previous one signs too for a grace period.",
    )
