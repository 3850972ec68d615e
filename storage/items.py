"""Comment items: conversion between comments and DynamoDB items (wire format).

The stats items' shape lives in ``storage.stats``."""

from __future__ import annotations

from storage import keys
from storage.indexes import SORT_KEY, TTL_ATTR, Index
from storage.model import Comment
from storage.types import Item

# Bumped by every write to a comment; writes that move counters condition on it.
VERSION_ATTR = "version"
# Present (true) on comments that hold one of their author's per-product slots.
SLOT_ATTR = "holdsSlot"
# Epoch seconds after which DynamoDB's TTL may delete an item (records of idempotency keys,
# hourly write counts); readers treat an expired item as absent, as TTL deletes lazily.
EXPIRES_ATTR = TTL_ATTR


def comment_to_item(comment: Comment, *, version: int = 1, holds_slot: bool = False) -> Item:
    """The comment item with the four GSI partition keys and the shared sort key."""
    pid, lang, rating = comment.product_id, comment.language, comment.rating
    item: Item = {
        **comment_key(comment.comment_id),
        Index.BY_LANG_AND_RATING.partition_attr: {"S": keys.lang_rating_pk(pid, lang, rating)},
        Index.BY_LANG.partition_attr: {"S": keys.lang_pk(pid, lang)},
        Index.BY_RATING.partition_attr: {"S": keys.rating_pk(pid, rating)},
        Index.ALL.partition_attr: {"S": keys.all_pk(pid)},
        SORT_KEY: {"S": comment.sort_key},
        "commentId": {"S": comment.comment_id},
        "productId": {"S": pid},
        "language": {"S": lang},
        "rating": {"N": str(rating)},
        "body": {"S": comment.body},
        "author": {"S": comment.author_id},  # the stored name predates the field's
        "createdAt": {"S": comment.created_at},
        VERSION_ATTR: {"N": str(version)},
    }
    if holds_slot:
        item[SLOT_ATTR] = {"BOOL": True}
    if comment.title is not None:
        item["title"] = {"S": comment.title}
    if comment.author_name is not None:
        item["authorName"] = {"S": comment.author_name}
    return item


def item_to_comment(item: Item) -> Comment:
    title = item.get("title")
    name = item.get("authorName")
    return Comment(
        comment_id=item["commentId"]["S"],
        product_id=item["productId"]["S"],
        language=item["language"]["S"],
        rating=int(item["rating"]["N"]),
        title=None if title is None else title["S"],
        body=item["body"]["S"],
        author_id=item["author"]["S"],
        created_at=item["createdAt"]["S"],
        author_name=None if name is None else name["S"],
    )


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
    pk: str = item.get("PK", {}).get("S", "")
    return pk.startswith(keys.COMMENT_PREFIX)


def comment_key(comment_id: str) -> Item:
    """The key of a comment item (its id is both partition and sort key)."""
    pk = {"S": keys.comment_pk(comment_id)}
    return {"PK": pk, "SK": pk}
