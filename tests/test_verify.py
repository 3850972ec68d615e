"""verify-stats: exact tables pass, drift is found and repaired, racing writes are not lost."""

from __future__ import annotations

from storage import keys
from storage.model import NewComment
from storage.table import TableRef
from storage.verify import Report, repair, verify
from tests.helpers import assert_counters_exact, create_many


def _mine(report: Report, product_id: str) -> list[str]:
    return [d.describe() for d in report.drifts if d.product_id == product_id]


async def _corrupt(table: TableRef, product_id: str, language: str | None, **attrs: str) -> None:
    key = {"PK": {"S": keys.product_pk(product_id)}, "SK": {"S": keys.stats_sk(language)}}
    names = {f"#a{i}": name for i, name in enumerate(attrs)}
    values = {
        f":v{i}": {"N" if name.startswith("count") else "S": v}
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
