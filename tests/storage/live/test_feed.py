"""The feed against a model: a subscriber that applies its events to what it was shown when
it subscribed holds exactly its listing afterwards, whatever the changes and batches; and
the feed's bounds (a slow subscriber, lost changes, the cap, unsubscribing)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import dataclass, replace
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from storage.base.types import Item, Response
from storage.engine.table import TableRef
from storage.live.events import EventKind, Listing
from storage.live.feed import Ended, Feed, Subscription, TooManySubscribers
from storage.live.stream import Change, ChangeKind
from storage.model.comments import Comment, RatingCounts, Status
from storage.model.facet_counts import GROUP_LISTING
from storage.model.facets import FacetValue, Scope
from storage.model.items import comment_key, comment_to_item
from storage.model.stats import stats_key
from storage.reads.facet_reader import INCENTIVIZED, counter_key
from storage.reads.snapshots import PlanMemory
from testing.fake_dynamo import FakeDynamo

IDS = [f"{n:032x}" for n in range(1, 7)]
LISTINGS = [
    Listing("p"),
    Listing("p", language="en"),
    Listing("p", language="de", ratings=frozenset({5})),
    Listing("p", ratings=frozenset({1, 2})),
    Listing("q"),
]

# A comment's next state: gone, or its status, rating, language and text.
states = st.one_of(
    st.none(),
    st.tuples(
        st.sampled_from(list(Status)),
        st.integers(1, 5),
        st.sampled_from(["en", "de"]),
        st.sampled_from(["good", "bad"]),
        st.sampled_from(["p", "q"]),
    ),
)
# Steps: (comment, its next state, which subscriber joins before it, batch break after it).
steps = st.lists(
    st.tuples(
        st.sampled_from(IDS),
        states,
        st.sampled_from([None, *range(len(LISTINGS))]),
        st.booleans(),
    ),
    max_size=40,
)


SMALL = FacetValue.attribute("fit", "small")
BATTERY = FacetValue.topic("battery")
# Facet and group listings: a comment's answers, topics and incentivized mark decide
# whether a product's facet listing shows it, the group it counts in a group's.
FACET_LISTINGS = [
    Listing("p", facets=frozenset({SMALL})),
    Listing("p", facets=frozenset({SMALL, BATTERY}), exclude_incentivized=True),
    Listing("p", exclude_incentivized=True, language="en"),
    Listing("g", of_group=True),
    Listing("g", of_group=True, facets=frozenset({BATTERY}), language="en"),
    Listing("g", of_group=True, exclude_incentivized=True, ratings=frozenset({4, 5})),
    Listing("h", of_group=True),
]
# A comment's next state: gone, or its status, rating, language, facets, incentivized mark
# and the group it is in (stored only while published, as writes store it).
facet_states = st.one_of(
    st.none(),
    st.tuples(
        st.sampled_from(list(Status)),
        st.integers(3, 5),
        st.sampled_from(["en", "de"]),
        st.sampled_from([frozenset(), frozenset({SMALL}), frozenset({SMALL, BATTERY})]),
        st.booleans(),
        st.sampled_from([None, "g", "h"]),
    ),
)
facet_steps = st.lists(
    st.tuples(
        st.sampled_from(IDS),
        facet_states,
        st.sampled_from([None, *range(len(FACET_LISTINGS))]),
        st.booleans(),
    ),
    max_size=40,
)
FacetState = tuple[Status, int, str, frozenset[FacetValue], bool, str | None]


def _comment(comment_id: str, state: tuple[Status, int, str, str, str]) -> Comment:
    status, rating, language, body, product = state
    return Comment(
        comment_id=comment_id,
        product_id=product,
        language=language,
        rating=rating,
        title=None,
        body=body,
        author_id="u",
        created_at="2024-01-01T00:00:00.000Z",
        status=status,
    )


def _image(comment: Comment | None) -> Item | None:
    return None if comment is None else comment_to_item(comment)


@dataclass
class _Watcher:
    """A subscriber and what it shows: what it was shown at start, moved by its events."""

    subscription: Subscription
    shown: dict[str, Comment]

    def apply(self) -> None:
        while self.subscription._queue:
            delivery = self.subscription._queue.popleft()
            change = delivery.change
            cid = change.comment_id
            if delivery.kind is EventKind.PUBLISHED:
                assert cid not in self.shown, "published twice"
                assert change.after is not None
                self.shown[cid] = change.after
            elif delivery.kind is EventKind.EDITED:
                assert cid in self.shown, "an edit of a comment it does not show"
                assert change.after is not None
                assert change.after != self.shown[cid], "an edit that changed nothing"
                self.shown[cid] = change.after
            else:
                assert cid in self.shown, "removed what it does not show"
                del self.shown[cid]


def _listed(listing: Listing, now: dict[str, Comment]) -> dict[str, Comment]:
    return {cid: c for cid, c in now.items() if listing.shows(c)}


@settings(max_examples=200, deadline=None)
@given(steps)
def test_a_subscriber_replaying_its_events_holds_its_listing(
    script: list[tuple[str, tuple[Status, int, str, str, str] | None, int | None, bool]],
) -> None:
    async def run() -> None:
        feed = Feed(TableRef(FakeDynamo(), "feed"), queue_size=1000)
        now: dict[str, Comment] = {}
        watchers: list[tuple[Listing, _Watcher]] = []
        batch: list[Change] = []
        for n, (cid, state, joins, breaks) in enumerate(script):
            if joins is not None:
                # What it is shown when it subscribes is the listing as it then is, the
                # changes not yet handed out included (they count in what it was shown
                # only once delivered: deliver what is pending first, as the stream would
                # have before its first page was read).
                await feed.deliver(batch)
                batch = []
                for _, w in watchers:
                    w.apply()
                listing = LISTINGS[joins]
                watcher = _Watcher(feed.subscribe(listing), _listed(listing, now))
                watchers.append((listing, watcher))
            before = now.get(cid)
            if state is None:
                now.pop(cid, None)
                after = None
            else:
                after = _comment(cid, state)
                if before is not None and before.product_id != after.product_id:
                    after = replace(after, product_id=before.product_id)
                now[cid] = after
            if before is None and after is None:
                continue
            kind: ChangeKind = (
                "INSERT" if before is None else "REMOVE" if after is None else "MODIFY"
            )
            batch.append(
                Change(kind, comment_key(cid), _image(before), _image(after), f"{n:08d}", "s")
            )
            if breaks:
                await feed.deliver(batch)
                batch = []
        await feed.deliver(batch)
        for listing, watcher in watchers:
            watcher.apply()
            assert watcher.shown == _listed(listing, now)

    asyncio.run(run())


def _faceted(comment_id: str, state: FacetState) -> Comment:
    status, rating, language, facets, incentivized, group = state
    base = _comment(comment_id, (status, rating, language, "x", "p"))
    published = status is Status.PUBLISHED
    return replace(
        base, facets=facets, incentivized=incentivized, group_id=group if published else None
    )


@settings(max_examples=200, deadline=None)
@given(facet_steps)
def test_a_facet_or_group_subscriber_replaying_its_events_holds_its_listing(
    script: list[tuple[str, FacetState | None, int | None, bool]],
) -> None:
    """Edits that add or drop a facet value, the incentivized mark, and group moves (a
    published comment changing the group it counts in) enter and leave each listing."""

    async def run() -> None:
        feed = Feed(TableRef(FakeDynamo(), "feed"), queue_size=1000)
        now: dict[str, Comment] = {}
        watchers: list[tuple[Listing, _Watcher]] = []
        batch: list[Change] = []
        for n, (cid, state, joins, breaks) in enumerate(script):
            if joins is not None:
                await feed.deliver(batch)
                batch = []
                for _, w in watchers:
                    w.apply()
                listing = FACET_LISTINGS[joins]
                watchers.append((listing, _Watcher(feed.subscribe(listing), _listed(listing, now))))
            before = now.get(cid)
            after = None if state is None else _faceted(cid, state)
            if after is None:
                now.pop(cid, None)
            else:
                now[cid] = after
            if before is None and after is None:
                continue
            kind: ChangeKind = (
                "INSERT" if before is None else "REMOVE" if after is None else "MODIFY"
            )
            batch.append(
                Change(kind, comment_key(cid), _image(before), _image(after), f"{n:08d}", "s")
            )
            if breaks:
                await feed.deliver(batch)
                batch = []
        await feed.deliver(batch)
        for listing, watcher in watchers:
            watcher.apply()
            assert watcher.shown == _listed(listing, now)

    asyncio.run(run())


class _Counting(FakeDynamo):
    """The fake, counting the calls made to it."""

    def __init__(self) -> None:
        super().__init__()
        self.calls: list[str] = []

    async def _call(self, operation: str, kwargs: dict[str, Any]) -> Response:
        self.calls.append(operation)
        return await super()._call(operation, kwargs)


async def _put(table: TableRef, *items: Item) -> None:
    await table.client.batch_write_item(
        RequestItems={table.name: [{"PutRequest": {"Item": item}} for item in items]}
    )


async def test_events_carry_the_counters_read_after_the_batch() -> None:
    table = TableRef(FakeDynamo(), "feed")
    await _put(
        table,
        {**stats_key("p", None), "count_4": {"N": "3"}, "count_total": {"N": "3"}},
        {**stats_key("p", "en"), "count_4": {"N": "2"}, "count_total": {"N": "2"}},
    )
    feed = Feed(table)
    everything = feed.subscribe(Listing("p"))
    english = feed.subscribe(Listing("p", language="en"))
    made = _comment(IDS[0], (Status.PUBLISHED, 4, "en", "good", "p"))
    await feed.deliver(
        [Change("INSERT", comment_key(made.comment_id), None, _image(made), "1", "s")]
    )
    first = await anext(everything)
    assert first.counts == RatingCounts("p", None, (0, 0, 0, 3, 0))
    assert first.language_counts is None
    second = await anext(english)
    assert second.language_counts == RatingCounts("p", "en", (0, 0, 0, 2, 0))
    # Reading them refreshed the process's snapshot.
    assert table.memory(PlanMemory).counts("p", None) == first.counts


def _counter(scope: Scope, value: FacetValue, **counts: int) -> Item:
    """A counter item with these counts (``c_all_4=3``: ``c#*#4`` = 3)."""
    item = counter_key(scope, value)
    for name, n in counts.items():
        kind, lang, rating = name.split("_")
        item[f"{kind}#{'*' if lang == 'all' else lang}#{rating}"] = {"N": str(n)}
    return item


async def test_a_batch_reads_each_listings_counters_once_whatever_its_subscribers() -> None:
    fake = _Counting()
    table = TableRef(fake, "feed")
    product, group = Scope.product("p"), Scope.group("g")
    await _put(
        table,
        {**stats_key("p", None), "count_4": {"N": "5"}, "count_total": {"N": "5"}},
        _counter(product, SMALL, c_all_4=2, c_en_4=2),
        _counter(product, INCENTIVIZED, i_all_4=1),
        _counter(group, GROUP_LISTING, c_all_4=7, c_en_4=4, i_all_4=3),
    )
    feed = Feed(table)
    listings = {
        "small": Listing("p", facets=frozenset({SMALL})),
        "honest": Listing("p", exclude_incentivized=True),
        "two": Listing("p", facets=frozenset({SMALL, BATTERY})),
        "group": Listing("g", of_group=True, exclude_incentivized=True),
        "group en": Listing("g", of_group=True, language="en"),
    }
    made = replace(
        _comment(IDS[0], (Status.PUBLISHED, 4, "en", "x", "p")),
        facets=frozenset({SMALL, BATTERY}),
        group_id="g",
    )
    change = Change("INSERT", comment_key(made.comment_id), None, _image(made), "1", "s")
    calls: list[list[str]] = []
    for copies in (1, 40):
        subscribers = {
            name: [feed.subscribe(listing) for _ in range(copies)]
            for name, listing in listings.items()
        }
        fake.calls.clear()
        await feed.deliver([change])
        calls.append(sorted(fake.calls))
        got = {name: [await anext(s) for s in subs] for name, subs in subscribers.items()}
        for subs in subscribers.values():
            for subscription in subs:
                feed.unsubscribe(subscription)
        # Every subscriber of a listing is handed the same counts, exact as its listing's.
        assert {name: {d.total for d in ds} for name, ds in got.items()} == {
            "small": {2},
            "honest": {4},
            "two": {None},
            "group": {4},
            "group en": {4},
        }
        assert {d.counts for d in got["group"]} == {RatingCounts("g", None, (0, 0, 0, 7, 0))}
        assert {d.language_counts for d in got["group en"]} == {
            RatingCounts("g", "en", (0, 0, 0, 4, 0))
        }
    # The products' stats, the groups' listing counters (one BatchGetItem each), and one
    # read together per listing whose count needs facet counters: the same for 1 or 40
    # subscribers of each.
    assert (
        calls[0]
        == calls[1]
        == [
            "batch_get_item",
            "batch_get_item",
            "transact_get_items",
            "transact_get_items",
        ]
    )
    # A comment none of the facet listings shows reads only what the listings it enters
    # are counted from: the product's stats (its own listing), none of the facets'.
    small = feed.subscribe(listings["small"])
    everything = feed.subscribe(Listing("p"))
    other = replace(made, comment_id=IDS[1], facets=frozenset(), group_id=None)
    fake.calls.clear()
    await feed.deliver(
        [Change("INSERT", comment_key(other.comment_id), None, _image(other), "2", "s")]
    )
    assert fake.calls == ["batch_get_item"]
    assert (await anext(everything)).total == 5
    assert not small._queue
    # Nobody handed anything: nothing read.
    feed.unsubscribe(everything)
    fake.calls.clear()
    await feed.deliver(
        [Change("MODIFY", comment_key(other.comment_id), _image(other), _image(other), "3", "s")]
    )
    assert fake.calls == []


async def test_a_stats_change_refreshes_the_snapshot_without_a_read() -> None:
    fake = _Counting()
    table = TableRef(fake, "feed")
    table.memory(PlanMemory).remember_counts([RatingCounts("p", None, (0, 0, 0, 0, 6))])
    feed = Feed(table)
    kept = {**stats_key("p", None), "count_5": {"N": "7"}, "count_total": {"N": "7"}}
    other = {**stats_key("q", None), "count_1": {"N": "1"}, "count_total": {"N": "1"}}
    await feed.deliver(
        [
            Change("MODIFY", stats_key("p", None), None, kept, "1", "s"),
            Change("INSERT", stats_key("q", None), None, other, "2", "s"),
        ]
    )
    assert table.memory(PlanMemory).counts("p", None) == RatingCounts("p", None, (0, 0, 0, 0, 7))
    # A scope this process does not keep stays out (the whole table's changes would
    # otherwise push out the ones its pages use).
    assert table.memory(PlanMemory).counts("q", None) is None
    assert fake.calls == []


def _created(n: int, product: str = "p") -> Change:
    made = _comment(IDS[n % len(IDS)], (Status.PUBLISHED, 4, "en", f"c{n}", product))
    return Change("INSERT", comment_key(f"{n:032x}"), None, _image(made), str(n), "s")


async def test_a_batch_larger_than_the_queue_reaches_a_reading_subscriber() -> None:
    feed = Feed(TableRef(FakeDynamo(), "feed"), queue_size=3)
    reader = feed.subscribe(Listing("p"))
    await feed.deliver([_created(n) for n in range(6)])
    got = [await anext(reader) for _ in range(6)]
    assert [d.change.after.body for d in got if d.change.after] == [f"c{n}" for n in range(6)]
    # It took them all: the next batch finds it keeping up.
    await feed.deliver([_created(6)])
    assert (await anext(reader)).kind is EventKind.PUBLISHED


async def test_a_subscriber_that_does_not_read_is_ended_too_slow() -> None:
    feed = Feed(TableRef(FakeDynamo(), "feed"), queue_size=3)
    slow = feed.subscribe(Listing("p"))
    await feed.deliver([_created(n) for n in range(4)])
    # Took none of the four before the next batch: too slow.
    await feed.deliver([_created(4)])
    assert len(slow._queue) == 0  # what it held is let go
    with pytest.raises(Ended) as ended:
        await anext(slow)
    assert ended.value.code == "TOO_SLOW"


async def test_a_subscriber_reading_slower_than_events_come_is_ended_at_the_hard_bound() -> None:
    feed = Feed(TableRef(FakeDynamo(), "feed"), queue_size=2)
    lagging = feed.subscribe(Listing("p"))
    n = 0
    for _ in range(30):
        await feed.deliver([_created(n), _created(n + 1), _created(n + 2)])
        n += 3
        if lagging._ended is not None:
            break
        await anext(lagging)  # one event a batch, while three come
    with pytest.raises(Ended) as ended:
        await anext(lagging)
    assert ended.value.code == "TOO_SLOW"
    # Two more wait after each batch: at the 12th, 22 wait, over HARD_FACTOR x 2.
    assert n == 3 * 12


class _SubscribesWhileRead(FakeDynamo):
    """A fake whose counters' read lets a new subscriber in while it is in flight."""

    def __init__(self, feed: list[Feed]) -> None:
        super().__init__()
        self.feed = feed
        self.joined: list[Subscription] = []

    async def _call(self, operation: str, kwargs: dict[str, Any]) -> Response:
        if operation == "batch_get_item" and not self.joined:
            self.joined.append(self.feed[0].subscribe(Listing("p", language="en")))
        return await super()._call(operation, kwargs)


async def test_a_subscriber_arriving_while_a_batch_is_handed_out_does_not_break_the_feed() -> None:
    holder: list[Feed] = []
    fake = _SubscribesWhileRead(holder)
    feed = Feed(TableRef(fake, "feed"))
    holder.append(feed)
    watcher = feed.subscribe(Listing("p"))
    await feed.deliver([_created(0)])  # failed with KeyError before
    assert (await anext(watcher)).kind is EventKind.PUBLISHED
    # The newcomer gets the next batch's events, with its language's counters.
    (newcomer,) = fake.joined
    await feed.deliver([_created(1)])
    delivery = await anext(newcomer)
    assert delivery.language_counts == RatingCounts("p", "en")


async def test_lost_changes_end_every_subscriber_and_drop_the_snapshot() -> None:
    table = TableRef(FakeDynamo(), "feed")
    table.memory(PlanMemory).remember_counts([RatingCounts("p", None, (1, 0, 0, 0, 0))])
    feed = Feed(table)
    subscribers = [feed.subscribe(Listing("p")), feed.subscribe(Listing("q"))]
    waiting = asyncio.ensure_future(anext(subscribers[0]))
    await asyncio.sleep(0)
    feed.interrupt("EVENTS_LOST", "lost")
    with pytest.raises(Ended):
        await waiting
    for subscriber in subscribers:
        with pytest.raises(Ended) as ended:
            await anext(subscriber)
        assert ended.value.code == "EVENTS_LOST"
    assert table.memory(PlanMemory).counts("p", None) is None


def test_the_cap_counts_subscribers_and_unsubscribing_frees_a_place() -> None:
    feed = Feed(TableRef(FakeDynamo(), "feed"), max_subscribers=2)
    first = feed.subscribe(Listing("p"))
    feed.subscribe(Listing("p", language="en"))
    with pytest.raises(TooManySubscribers):
        feed.subscribe(Listing("q"))
    feed.unsubscribe(first)
    feed.unsubscribe(first)  # twice is once
    assert feed.subscribers == 1
    feed.subscribe(Listing("q"))
    assert feed.subscribers == 2


async def test_a_follower_that_fails_ends_subscriptions_and_starts_again() -> None:
    feed = Feed(TableRef(FakeDynamo(), "feed"))
    starts = 0
    resumed = asyncio.Event()

    async def batches() -> AsyncIterator[list[Change]]:
        nonlocal starts
        starts += 1
        yield []
        if starts == 1:
            raise ConnectionError("the stream's endpoint went away")
        resumed.set()
        await asyncio.Event().wait()  # follows on, quietly

    await asyncio.sleep(0)
    before = feed.subscribe(Listing("p"))
    following = asyncio.create_task(feed.follow(batches, retry_seconds=0))
    await asyncio.wait_for(resumed.wait(), 5)
    assert feed.following
    with pytest.raises(Ended) as ended:
        await anext(before)
    assert ended.value.code == "EVENTS_LOST"
    following.cancel()
    with pytest.raises(asyncio.CancelledError):
        await following
    assert not feed.following
