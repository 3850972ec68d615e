"""What a change of the table's stream means to kept answers, in the tags answers carry
(resolvers.read_set): the product, group and comment a changed item belongs to, the
leaderboard when a product's 5-star entry moved, membership when a product changed group.

An item this module does not know is taken to change anything (``all``): a kept answer is
dropped too often rather than served stale. Items no answer reads (an author's rate
counters, idempotency records, webhook deliveries, erasure jobs, the processes'
heartbeats, the stream readers' leases) change nothing.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterable

from resolvers.read_set import ALL, COMMENT, GROUP, LEADERS, MEMBERSHIP, PRODUCT
from server.http.answers import AnswerCache
from storage.base.types import Item
from storage.live.claimed import LEASE_PREFIX
from storage.live.stream import Change
from storage.model import keys
from storage.model.facets import GROUP_PREFIX
from storage.model.groups import GROUP_ATTR, HELD_PREFIX, MEMBERSHIP_SK
from storage.model.items import is_comment_item, item_to_comment
from storage.model.stats import LEADER_ATTR, LEADER_SORT_ATTR, is_stats_item

# Partitions of items no answer reads.
_UNREAD = (
    keys.AUTHOR_PREFIX,
    keys.IDEMPOTENCY_PREFIX,
    keys.ERASURE_PREFIX,
    keys.IMPORT_PREFIX,
    "LAYOUT#",  # the processes' heartbeats (``LAYOUT`` itself, the layout, is read)
    "WH",  # webhook messages, lanes, logs
    "WEBHOOK#",
    keys.QUEUE_PK,  # the moderation queue: moderators only, never public
    # The claimed stream readers' leases and checkpoints (webhooks, fan-out): moved on every
    # batch a reader takes, so that taking them for a change would empty every map as often.
    LEASE_PREFIX,
)


def _s(item: Item | None, name: str) -> str | None:
    value = None if item is None else item.get(name, {}).get("S")
    return value if isinstance(value, str) else None


def tags_of(change: Change) -> set[str]:
    """The tags of what ``change`` may alter."""
    pk = _s(change.keys, "PK") or ""
    sk = _s(change.keys, "SK") or ""
    images = [i for i in (change.old, change.new) if i is not None]
    if images and is_comment_item(images[0]):
        tags: set[str] = set()
        groups = set()
        for image in images:
            comment = item_to_comment(image)
            tags |= {PRODUCT + comment.product_id, COMMENT + comment.comment_id}
            groups.add(comment.group_id)
            if comment.group_id is not None:
                tags.add(GROUP + comment.group_id)
        if len(groups) > 1:
            tags.add(MEMBERSHIP)
        return tags
    if pk.startswith(keys.COMMENT_PREFIX):  # a vote or a report under a comment
        return {COMMENT + pk[len(keys.COMMENT_PREFIX) :]}
    if pk.startswith(keys.PRODUCT_PREFIX):
        tags = {PRODUCT + keys.product_id_from_pk(pk)}
        if images and is_stats_item(images[0]):
            entries = {(_s(i, LEADER_ATTR), _s(i, LEADER_SORT_ATTR)) for i in images}
            if len(images) == 1 or len(entries) > 1:
                tags.add(LEADERS)
        if sk == MEMBERSHIP_SK or sk.startswith(HELD_PREFIX):
            tags.add(MEMBERSHIP)
            tags |= {GROUP + g for g in (_s(i, GROUP_ATTR) for i in images) if g is not None}
            if sk.startswith(HELD_PREFIX):
                tags.add(GROUP + sk[len(HELD_PREFIX) :])
        return tags
    if pk.startswith(GROUP_PREFIX):
        return {GROUP + pk[len(GROUP_PREFIX) :], MEMBERSHIP}
    if pk.startswith(_UNREAD):
        return set()
    return {ALL}


def tags_of_batch(changes: Iterable[Change]) -> set[str]:
    tags: set[str] = set()
    for change in changes:
        tags |= tags_of(change)
        if ALL in tags:
            return {ALL}
    return tags


async def telling(
    answers: AnswerCache, batches: AsyncIterator[list[Change]]
) -> AsyncIterator[list[Change]]:
    """The stream's batches, each told to ``answers`` before anything else sees it; the
    first (the follower has taken its place) lets the map serve."""
    async for batch in batches:
        answers.changed(tags_of_batch(batch))
        answers.following()
        yield batch
