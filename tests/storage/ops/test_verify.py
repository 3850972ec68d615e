"""verify-stats: exact tables pass, drift is found and repaired, racing writes are not lost;
only published comments are counted, and verified counters are checked and repaired too."""

from __future__ import annotations

import pytest

from storage.engine.table import TableRef
from storage.model import keys
from storage.model.comments import ListingFilter, ModerationMode, NewComment, PageRequest
from storage.ops.verify import ReadPace, Report, repair, verify
from storage.reads.reader import get_counts, list_comments, moderation_queue
from storage.writes import create_comment
from storage.writes.moderate import Decision, moderate_comment
from tests.helpers import FAST, assert_counters_exact, create_many, own_table


def _mine(report: Report, product_id: str) -> list[str]:
    return [d.describe() for d in report.drifts if d.product_id == product_id]


async def _corrupt(table: TableRef, product_id: str, language: str | None, **attrs: str) -> None:
    key = {"PK": {"S": keys.product_pk(product_id)}, "SK": {"S": keys.stats_sk(language)}}
    names = {f"#a{i}": name for i, name in enumerate(attrs)}
    values = {
        f":v{i}": {"N" if name.startswith(("count", "verified")) else "S": v}
        for i, (name, v) in enumerate(attrs.items())
    }
    sets = ", ".join(f"#a{i} = :v{i}" for i in range(len(attrs)))
    await table.client.update_item(
        TableName=table.name,
        Key=key,
        UpdateExpression=f"SET {sets}",
        ExpressionAttributeNames=names,
        ExpressionAttributeValues=values,
    )


async def test_drift_is_reported_and_repaired(table: TableRef, product_id: str) -> None:
    await create_many(
        table, [NewComment(product_id, ["en", "de"][n % 2], 1 + n % 5, "x", "a") for n in range(20)]
    )
    assert _mine(await verify(table), product_id) == []

    await _corrupt(table, product_id, None, count_2="7", GSISK=keys.leader_sort_key(99))
    await _corrupt(table, product_id, "de", count_total="1")
    report = await verify(table)
    drifts = _mine(report, product_id)
    assert len(drifts) == 2
    assert "counts" in drifts[0]
    assert "leaderboard" in drifts[0]
    assert "(de)" in drifts[1]

    fixed = await repair(table, report)
    assert fixed.skipped == 0
    assert fixed.repaired == len(report.drifts)
    assert _mine(await verify(table), product_id) == []
    await assert_counters_exact(table, product_id)


async def test_missing_stats_item_is_rebuilt(table: TableRef, product_id: str) -> None:
    await create_many(table, [NewComment(product_id, "fr", 5, "x", "a") for _ in range(3)])
    key = {"PK": {"S": keys.product_pk(product_id)}, "SK": {"S": keys.STATS_ALL}}
    await table.client.delete_item(TableName=table.name, Key=key)
    report = await verify(table)
    assert len(_mine(report, product_id)) == 1
    await repair(table, report)
    await assert_counters_exact(table, product_id)


async def test_repair_skips_items_that_changed_after_the_scan(
    table: TableRef, product_id: str
) -> None:
    await create_many(table, [NewComment(product_id, "en", 2, "x", "a")])
    await _corrupt(table, product_id, "en", count_2="5")
    report = await verify(table)
    # A write lands between the scan and the repair: the repair must not overwrite it.
    await create_many(table, [NewComment(product_id, "en", 2, "y", "a")])
    fixed = await repair(table, report)
    assert fixed.skipped >= 1
    again = await verify(table)
    assert len(_mine(again, product_id)) == 1
    await repair(table, again)
    await assert_counters_exact(table, product_id)


async def _lifecycle_product(table: TableRef, product_id: str) -> None:
    """Published: two verified 5-star comments in en, an unverified 4-star one in de.
    Not published: a verified 5-star one waiting (PRE) and a verified 3-star one rejected."""
    for language, rating, verified in (("en", 5, True), ("en", 5, True), ("de", 4, False)):
        new = NewComment(product_id, language, rating, "x", "a", verified=verified)
        await create_comment(table, new, backoff=FAST)
    pending = NewComment(product_id, "en", 5, "wait", "b", verified=True)
    await create_comment(table, pending, moderation=ModerationMode.PRE, backoff=FAST)
    rejected = NewComment(product_id, "de", 3, "no", "c", verified=True)
    made = await create_comment(table, rejected, backoff=FAST)
    await moderate_comment(table, made.comment.comment_id, Decision.REJECT, moderator="m")


async def test_verify_counts_published_and_verified_comments_only(table: TableRef) -> None:
    own = await own_table(table, "verify")
    await _lifecycle_product(own, "p1")
    exact = await verify(own)
    assert exact.exact, exact.describe()
    assert (exact.comments, exact.stats_items) == (5, 3)
    # The stats as they would be if the pending and the rejected comments were counted.
    await _corrupt(own, "p1", None, count_5="3", verified_5="3", verified_total="4", count_3="1")
    report = await verify(own)
    assert len(report.drifts) == 1
    (drift,) = report.drifts
    assert (drift.product_id, drift.language) == ("p1", None)
    # count_1..5, verified_1..5, count_total, verified_total, counted by hand above.
    assert drift.expected == (0, 0, 0, 1, 2, 0, 0, 0, 0, 2, 3, 2)
    assert drift.stored == (0, 0, 1, 1, 3, 0, 0, 0, 0, 3, 3, 4)
    assert drift.stored_leader == drift.expected_leader == (keys.LEADERS, keys.leader_sort_key(2))
    assert "counts [0, 0, 1, 1, 3, 3] != [0, 0, 0, 1, 2, 3]" in drift.describe()
    assert "verified [0, 0, 0, 0, 3, 4] != [0, 0, 0, 0, 2, 2]" in drift.describe()


async def test_repair_fixes_drifted_verified_counters(table: TableRef) -> None:
    own = await own_table(table, "verify")
    await _lifecycle_product(own, "p1")
    # Only verified counters drift: one too many in de, one missing altogether in en.
    await _corrupt(own, "p1", "de", verified_4="1", verified_total="1")
    key = {"PK": {"S": keys.product_pk("p1")}, "SK": {"S": keys.stats_sk("en")}}
    await own.client.update_item(
        TableName=own.name,
        Key=key,
        UpdateExpression="REMOVE verified_5",
    )
    report = await verify(own)
    described = report.describe()
    assert len(report.drifts) == 2, described
    assert [d.language for d in report.drifts] == ["de", "en"]
    assert all(line.count("verified") == 1 and "counts" not in line for line in described)
    assert (await get_counts(own, "p1", "de")).verified == (0, 0, 0, 1, 0)

    fixed = await repair(own, report)
    assert (fixed.repaired, fixed.skipped) == (2, 0)
    again = await verify(own)
    assert again.exact, again.describe()
    assert (await get_counts(own, "p1", "de")).verified == (0, 0, 0, 0, 0)
    assert (await get_counts(own, "p1", "en")).verified == (0, 0, 0, 0, 2)
    assert (await get_counts(own, "p1", None)).verified == (0, 0, 0, 0, 2)
    await assert_counters_exact(own, "p1")


async def _remove(table: TableRef, comment_id: str, *attrs: str) -> None:
    pk = keys.comment_pk(comment_id)
    await table.client.update_item(
        TableName=table.name,
        Key={"PK": {"S": pk}, "SK": {"S": pk}},
        UpdateExpression="REMOVE " + ", ".join(attrs),
    )


async def test_index_keys_are_checked_and_repaired(table: TableRef) -> None:
    # A comment without one of its listing keys is missing from that listing while the
    # counters count it; one in the queue without its queue key is missing from the queue.
    # Neither was found before: the check covered the helpful order's key only.
    own = await own_table(table, "verifykeys")
    listed = await create_comment(own, NewComment("p1", "en", 4, "x", "a"), backoff=FAST)
    held = await create_comment(
        own, NewComment("p1", "de", 2, "y", "b"), moderation=ModerationMode.PRE, backoff=FAST
    )
    await _remove(own, listed.comment.comment_id, "GSI2PK")  # byLang
    await _remove(own, held.comment.comment_id, "QSK")  # the moderation queue
    en = ListingFilter("p1", "en")
    assert (await list_comments(own, en, PageRequest(size=10))).comments == ()
    assert (await moderation_queue(own, PageRequest(size=10))).comments == ()

    report = await verify(own)
    described = report.describe()
    assert not report.exact
    assert len(report.vote_drifts) == 2, described
    assert any("index keys GSI2PK" in line for line in described), described
    assert any("index keys QSK" in line for line in described), described
    assert (await repair(own, report)).repaired == 2
    assert (await verify(own)).exact
    page = await list_comments(own, en, PageRequest(size=10))
    assert [c.comment_id for c in page.comments] == [listed.comment.comment_id]
    queue = await moderation_queue(own, PageRequest(size=10))
    assert [c.comment_id for c in queue.comments] == [held.comment.comment_id]


async def test_a_paced_scan_keeps_its_average_within_the_rate() -> None:
    # Read capacity as the responses report it, and where they report none, the pages'
    # bytes (one unit per 4 KB begun): never free. A fake clock moves only when slept.
    now = [0.0]
    slept: list[float] = []

    async def sleep(seconds: float) -> None:
        slept.append(seconds)
        now[0] += seconds

    pace = ReadPace(10, clock=lambda: now[0], sleep=sleep)
    await pace.consumed({"ConsumedCapacity": {"CapacityUnits": 25.0}, "Items": []})
    assert now[0] == 2.5
    big = {"PK": {"S": "x"}, "body": {"S": "y" * 9000}}  # three 4 KB blocks
    await pace.consumed({"Items": [big]})
    assert now[0] == 2.8
    now[0] += 5  # a slow page: nothing owed
    await pace.consumed({"ConsumedCapacity": {"CapacityUnits": 1.0}, "Items": []})
    assert slept == [2.5, pytest.approx(0.3)]
    assert pace.page_items == 20
    with pytest.raises(ValueError, match="above 0"):
        ReadPace(0)


async def test_verify_at_a_pace_reads_the_same(table: TableRef) -> None:
    own = await own_table(table, "paced")
    await create_many(own, [NewComment("p1", "en", 1 + n % 5, "x", "a") for n in range(30)])
    paced = await verify(own, pace=ReadPace(10_000))
    assert paced.exact
    whole = await verify(own)
    assert (paced.comments, paced.stats_items) == (whole.comments, whole.stats_items) == (30, 2)
