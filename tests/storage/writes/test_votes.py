"""Helpful votes: one per viewer and comment, changeable, withdrawable, exact under races."""

from __future__ import annotations

import asyncio
import random
from dataclasses import replace
from typing import Any

import pytest

from storage.base.errors import CommentNotFound, NotPublished, OwnComment, WriteConflict
from storage.base.expressions import Attr, delete_request, put_request
from storage.base.types import DynamoClient, Response
from storage.engine.conflicts import AwsConflicts, item_key
from storage.engine.retry import Backoff
from storage.engine.table import TableRef
from storage.engine.wrapping import ClientWrapper
from storage.model import keys
from storage.model.comments import ModerationMode, NewComment, Vote
from storage.model.indexes import HELPFUL_SORT_KEY
from storage.model.items import comment_key
from storage.ops.verify import repair, verify
from storage.writes import create_comment, get_comment
from storage.writes.ballots import VoteLanes, vote_key
from storage.writes.children import has_children
from storage.writes.delete import delete_comment
from storage.writes.moderate import Decision, moderate_comment
from storage.writes.state import Stored
from storage.writes.transaction import Part
from storage.writes.transition import Change, apply
from storage.writes.votes import read_vote, vote_helpful, votes_of
from tests.helpers import FAST, FaultyClient, own_product_id, own_table

# Retries enough for two processes taking turns on one comment.
PATIENT = Backoff(attempts=20, base=0.002, cap=0.05)


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
    another writer before the request writes: the request decides from the vote it had."""

    def __init__(self, inner: DynamoClient, table: str, comment_id: str) -> None:
        super().__init__(inner)
        self.other = TableRef(inner, table)
        self.comment_id = comment_id
        self.done = False

    async def _call(self, operation: str, kwargs: dict[str, Any]) -> Response:
        response = await super()._call(operation, kwargs)
        read = [k["SK"]["S"] for r in kwargs.get("RequestItems", {}).values() for k in r["Keys"]]
        if operation == "batch_get_item" and not self.done:
            assert any(sk.startswith("VOTE#") for sk in read)
            self.done = True
            await vote_helpful(self.other, self.comment_id, voter="bob", vote=None)
        return response


async def test_a_vote_withdrawn_after_it_was_read_is_read_again(fresh: TableRef) -> None:
    # A withdrawal committed between the read and the write: the write's condition on the
    # vote item fails, the vote is read again and is already what the request asks for
    # (once, with the vote and the comment read one after the other, the counts went
    # below zero: a ValueError, a failed request).
    cid = await made(fresh)
    await vote_helpful(fresh, cid, voter="bob", vote=Vote.HELPFUL)
    torn = TableRef(_WithdrawnAfterTheVoteIsRead(fresh.client, fresh.name, cid), fresh.name)
    result = await vote_helpful(torn, cid, voter="bob", vote=None)
    assert (result.comment.helpful, result.comment.not_helpful) == (0, 0)
    assert await read_vote(fresh, cid, "bob") is None
    assert (await verify(fresh)).exact


async def _followed_up(table: TableRef) -> None:
    """Until every lane of votes has finished, follow-ups of the helpful order included."""
    async with asyncio.timeout(10):
        await table.memory(VoteLanes).drain()
    assert len(table.memory(VoteLanes)) == 0


@pytest.mark.parametrize("voters", [30, 100])
async def test_voters_on_one_hot_comment_do_not_queue_under_aws_conflicts(
    fresh: TableRef, voters: int
) -> None:
    # AWS cancels a transaction on an item another transaction is writing; the local
    # engine does not, so the fault mode does it here. Every vote conditioned on the
    # comment's version (or each in a transaction of its own) meets these conflicts.
    cid = await made(fresh)
    conflicts = AwsConflicts(fresh.client, hold=0.002)
    aws = TableRef(conflicts, fresh.name)
    rng = random.Random(voters)
    wanted = {f"v{n}": rng.choice([Vote.HELPFUL, Vote.NOT_HELPFUL]) for n in range(voters)}
    answers = await asyncio.gather(
        *(vote_helpful(aws, cid, voter=v, vote=w, backoff=FAST) for v, w in wanted.items()),
        return_exceptions=True,
    )
    assert [a for a in answers if isinstance(a, BaseException)] == []
    attempts = sum(conflicts.attempts[item_key(fresh.name, vote_key(cid, v))] for v in wanted)
    assert attempts <= 1.2 * voters, (attempts, conflicts.conflicts)
    await _followed_up(aws)
    comment = await get_comment(fresh, cid)
    assert comment is not None
    expected = [sum(w is v for w in wanted.values()) for v in (Vote.HELPFUL, Vote.NOT_HELPFUL)]
    assert [comment.helpful, comment.not_helpful] == expected
    # verify checks the counts against the vote items and HSK against the counts.
    report = await verify(fresh)
    assert report.exact, report.describe()


async def test_votes_on_one_comment_share_transactions(fresh: TableRef) -> None:
    # Counting work: twenty votes at once take far fewer than twenty transactions.
    cid = await made(fresh)
    counting = FaultyClient(fresh.client, lambda _, __: None)
    shared = TableRef(counting, fresh.name)
    await asyncio.gather(
        *(vote_helpful(shared, cid, voter=f"v{n}", vote=Vote.HELPFUL) for n in range(20))
    )
    await _followed_up(shared)
    transactions = counting.calls.count("transact_write_items")
    assert transactions <= 10  # votes whose reads end while one is in flight go together
    # After each commit one read, the voters' answer; HSK follows from the count read,
    # once no vote waits (or after KEY_LAG_SECONDS of votes): at most once a batch, and
    # at least once, after the last.
    assert counting.calls.count("get_item") == transactions
    assert 1 <= counting.calls.count("update_item") <= transactions
    # Before: each vote's own read (its vote and the comment in one call).
    assert counting.calls.count("batch_get_item") == 20
    assert (await verify(fresh)).exact


async def test_verify_finds_and_repairs_a_stale_helpful_order_key(fresh: TableRef) -> None:
    # A process that stopped between a vote's commit and its follow-up leaves HSK behind
    # the count: verify reports it, repair sets it.
    cid = await made(fresh)
    await vote_helpful(fresh, cid, voter="bob", vote=Vote.HELPFUL)
    await _followed_up(fresh)
    key = {"PK": {"S": f"COMMENT#{cid}"}, "SK": {"S": f"COMMENT#{cid}"}}
    stored = (await fresh.client.get_item(TableName=fresh.name, Key=key))["Item"]
    right = stored["HSK"]["S"]
    stale = "0" + right[1:].replace("1#", "0#", 1)
    await fresh.client.update_item(
        TableName=fresh.name,
        Key=key,
        UpdateExpression="SET HSK = :k",
        ExpressionAttributeValues={":k": {"S": stale}},
    )
    report = await verify(fresh)
    assert report.describe() == [f"comment {cid}: helpful order key {stale} != {right}"]
    fixed = await repair(fresh, report)
    assert (fixed.repaired, fixed.skipped) == (1, 0)
    assert (await verify(fresh)).exact


async def _old_vote(table: TableRef, comment_id: str, voter: str, vote: Vote | None) -> None:
    """A vote as the previous release makes it: the whole comment written with counts
    computed from the version read, on the condition of that version."""

    def decide(stored: Stored) -> Change:
        c = stored.comment
        moved = {v: int(vote is v) - int(current is v) for v in Vote}
        after = replace(
            c,
            helpful=c.helpful + moved[Vote.HELPFUL],
            not_helpful=c.not_helpful + moved[Vote.NOT_HELPFUL],
        )
        as_read = Attr("PK").not_exists() if current is None else Attr("vote").eq(current.value)
        key = vote_key(comment_id, voter)
        if vote is None:
            part = Part("vote", {"Delete": delete_request(table.name, key, as_read)})
        else:
            item = {**key, "vote": {"S": vote.value}}
            part = Part("vote", {"Put": put_request(table.name, item, as_read)})
        return Change(after, parts=(part,))

    current = await read_vote(table, comment_id, voter)
    await apply(table, comment_id, decide, backoff=FAST)


class _NewVoteAfterTheOldRead(ClientWrapper):
    """Lets an old process read the comment, then commits a new process's vote before the
    old one writes: the old write's version no longer holds."""

    def __init__(self, inner: DynamoClient, new: TableRef, comment_id: str) -> None:
        super().__init__(inner)
        self.new = new
        self.comment_id = comment_id
        self.reads = 0

    async def _call(self, operation: str, kwargs: dict[str, Any]) -> Response:
        response = await super()._call(operation, kwargs)
        sk = kwargs.get("Key", {}).get("SK", {}).get("S", "")
        if operation == "get_item" and sk.startswith("COMMENT#"):
            self.reads += 1
            if self.reads == 1:
                await vote_helpful(self.new, self.comment_id, voter="new", vote=Vote.HELPFUL)
        return response


async def test_an_old_process_vote_racing_a_new_one_leaves_counts_exact(fresh: TableRef) -> None:
    # During a rolling upgrade: the old vote read the comment at version v, the new vote
    # ADDs to the counts and to the version, so the old write fails, reads again and
    # counts both.
    cid = await made(fresh)
    old = TableRef(_NewVoteAfterTheOldRead(fresh.client, fresh, cid), fresh.name)
    await _old_vote(old, cid, "old", Vote.HELPFUL)
    assert old.client.inner.reads == 2  # type: ignore[attr-defined]
    await _followed_up(fresh)
    comment = await get_comment(fresh, cid)
    assert comment is not None
    assert (comment.helpful, comment.not_helpful) == (2, 0)
    # And the other way round: an old write after a new vote reads the new version.
    await vote_helpful(fresh, cid, voter="new", vote=Vote.NOT_HELPFUL)
    await _old_vote(fresh, cid, "old", None)
    await _followed_up(fresh)
    comment = await get_comment(fresh, cid)
    assert comment is not None
    assert (comment.helpful, comment.not_helpful) == (0, 1)
    assert (await verify(fresh)).exact


class _OtherVoteAfterTheRead(ClientWrapper):
    """After this process's first read, another process votes on the same comment: the
    HSK this process predicts from its read is then one vote short."""

    def __init__(self, inner: DynamoClient, other: TableRef, comment_id: str) -> None:
        super().__init__(inner)
        self.other = other
        self.comment_id = comment_id
        self.calls: list[str] = []

    async def _call(self, operation: str, kwargs: dict[str, Any]) -> Response:
        response = await super()._call(operation, kwargs)
        self.calls.append(operation)
        if self.calls == ["batch_get_item"]:
            await vote_helpful(self.other, self.comment_id, voter="elsewhere", vote=Vote.HELPFUL)
        return response


async def test_a_key_predicted_from_an_old_read_is_set_right_after_the_commit(
    fresh: TableRef,
) -> None:
    cid = await made(fresh)
    other = TableRef(fresh.client, fresh.name)  # another process: lanes of its own
    racing = _OtherVoteAfterTheRead(fresh.client, other, cid)
    here = TableRef(racing, fresh.name)
    result = await vote_helpful(here, cid, voter="here", vote=Vote.HELPFUL)
    # Answered once the follow-up set the key the transaction had predicted wrong.
    assert racing.calls == ["batch_get_item", "transact_write_items", "get_item", "update_item"]
    assert result.comment.helpful == 2
    report = await verify(fresh)
    assert report.exact, report.describe()


async def test_two_processes_voting_on_one_comment_under_aws_conflicts(fresh: TableRef) -> None:
    # Their transactions on the comment do conflict (about three attempts a vote; see
    # docs/benchmarks/votes.md): retried, never an error, and the counts and the key end exact.
    cid = await made(fresh)
    conflicts = AwsConflicts(fresh.client, hold=0.002)
    processes = [TableRef(conflicts, fresh.name), TableRef(conflicts, fresh.name)]
    wanted = {f"v{n}": [Vote.HELPFUL, Vote.NOT_HELPFUL][n % 3 == 0] for n in range(40)}
    answers = await asyncio.gather(
        *(
            vote_helpful(processes[n % 2], cid, voter=v, vote=w, backoff=PATIENT)
            for n, (v, w) in enumerate(wanted.items())
        ),
        return_exceptions=True,
    )
    assert [a for a in answers if isinstance(a, BaseException)] == []
    for process in processes:
        await _followed_up(process)
    comment = await get_comment(fresh, cid)
    assert comment is not None
    assert comment.helpful == sum(w is Vote.HELPFUL for w in wanted.values())
    report = await verify(fresh)
    assert report.exact, report.describe()


class _VoteChangedBeforeItsTransaction(ClientWrapper):
    """Before the first transaction that carries ``voter``'s vote, that viewer changes it
    through another process: that vote item's condition fails, the others' hold."""

    def __init__(self, inner: DynamoClient, other: TableRef, comment_id: str, voter: str) -> None:
        super().__init__(inner)
        self.other = other
        self.comment_id = comment_id
        self.voter_sk = keys.vote_sk(voter)
        self.voter = voter
        self.calls: list[str] = []
        self.done = False

    async def _call(self, operation: str, kwargs: dict[str, Any]) -> Response:
        self.calls.append(operation)
        if operation == "transact_write_items" and not self.done:
            written = [next(iter(a.values())) for a in kwargs["TransactItems"]]
            sks = [(w.get("Key") or w["Item"])["SK"]["S"] for w in written]
            if self.voter_sk in sks:
                self.done = True
                await vote_helpful(
                    self.other, self.comment_id, voter=self.voter, vote=Vote.NOT_HELPFUL
                )
        return await super()._call(operation, kwargs)


async def test_only_the_vote_whose_item_changed_is_read_again(fresh: TableRef) -> None:
    cid = await made(fresh)
    await vote_helpful(fresh, cid, voter="x", vote=Vote.HELPFUL)
    other = TableRef(fresh.client, fresh.name)
    changing = _VoteChangedBeforeItsTransaction(fresh.client, other, cid, "x")
    here = TableRef(changing, fresh.name)
    voters = {"x": None, **{f"v{n}": Vote.HELPFUL for n in range(5)}}
    await asyncio.gather(
        *(vote_helpful(here, cid, voter=v, vote=w, backoff=FAST) for v, w in voters.items())
    )
    assert changing.done
    # One read per vote, and one more for x alone.
    assert changing.calls.count("batch_get_item") == len(voters) + 1
    assert await read_vote(fresh, cid, "x") is None
    await _followed_up(here)
    comment = await get_comment(fresh, cid)
    assert comment is not None
    assert (comment.helpful, comment.not_helpful) == (5, 0)
    assert (await verify(fresh)).exact


async def test_one_voter_racing_their_own_votes_cancels_others_at_most_once(
    fresh: TableRef,
) -> None:
    # A viewer sends many votes at once on one comment, HELPFUL and NOT_HELPFUL in turn:
    # each reads its vote item before the one before commits, so most carry a stale
    # condition. Other viewers voting meanwhile share transactions with them: they must
    # all be answered, each in at most one cancelled transaction besides its own.
    cid = await made(fresh)
    counting = AwsConflicts(fresh.client, fail=False)
    here = TableRef(counting, fresh.name)
    racing = [
        vote_helpful(here, cid, voter="racer", vote=(Vote.HELPFUL, Vote.NOT_HELPFUL)[n % 2])
        for n in range(40)
    ]
    others = [vote_helpful(here, cid, voter=f"other{n}", vote=Vote.HELPFUL) for n in range(20)]
    answers = await asyncio.gather(*racing, *others, return_exceptions=True)
    await _followed_up(here)
    assert [a for a in answers[40:] if isinstance(a, BaseException)] == []
    attempts = [
        counting.attempts[item_key(fresh.name, vote_key(cid, f"other{n}"))] for n in range(20)
    ]
    assert max(attempts) <= 2, attempts
    assert (await verify(fresh)).exact


async def test_the_helpful_key_never_moves_back_when_another_process_voted_between(
    fresh: TableRef,
) -> None:
    # This process's voter reads the comment; another process then commits votes on it
    # and brings its key up; then this vote commits. The key must never go back below
    # one already set (a walk of the most helpful order would meet the comment twice).
    cid = await made(fresh)
    other = TableRef(fresh.client, fresh.name)  # another process: lanes of its own
    seen: list[str] = []

    async def key_now() -> str:
        response = await fresh.client.get_item(
            TableName=fresh.name, Key=comment_key(cid), ConsistentRead=True
        )
        return str(response["Item"][HELPFUL_SORT_KEY]["S"])

    class Between(ClientWrapper):
        reads = 0

        async def _call(self, operation: str, kwargs: dict[str, Any]) -> Response:
            response = await super()._call(operation, kwargs)
            if operation == "batch_get_item" and Between.reads == 0:
                Between.reads += 1
                for n in range(3):
                    await vote_helpful(other, cid, voter=f"elsewhere{n}", vote=Vote.HELPFUL)
                await _followed_up(other)
                seen.append(await key_now())
            elif operation == "transact_write_items":
                seen.append(await key_now())
            return response

    here = TableRef(Between(fresh.client), fresh.name)
    answer = await vote_helpful(here, cid, voter="here", vote=Vote.HELPFUL)
    await _followed_up(here)
    seen.append(await key_now())
    assert answer.comment.helpful == 4
    assert seen == sorted(seen), seen
    assert seen[-1] == keys.helpful_sort_key(4, answer.comment.sort_key)


async def test_a_vote_given_up_during_its_pause_is_never_written(fresh: TableRef) -> None:
    # Its transaction met another on the comment; while it waits to go again, its request
    # gives up (a timeout, a client gone): it must not be written afterwards.
    cid = await made(fresh)
    aws = AwsConflicts(fresh.client)
    met = asyncio.Event()

    class Watching(ClientWrapper):
        async def _call(self, operation: str, kwargs: dict[str, Any]) -> Response:
            try:
                return await super()._call(operation, kwargs)
            except Exception:
                if operation == "transact_write_items":
                    met.set()
                raise

    here = TableRef(Watching(aws), fresh.name)
    with aws.busy(item_key(fresh.name, comment_key(cid))):
        voting = asyncio.create_task(
            vote_helpful(here, cid, voter="mine", vote=Vote.HELPFUL, backoff=FAST)
        )
        async with asyncio.timeout(10):
            await met.wait()
        voting.cancel()
        with pytest.raises(asyncio.CancelledError):
            await voting
        tried = aws.transactions
    await _followed_up(here)
    assert aws.transactions == tried  # not tried again once its request gave up
    assert await read_vote(fresh, cid, "mine") is None
    assert (await get_comment(fresh, cid)) is not None
    assert (await get_comment(fresh, cid)).helpful == 0  # type: ignore[union-attr]
