"""Helpful votes: one per viewer and comment, changeable, withdrawable, exact under races."""

from __future__ import annotations

import asyncio
import random
from typing import Any

import pytest

from storage.errors import CommentNotFound, NotPublished, OwnComment, WriteConflict
from storage.model import ModerationMode, NewComment, Vote
from storage.table import TableRef
from storage.types import DynamoClient, Response
from storage.verify import repair, verify
from storage.wrapping import ClientWrapper
from storage.writes import create_comment, get_comment
from storage.writes.children import has_children
from storage.writes.delete import delete_comment
from storage.writes.moderate import Decision, moderate_comment
from storage.writes.votes import read_vote, vote_helpful, votes_of
from tests.helpers import FAST, own_product_id, own_table


@pytest.fixture
async def fresh(table: TableRef) -> TableRef:
    return await own_table(table, "votes")


async def made(table: TableRef, author: str = "ann", *, pre: bool = False) -> str:
    mode = ModerationMode.PRE if pre else ModerationMode.POST
    new = NewComment(own_product_id(), "en", 4, "useful?", author)
    return (await create_comment(table, new, moderation=mode, backoff=FAST)).comment.comment_id


async def test_a_vote_is_cast_changed_repeated_and_withdrawn(fresh: TableRef) -> None:
    cid = await made(fresh)
    cast = await vote_helpful(fresh, cid, voter="bob", vote=Vote.HELPFUL)
    assert (cast.comment.helpful, cast.comment.not_helpful, cast.changed) == (1, 0, True)
    again = await vote_helpful(fresh, cid, voter="bob", vote=Vote.HELPFUL)
    assert (again.comment.helpful, again.changed) == (1, False)
    turned = await vote_helpful(fresh, cid, voter="bob", vote=Vote.NOT_HELPFUL)
    assert (turned.comment.helpful, turned.comment.not_helpful) == (0, 1)
    other = await vote_helpful(fresh, cid, voter="cy", vote=Vote.NOT_HELPFUL)
    assert other.comment.not_helpful == 2
    assert await votes_of(fresh, "bob", [cid, "0" * 32]) == {cid: Vote.NOT_HELPFUL}
    gone = await vote_helpful(fresh, cid, voter="bob", vote=None)
    assert (gone.comment.helpful, gone.comment.not_helpful) == (0, 1)
    assert await read_vote(fresh, cid, "bob") is None
    nothing = await vote_helpful(fresh, cid, voter="bob", vote=None)
    assert not nothing.changed
    assert (await verify(fresh)).exact


async def test_votes_are_refused_on_own_and_unpublished_comments(fresh: TableRef) -> None:
    cid = await made(fresh)
    with pytest.raises(OwnComment):
        await vote_helpful(fresh, cid, voter="ann", vote=Vote.HELPFUL)
    waiting = await made(fresh, pre=True)
    with pytest.raises(NotPublished):
        await vote_helpful(fresh, waiting, voter="bob", vote=Vote.HELPFUL)
    with pytest.raises(CommentNotFound):
        await vote_helpful(fresh, "0" * 32, voter="bob", vote=Vote.HELPFUL)
    # Votes stay through moderation: a rejected comment keeps them, and refuses new ones.
    await vote_helpful(fresh, cid, voter="bob", vote=Vote.HELPFUL)
    await moderate_comment(fresh, cid, Decision.REJECT, moderator="mo")
    with pytest.raises(NotPublished):
        await vote_helpful(fresh, cid, voter="bob", vote=None)
    rejected = await get_comment(fresh, cid)
    assert rejected is not None
    assert rejected.helpful == 1
    assert (await verify(fresh)).exact


async def test_racing_votes_leave_counts_equal_to_the_votes(fresh: TableRef) -> None:
    # Twelve viewers, each sending several different votes at once, on two comments: the
    # counts must equal the vote items, whatever order the writes committed in.
    rng = random.Random(7)
    cids = [await made(fresh), await made(fresh)]
    choices = [Vote.HELPFUL, Vote.NOT_HELPFUL, None]
    jobs = [
        vote_helpful(fresh, rng.choice(cids), voter=f"v{n % 12}", vote=rng.choice(choices))
        for n in range(60)
    ]
    answers = await asyncio.gather(*jobs, return_exceptions=True)
    # Thirty writes at once on one comment can exhaust a vote's bound of storage calls:
    # such a vote is refused (CONFLICT, nothing written), never half-counted.
    refused = [a for a in answers if isinstance(a, BaseException)]
    assert all(isinstance(a, WriteConflict) for a in refused), refused
    assert len(refused) < len(answers) // 2
    report = await verify(fresh)
    assert report.exact, report.describe()
    voted = [await get_comment(fresh, cid) for cid in cids]
    assert sum(c.helpful + c.not_helpful for c in voted if c is not None) > 0


async def test_verify_finds_and_repairs_a_drifted_vote_count(fresh: TableRef) -> None:
    cid = await made(fresh)
    await vote_helpful(fresh, cid, voter="bob", vote=Vote.HELPFUL)
    # A count written outside the vote path (an old version, a hand edit).
    await fresh.client.update_item(
        TableName=fresh.name,
        Key={"PK": {"S": f"COMMENT#{cid}"}, "SK": {"S": f"COMMENT#{cid}"}},
        UpdateExpression="SET helpful = :n",
        ExpressionAttributeValues={":n": {"N": "5"}},
    )
    report = await verify(fresh)
    assert report.describe() == [f"comment {cid}: votes [5, 0] != [1, 0]"]
    fixed = await repair(fresh, report)
    assert (fixed.repaired, fixed.skipped) == (1, 0)
    assert (await verify(fresh)).exact
    comment = await get_comment(fresh, cid)
    assert comment is not None
    assert comment.helpful == 1


async def test_a_deleted_comment_takes_its_votes_along(fresh: TableRef) -> None:
    cid = await made(fresh)
    await vote_helpful(fresh, cid, voter="bob", vote=Vote.NOT_HELPFUL)
    comment = await get_comment(fresh, cid)
    assert comment is not None
    assert has_children(comment)
    await delete_comment(fresh, cid)
    assert await read_vote(fresh, cid, "bob") is None
    assert (await verify(fresh)).exact


class _WithdrawnAfterTheVoteIsRead(ClientWrapper):
    """Lets the first read of the viewer's vote answer, then withdraws that vote through
    another writer before the comment is read: the request sees the vote it had and the
    counts without it."""

    def __init__(self, inner: DynamoClient, table: str, comment_id: str) -> None:
        super().__init__(inner)
        self.other = TableRef(inner, table)
        self.comment_id = comment_id
        self.done = False

    async def _call(self, operation: str, kwargs: dict[str, Any]) -> Response:
        response = await super()._call(operation, kwargs)
        sk = kwargs.get("Key", {}).get("SK", {}).get("S", "")
        if operation == "get_item" and sk.startswith("VOTE#") and not self.done:
            self.done = True
            await vote_helpful(self.other, self.comment_id, voter="bob", vote=None)
        return response


async def test_a_vote_withdrawn_between_the_two_reads_is_read_again(fresh: TableRef) -> None:
    # The vote item and the comment are read one after the other: a withdrawal committed
    # between them made the counts go below zero (a ValueError, a failed request).
    cid = await made(fresh)
    await vote_helpful(fresh, cid, voter="bob", vote=Vote.HELPFUL)
    torn = TableRef(_WithdrawnAfterTheVoteIsRead(fresh.client, fresh.name, cid), fresh.name)
    result = await vote_helpful(torn, cid, voter="bob", vote=None)
    assert (result.comment.helpful, result.comment.not_helpful) == (0, 0)
    assert await read_vote(fresh, cid, "bob") is None
    assert (await verify(fresh)).exact
