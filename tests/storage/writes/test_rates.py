"""Per-author rates of the writes other than a create (storage.writes.rates)."""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Callable
from datetime import UTC, datetime, timedelta

import pytest

from server.dev.local_engine import LocalEngine
from storage.base.errors import WriteRateLimited
from storage.engine.client import ClientSettings, open_client
from storage.engine.table import TableRef
from storage.model import keys
from storage.writes import NO_LIMITS, WriteLimits
from storage.writes.rates import (
    DEFAULT_RATES,
    NO_RATES,
    WINDOW,
    Family,
    WriteRates,
    retry_after,
    spend,
)

# 10:15 UTC: a quarter into a window.
T0 = datetime(2026, 11, 23, 10, 15, tzinfo=UTC)


def at(moment: datetime) -> Callable[[], datetime]:
    return lambda: moment


def test_every_family_has_a_rate_and_none_is_unlimited_by_omission() -> None:
    names = {f.name for f in dataclasses.fields(WriteRates)}
    assert names == {f.value for f in Family}
    for family in Family:
        assert DEFAULT_RATES.limit(family) is not None
        assert NO_RATES.limit(family) is None
    # Edits are the scarcest, moderators' actions the most plentiful.
    assert DEFAULT_RATES.edit == min(DEFAULT_RATES.limit(f) or 0 for f in Family)
    assert DEFAULT_RATES.moderate == max(DEFAULT_RATES.limit(f) or 0 for f in Family)
    assert WriteLimits().rates == DEFAULT_RATES
    assert NO_LIMITS.rates == NO_RATES


@pytest.mark.parametrize("value", [0, -1, True])
def test_a_rate_is_positive_or_none(value: int) -> None:
    with pytest.raises(ValueError, match="positive or None"):
        WriteRates(edit=value)


def test_an_unknown_family_is_refused() -> None:
    with pytest.raises(ValueError, match="create"):
        DEFAULT_RATES.limit("create")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="not a family"):
        keys.author_rate_sk("edit#x")


@pytest.mark.parametrize(
    ("limit", "previous", "made", "fraction"),
    [
        (10, 0, 10, 0.25),  # the window is full: wait for the next one
        (10, 10, 5, 0.25),  # the previous window weighs 7.5: wait until it weighs 4
        (10, 10, 0, 0.0),  # at a boundary after a full window
        (3, 0, 3, 0.999),
        (1, 1, 0, 0.5),
        (30, 29, 29, 0.9),
    ],
)
def test_retry_after_is_the_first_second_the_estimate_admits(
    limit: int, previous: int, made: int, fraction: float
) -> None:
    def admits(seconds: float) -> bool:
        moment = fraction + seconds / WINDOW
        if moment < 1:
            return previous * (1 - moment) + made + 1 <= limit
        return made * (2 - moment) + 1 <= limit  # the next window: made is its previous

    wait = retry_after(limit, previous, made, fraction)
    assert admits(wait)
    assert wait <= 2 or not admits(wait - 2)


async def _spend_all(
    table: TableRef, author: str, limit: int, moments: list[datetime]
) -> list[bool]:
    done = []
    for moment in moments:
        try:
            await spend(table, author, Family.EDIT, limit, clock=at(moment))
            done.append(True)
        except WriteRateLimited:
            done.append(False)
    return done


async def test_an_author_over_the_rate_is_refused_and_others_are_not(
    table: TableRef, product_id: str
) -> None:
    ann, bob = f"ann-{product_id}", f"bob-{product_id}"
    minutes = [T0 + timedelta(minutes=n) for n in range(4)]
    assert await _spend_all(table, ann, 3, minutes) == [True, True, True, False]
    with pytest.raises(WriteRateLimited) as refused:
        await spend(table, ann, Family.EDIT, 3, clock=at(T0 + timedelta(minutes=5)))
    assert "at most 3 edits per hour" in str(refused.value)
    # The window is full, and the next one admits a write once these three weigh two or
    # less: at 11:20, an hour from 10:20.
    assert 3600 <= refused.value.retry_after <= 3600 + 2
    # Another author, and another family of the same author, have rates of their own.
    assert await _spend_all(table, bob, 3, minutes[:3]) == [True, True, True]
    await spend(table, ann, Family.VOTE, 3, clock=at(T0))
    # Refusals are not counted: once the estimate has room, the author writes again.
    await spend(table, ann, Family.EDIT, 3, clock=at(T0 + timedelta(hours=1, minutes=45)))


async def test_the_previous_window_still_counts_after_a_boundary(
    table: TableRef, product_id: str
) -> None:
    author = f"ann-{product_id}"
    end = T0.replace(minute=59)
    assert await _spend_all(table, author, 4, [end] * 4) == [True] * 4
    # A fixed window would allow four more at 11:00; the sliding estimate allows none.
    nine = T0.replace(hour=11, minute=0)
    assert await _spend_all(table, author, 4, [nine]) == [False]
    # Halfway into the hour, the previous one weighs 2: two more.
    half = nine + timedelta(minutes=30)
    assert await _spend_all(table, author, 4, [half] * 3) == [True, True, False]


async def test_the_rate_holds_across_processes(
    engine: LocalEngine, table: TableRef, product_id: str
) -> None:
    # Two clients on one table stand for two processes: the count is in the table only.
    author = f"ann-{product_id}"
    async with open_client(ClientSettings(endpoint_url=engine.endpoint_url)) as other_client:
        other = TableRef(other_client, table.name)
        results = await asyncio.gather(
            *(spend(t, author, Family.EDIT, 5, clock=at(T0)) for t in [table, other] * 6),
            return_exceptions=True,
        )
    refused = [r for r in results if isinstance(r, WriteRateLimited)]
    assert (len(results) - len(refused), len(refused)) == (5, 7), results


async def test_a_lifted_rate_makes_no_call(table: TableRef) -> None:
    broken = TableRef(None, table.name)  # type: ignore[arg-type]
    await spend(broken, "ann", Family.EDIT, None)
