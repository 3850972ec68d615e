"""Comment items: conversion between comments and DynamoDB items (wire format).

The stats items' shape lives in ``storage.model.stats``."""

from __future__ import annotations

from collections.abc import Iterable

from storage.base.types import Item
from storage.model import facets, keys
from storage.model.comments import REPORT_REASONS, Comment, Moderation, Reply, Status
from storage.model.facets import FacetValue, Scope
from storage.model.indexes import HELPFUL_SORT_KEY, QUEUE_SORT_KEY, SORT_KEY, TTL_ATTR, Index
from storage.model.rules import (
    AUTHOR_MAX_BYTES,
    BODY_MAX_BYTES,
    NOTE_MAX_BYTES,
    REPLY_MAX_BYTES,
    TITLE_MAX_BYTES,
)
from storage.model.tagging import RECORD_MAX_BYTES, TagRecord

# Bumped by every write to a comment; writes that move counters condition on it.
VERSION_ATTR = "version"
# Present (true) on comments that hold one of their author's per-product slots.
SLOT_ATTR = "holdsSlot"
STATUS_ATTR = "status"
VERIFIED_ATTR = "verified"
HELPFUL_ATTR = "helpful"
VOTE_ATTR = "vote"  # a vote item's verdict
NOT_HELPFUL_ATTR = "notHelpful"
FACETS_ATTR = "facets"  # a string set of facet value tokens (storage.model.facets)
# The largest comment item (and entry, a copy of one): its texts at their limits in UTF-8
# bytes (the body, title, author's names, the merchant's reply and its author, the
# moderator's note and name), plus under 4 KiB of ids, keys, times and attribute names,
# 2 KiB of facet values (at most MAX_FACET_VALUES tokens of 131 bytes), and the comment's
# tagging record with its fingerprint (entries do not copy it).
ITEM_BYTES_MAX = (
    BODY_MAX_BYTES
    + TITLE_MAX_BYTES
    + 4 * AUTHOR_MAX_BYTES
    + REPLY_MAX_BYTES
    + NOTE_MAX_BYTES
    + 4096
    + 2048
    + RECORD_MAX_BYTES
    + 128
)
# DynamoDB ends a Query response at 1 MB of items read (filtered or counted ones too), so
# a read of many items takes one call per this many of them at most.
RESPONSE_BYTES = 1024 * 1024
ITEMS_PER_RESPONSE = RESPONSE_BYTES // ITEM_BYTES_MAX
INCENTIVIZED_ATTR = "incentivized"
# The fingerprint of the taxonomy its topics were tagged with, and why (storage.model.tagging).
TAGGED_WITH_ATTR = "taggedWith"
TOPIC_MATCHES_ATTR = "topicMatches"
# The group a published comment counts in (storage.model.groups).
COMMENT_GROUP_ATTR = "groupId"
# Epoch seconds after which DynamoDB's TTL may delete an item (records of idempotency keys,
# hourly write counts); readers treat an expired item as absent, as TTL deletes lazily.
EXPIRES_ATTR = TTL_ATTR


def comment_to_item(comment: Comment, *, version: int = 1, holds_slot: bool = False) -> Item:
    """The whole comment item: the keys of every index it belongs to in its status (the
    listing indexes while PUBLISHED, the queue while PENDING), and the shared sort key.

    Every write of a comment puts the whole item, so keys of indexes it has left are gone.
    """
    pid, lang, rating = comment.product_id, comment.language, comment.rating
    item: Item = {
        **comment_key(comment.comment_id),
        SORT_KEY: {"S": comment.sort_key},
        "commentId": {"S": comment.comment_id},
        "productId": {"S": pid},
        "language": {"S": lang},
        "rating": {"N": str(rating)},
        "body": {"S": comment.body},
        "author": {"S": comment.author_id},  # the stored name predates the field's
        "createdAt": {"S": comment.created_at},
        STATUS_ATTR: {"S": comment.status.value},
        VERSION_ATTR: {"N": str(version)},
    }
    if comment.published:
        listing = {
            Index.BY_LANG_AND_RATING: keys.lang_rating_pk(pid, lang, rating),
            Index.BY_LANG: keys.lang_pk(pid, lang),
            Index.BY_RATING: keys.rating_pk(pid, rating),
            Index.ALL: keys.all_pk(pid),
        }
        if comment.verified:
            listing[Index.VERIFIED_BY_RATING] = keys.rating_pk(pid, rating)
            listing[Index.VERIFIED_BY_LANG_AND_RATING] = keys.lang_rating_pk(pid, lang, rating)
        for index, value in listing.items():
            item[index.partition_attr] = {"S": value}
        # Its place in the listings' helpful twins (see storage.model.indexes).
        item[HELPFUL_SORT_KEY] = {"S": keys.helpful_sort_key(comment.helpful, comment.sort_key)}
    queue_key = comment.queue_key
    if queue_key is not None:
        item[Index.MODERATION_QUEUE.partition_attr] = {"S": keys.QUEUE_PK}
        item[QUEUE_SORT_KEY] = {"S": queue_key}
    optional: dict[str, str | None] = {
        "title": comment.title,
        "authorName": comment.author_name,
        "editedAt": comment.edited_at,
        "submittedAt": comment.submitted_at if comment.status is Status.PENDING else None,
    }
    for name, text in optional.items():
        if text is not None:
            item[name] = {"S": text}
    if holds_slot:
        item[SLOT_ATTR] = {"BOOL": True}
    if comment.verified:
        item[VERIFIED_ATTR] = {"BOOL": True}
    item.update(_moderation_attrs(comment.moderation))
    if comment.reply is not None:
        item.update(_reply_attrs(comment.reply))
    for name, count in ((HELPFUL_ATTR, comment.helpful), (NOT_HELPFUL_ATTR, comment.not_helpful)):
        if count:
            item[name] = {"N": str(count)}
    if comment.facets:  # a string set cannot be empty: no facets, no attribute
        item[FACETS_ATTR] = {"SS": sorted(f.token for f in comment.facets)}
    if comment.incentivized:
        item[INCENTIVIZED_ATTR] = {"BOOL": True}
    if comment.tagging is not None:
        item[TAGGED_WITH_ATTR] = {"S": comment.tagging.fingerprint}
        item[TOPIC_MATCHES_ATTR] = {"S": comment.tagging.to_json()}
    if comment.group_id is not None:
        item[COMMENT_GROUP_ATTR] = {"S": comment.group_id}
    return item


def _moderation_attrs(m: Moderation) -> Item:
    item: Item = {}
    if m.round:
        item["modRound"] = {"N": str(m.round)}
    if m.report_count:
        item["reportCount"] = {"N": str(m.report_count)}
    if m.reasons:
        item["reportReasons"] = {"L": [{"S": r} for r in m.reasons]}
    for name, value in (("decidedBy", m.decided_by), ("decidedAt", m.decided_at)):
        if value is not None:
            item[name] = {"S": value}
    if m.note is not None:
        item["modNote"] = {"S": m.note}
    return item


def _reply_attrs(r: Reply) -> Item:
    item: Item = {
        "replyBody": {"S": r.body},
        "replyAuthor": {"S": r.author},
        "replyCreatedAt": {"S": r.created_at},
    }
    if r.edited_at is not None:
        item["replyEditedAt"] = {"S": r.edited_at}
    return item


def _text(item: Item, name: str) -> str | None:
    value = item.get(name)
    return None if value is None else str(value["S"])


def item_to_comment(item: Item) -> Comment:
    reasons = {r["S"] for r in item.get("reportReasons", {}).get("L", [])}
    reply = None
    if "replyBody" in item:
        reply = Reply(
            body=item["replyBody"]["S"],
            author=item["replyAuthor"]["S"],
            created_at=item["replyCreatedAt"]["S"],
            edited_at=_text(item, "replyEditedAt"),
        )
    return Comment(
        comment_id=item["commentId"]["S"],
        product_id=item["productId"]["S"],
        language=item["language"]["S"],
        rating=int(item["rating"]["N"]),
        title=_text(item, "title"),
        body=item["body"]["S"],
        # An entry carries the author under another name (``author`` keys byAuthor).
        author_id=(item.get("author") or item[ENTRY_AUTHOR_ATTR])["S"],
        created_at=item["createdAt"]["S"],
        author_name=_text(item, "authorName"),
        # Comments written before statuses existed were all published.
        status=Status(_text(item, STATUS_ATTR) or Status.PUBLISHED.value),
        verified=bool(item.get(VERIFIED_ATTR, {}).get("BOOL", False)),
        edited_at=_text(item, "editedAt"),
        submitted_at=_text(item, "submittedAt"),
        moderation=Moderation(
            round=number(item, "modRound"),
            report_count=number(item, "reportCount"),
            reasons=tuple(r for r in REPORT_REASONS if r in reasons),
            decided_by=_text(item, "decidedBy"),
            decided_at=_text(item, "decidedAt"),
            note=_text(item, "modNote"),
        ),
        reply=reply,
        helpful=number(item, HELPFUL_ATTR),
        not_helpful=number(item, NOT_HELPFUL_ATTR),
        facets=frozenset(FacetValue.parse(t) for t in item.get(FACETS_ATTR, {}).get("SS", [])),
        incentivized=bool(item.get(INCENTIVIZED_ATTR, {}).get("BOOL", False)),
        tagging=_tagging(item),
        group_id=_text(item, COMMENT_GROUP_ATTR),
    )


def _tagging(item: Item) -> TagRecord | None:
    fingerprint = _text(item, TAGGED_WITH_ATTR)
    matches = _text(item, TOPIC_MATCHES_ATTR)
    if fingerprint is None or matches is None:
        return None
    return TagRecord.from_json(fingerprint, matches)


def number(item: Item, name: str) -> int:
    """A number attribute, 0 when absent."""
    value = item.get(name)
    return 0 if value is None else int(value["N"])


def item_version(item: Item) -> int:
    """The comment's version; 0 for items written before comments carried one."""
    return number(item, VERSION_ATTR)


def holds_slot(item: Item) -> bool:
    return bool(item.get(SLOT_ATTR, {}).get("BOOL", False))


def is_comment_item(item: Item) -> bool:
    """A comment itself (``PK = SK = COMMENT#<id>``), not a report filed under it."""
    pk: str = item.get("PK", {}).get("S", "")
    return pk.startswith(keys.COMMENT_PREFIX) and item.get("SK", {}).get("S") == pk


def comment_key(comment_id: str) -> Item:
    """The key of a comment item (its id is both partition and sort key)."""
    pk = {"S": keys.comment_pk(comment_id)}
    return {"PK": pk, "SK": pk}


# The count of the moderation queue's item (``keys.QUEUE_PK``), moved with every
# transition into or out of the queue.
QUEUE_COUNT_ATTR = "n"
# The count of an author's slot item (per product, per hour: ``storage.writes.limits``).
SLOT_COUNT_ATTR = "n"


def queue_count_key() -> Item:
    return {"PK": {"S": keys.QUEUE_PK}, "SK": {"S": keys.QUEUE_COUNT_SK}}


# What an entry (storage.model.facets) must not carry of its comment's item: every other
# index's keys (the entry would show in those listings twice), and what only the comment
# itself holds. The author id, a byAuthor key, travels under another name. The facet
# values travel: a page shows them, and a second facet filters the first's entries.
_NOT_IN_ENTRIES = frozenset({index.partition_attr for index in Index}) | {
    QUEUE_SORT_KEY,
    HELPFUL_SORT_KEY,
    VERSION_ATTR,
    SLOT_ATTR,
    TAGGED_WITH_ATTR,  # moderators' explanation: not what a page shows
    TOPIC_MATCHES_ATTR,
    COMMENT_GROUP_ATTR,  # a group move leaves the product's entries as they are
}
ENTRY_AUTHOR_ATTR = "entryAuthor"
# The version of the comment an entry copies (its own ``version`` would be a second one).
ENTRY_VERSION_ATTR = "entryOf"


def entry_items(
    comment: Comment, pairs: Iterable[tuple[Scope, FacetValue]], version: int
) -> list[Item]:
    """The entries of ``comment`` (at ``version``) for each (scope, value) of ``pairs``, in
    their order: a copy of what a page shows of it, in its own partition, keyed into both
    facet indexes and sorted like the listings. The copy is made once for all of them, and
    says which version of the comment it is (a vote's follow-up brings the helpful counts
    of older copies up: ``storage.writes.ballots``)."""
    whole = comment_to_item(comment)
    shown = {name: v for name, v in whole.items() if name not in _NOT_IN_ENTRIES}
    shown[ENTRY_AUTHOR_ATTR] = whole["author"]
    shown[ENTRY_VERSION_ATTR] = {"N": str(version)}
    rating, language = comment.rating, comment.language
    return [
        {
            **shown,
            "SK": {"S": facets.entry_sk(scope, value)},
            facets.FACET_PARTITION: {"S": facets.facet_partition(scope, value, rating)},
            facets.FACET_LANG_PARTITION: {
                "S": facets.facet_lang_partition(scope, value, language, rating)
            },
        }
        for scope, value in pairs
    ]


def entry_key(comment_id: str, scope: Scope, value: FacetValue) -> Item:
    return {"PK": {"S": keys.comment_pk(comment_id)}, "SK": {"S": facets.entry_sk(scope, value)}}


def is_entry_item(item: Item) -> bool:
    """A facet entry (``SK = FACET#...`` under a comment)."""
    sk: str = item.get("SK", {}).get("S", "")
    return sk.startswith(facets.ENTRY_PREFIX)
