"""Creating a comment: the comment, its counters, its author's limits and its idempotency
record commit in one transaction, or nothing does."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from datetime import datetime

from storage.base.clock import utc_now
from storage.base.errors import (
    AuthorErasing,
    CommentsPerProductLimit,
    WriteConflict,
    WriteRateLimited,
)
from storage.base.expressions import Attr, check_request, put_request
from storage.engine.retry import DEFAULT_BACKOFF, Backoff
from storage.engine.table import TableRef
from storage.model import keys
from storage.model.comments import Comment, ModerationMode, NewComment
from storage.model.erasure import fence_key
from storage.model.items import comment_to_item
from storage.writes import counters, idempotency, limits
from storage.writes.comment_facets import new_with_facets
from storage.writes.facet_parts import facet_parts
from storage.writes.membership import learned, membership_check, membership_for_write
from storage.writes.tagging import FreshTagger, TaxonomySource, tag
from storage.writes.transaction import CallBudget, Part, transact

COMMENT = "comment"
# No erasure of the author runs (``storage.model.erasure``): a comment is made before the
# fence, and erased with the rest, or refused.
FENCE = "erasure fence"


@dataclass(frozen=True, slots=True)
class CreateResult:
    comment: Comment
    # False when an earlier request with the same idempotency key created it.
    created: bool


async def create_comment(
    table: TableRef,
    new: NewComment,
    *,
    write_limits: limits.WriteLimits = limits.NO_LIMITS,
    moderation: ModerationMode = ModerationMode.POST,
    backoff: Backoff = DEFAULT_BACKOFF,
    clock: Callable[[], datetime] = utc_now,
    answers: Sequence[object] | None = None,
    taxonomy: TaxonomySource | None = None,
) -> CreateResult:
    """Store a comment and count it exactly once, even when the request is retried.

    With an idempotency key, the same request again returns the first result
    (``created=False``), also after the comment was deleted; another request with the same
    key raises ``IdempotencyKeyReused``. Limits raise ``CommentsPerProductLimit`` or
    ``WriteRateLimited``. Nothing is written unless everything is. Under ``PRE``
    moderation the comment is PENDING: stored, queued, and counted nowhere yet.

    ``answers`` become its answer values, checked against the product's definitions
    (``InvalidFields`` naming every problem); with ``taxonomy`` its topics are tagged. The
    API passes both; without them ``new.facets`` is stored as given (imports, loads).
    """
    budget = CallBudget()
    tags = None if taxonomy is None else FreshTagger(table, taxonomy)
    new = await new_with_facets(table, new, answers=answers, tags=tags, budget=budget)
    now = clock()
    comment = new.stored_as(
        keys.new_comment_id(),
        new.created_at or keys.format_timestamp(now),
        new.author_name,
        moderation.new_status,
    )
    five = counters.FiveStars()
    transient = stale = 0
    product_moves = counters.moves(None, comment)
    # Published at once (POST moderation): it counts in the group its product's membership
    # names, checked in the same transaction (storage.writes.membership).
    membership = None
    if comment.published:
        membership = await membership_for_write(table, comment.product_id, budget)
        comment = replace(comment, group_id=membership.group_id)
    async with counters.five_star_turn(table, comment.product_id, product_moves):
        if counters.moves_five(product_moves):
            await counters.learn_five(table, comment.product_id, budget, five)
        while True:
            if tags is not None:  # a retry long after the first tags with a fresh tagger
                comment = tag(await tags.get(), comment)
            parts = _parts(table, new, comment, five, write_limits, now)
            if membership is not None:
                parts.append(membership_check(table, membership))
            cancel = await transact(table, parts, budget)
            if cancel is None:
                return CreateResult(comment, True)
            if cancel.failed(idempotency.PART):
                replayed = idempotency.replay(new, cancel.item(idempotency.PART), now)
                if replayed is not None:
                    return CreateResult(replayed.comment, False)
                continue  # the record expired between our condition and now
            if cancel.failed(FENCE):
                raise AuthorErasing("this author's data is being erased; write again later")
            if cancel.failed(limits.PER_PRODUCT) and write_limits.per_product is not None:
                raise CommentsPerProductLimit(write_limits.per_product)
            if cancel.failed(limits.PER_HOUR) and write_limits.per_hour is not None:
                raise WriteRateLimited(write_limits.per_hour, limits.seconds_to_next_hour(now))
            lost_group = membership is not None and learned(table, cancel, membership)
            if lost_group:
                membership = lost_group
                comment = replace(comment, group_id=lost_group.group_id)
            if lost_group or counters.lost_five_star_race(table, cancel, five):
                stale += 1
                if stale > 2:
                    await backoff.sleep(min(stale - 2, 3))
                continue
            counters.check_no_drift(cancel, comment.product_id)
            if cancel.failed(COMMENT):
                # A fresh random id cannot exist; if it does, take another.
                comment = replace(comment, comment_id=keys.new_comment_id())
                continue
            transient += 1
            if transient >= backoff.attempts:
                raise WriteConflict("storage kept rejecting the write; retry later")
            await backoff.sleep(transient)


def _parts(
    table: TableRef,
    new: NewComment,
    comment: Comment,
    five: counters.FiveStars,
    write_limits: limits.WriteLimits,
    now: datetime,
) -> list[Part]:
    parts: list[Part] = []
    # The record goes first: a repeat must be recognised whatever else would fail (the
    # first request used up the author's slot on this product).
    if new.idempotency_key is not None:
        parts.append(idempotency.record_part(table, new, comment, now))
    put = put_request(
        table.name,
        comment_to_item(comment, version=1, holds_slot=True),
        Attr("PK").not_exists(),  # ids are random: a clash must fail, never overwrite
    )
    parts.append(Part(COMMENT, {"Put": put}))
    parts += counters.parts(table, counters.moves(None, comment), five)
    parts += counters.queue_parts(table, None, comment)
    parts += facet_parts(table, None, comment, version=1)
    parts.append(
        limits.product_part(
            table, comment.author_id, comment.product_id, 1, write_limits.per_product
        )
    )
    if write_limits.per_hour is not None:
        parts.append(limits.hour_part(table, comment.author_id, now, write_limits.per_hour))
    fence = check_request(table.name, fence_key(comment.author_id), Attr("PK").not_exists())
    parts.append(Part(FENCE, {"ConditionCheck": fence}))
    return parts
