"""Votes and facet entries: an entry is a copy of its comment that shows the helpful counts
too, and a vote (an ADD on the comment alone) brings them up in its follow-up; a copy a
later transition wrote is never set back; verify finds counts left behind and repairs them."""

from __future__ import annotations

from storage.engine.table import TableRef
from storage.model.comments import ListingFilter, NewComment, PageRequest, Vote
from storage.model.facets import FacetValue, Scope
from storage.model.items import ENTRY_VERSION_ATTR, HELPFUL_ATTR, entry_key
from storage.ops.verify import repair, verify
from storage.reads.facet_reader import read_facet_listing
from storage.writes import create_comment
from storage.writes.ballots import bring_entries_up
from storage.writes.edit import Edit, edit_comment
from storage.writes.votes import vote_helpful
from tests.helpers import FAST, own_product_id, own_table

BATTERY = FacetValue.topic("battery")
FIT = FacetValue.attribute("fit", "small")


async def _shown(table: TableRef, pid: str, value: FacetValue) -> dict[str, tuple[int, int]]:
    listing = ListingFilter(pid, facets=frozenset({value}))
    _, page = await read_facet_listing(table, listing, PageRequest(20))
    return {c.comment_id: (c.helpful, c.not_helpful) for c in page.comments}


async def test_a_vote_brings_every_entry_of_the_comment_up(table: TableRef) -> None:
    # A table of its own: verify reads the whole table, which other files' tests share.
    table = await own_table(table, "facetvotes")
    pid = own_product_id()
    new = NewComment(pid, "en", 4, "battery lasts", "writer", facets=frozenset({BATTERY, FIT}))
    made = (await create_comment(table, new, backoff=FAST)).comment
    for n in range(3):
        await vote_helpful(table, made.comment_id, voter=f"fan{n}", vote=Vote.HELPFUL)
    await vote_helpful(table, made.comment_id, voter="critic", vote=Vote.NOT_HELPFUL)
    for value in (BATTERY, FIT):
        assert (await _shown(table, pid, value))[made.comment_id] == (3, 1)
    # Withdrawn: the counts go down as well.
    await vote_helpful(table, made.comment_id, voter="fan0", vote=None)
    assert (await _shown(table, pid, BATTERY))[made.comment_id] == (2, 1)
    assert (await verify(table)).exact


async def test_a_follow_up_from_an_older_read_never_sets_a_newer_copy_back(
    table: TableRef,
) -> None:
    pid = own_product_id()
    new = NewComment(pid, "en", 4, "battery lasts", "writer", facets=frozenset({BATTERY}))
    made = (await create_comment(table, new, backoff=FAST)).comment
    await vote_helpful(table, made.comment_id, voter="fan", vote=Vote.HELPFUL)
    key = {"PK": {"S": f"COMMENT#{made.comment_id}"}, "SK": {"S": f"COMMENT#{made.comment_id}"}}
    old = (await table.client.get_item(TableName=table.name, Key=key, ConsistentRead=True))["Item"]
    await vote_helpful(table, made.comment_id, voter="fan2", vote=Vote.HELPFUL)
    edited = Edit(rating=5)  # not the text: that would re-tag the topics
    await edit_comment(table, made.comment_id, edited, author_id="writer", backoff=FAST)
    # A follow-up that read the comment before the second vote and the edit comes late.
    assert await bring_entries_up(table, old, FAST) == 0
    assert (await _shown(table, pid, BATTERY))[made.comment_id] == (2, 0)


async def test_verify_finds_entry_counts_left_behind_and_repairs_them(table: TableRef) -> None:
    table = await own_table(table, "facetrepair")
    pid = own_product_id()
    new = NewComment(pid, "de", 5, "Akku hält", "writer", facets=frozenset({BATTERY}))
    made = (await create_comment(table, new, backoff=FAST)).comment
    await vote_helpful(table, made.comment_id, voter="fan", vote=Vote.HELPFUL)
    # A process that stopped between its commit and its follow-up: the entry shows 0.
    entry = entry_key(made.comment_id, Scope.product(pid), BATTERY)
    await table.client.update_item(
        TableName=table.name,
        Key=entry,
        UpdateExpression="SET #h = :z, #v = :one",
        ExpressionAttributeNames={"#h": HELPFUL_ATTR, "#v": ENTRY_VERSION_ATTR},
        ExpressionAttributeValues={":z": {"N": "0"}, ":one": {"N": "1"}},
    )
    assert (await _shown(table, pid, BATTERY))[made.comment_id] == (0, 0)
    report = await verify(table)
    assert not report.exact
    assert any(made.comment_id in d.key[0] for d in report.entry_drifts)
    await repair(table, report)
    assert (await _shown(table, pid, BATTERY))[made.comment_id] == (1, 0)
    assert (await verify(table)).exact


async def test_a_count_of_zero_set_by_a_follow_up_is_no_drift(table: TableRef) -> None:
    # A follow-up sets both counts, zero included, where a transition's copy leaves a zero
    # out: verify compares the numbers, not how they are written.
    own = await own_table(table, "zerovotes")
    new = NewComment("p1", "en", 4, "battery lasts", "writer", facets=frozenset({BATTERY}))
    made = (await create_comment(own, new, backoff=FAST)).comment
    await vote_helpful(own, made.comment_id, voter="critic", vote=Vote.NOT_HELPFUL)
    report = await verify(own)
    assert report.exact, report.describe()
    await vote_helpful(own, made.comment_id, voter="critic", vote=None)
    report = await verify(own)
    assert report.exact, report.describe()
    assert (await _shown(own, "p1", BATTERY))[made.comment_id] == (0, 0)
