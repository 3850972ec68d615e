"""Part 1's baseline (benchmarks/writes/part1_design.py) is part 1's design: after creates, edits,
status changes and deletes, every filter combination lists exactly the comments the post
says, newest first, and each change writes one item per combination it touches."""

from __future__ import annotations

import random
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass, replace
from itertools import combinations

import pytest

from benchmarks.writes import part1
from benchmarks.writes.part1_design import (
    INDEX,
    PUBLISHED,
    Part1Comments,
    Review,
    StreamConsumer,
    combinations_of,
    consumer_writes,
    create_table,
    open_streams,
    rating_key,
    rating_sets,
)
from server.dev.local_engine import LocalEngine
from storage.base.types import DynamoClient, Item

LANGUAGES = ("en", "de", "fr")
RATINGS = (1, 2, 3, 4, 5)
# Every filter the post serves: any language or one, and any non-empty set of ratings.
SUBSETS = [s for n in range(1, 6) for s in combinations(RATINGS, n)]
STATUSES = (PUBLISHED, "PENDING", "REJECTED")


def _sk(product: str, language: str | None, ratings: tuple[int, ...]) -> str:
    spelled = "~" if len(ratings) == 5 else ".".join(map(str, ratings))
    return f"PRODUCT#{product}/{language or '~'}/{spelled}"


def listed_under(product: str, language: str, rating: int) -> set[str]:
    """Brute force: the keys of every filter a comment of this language and rating meets."""
    return {
        _sk(product, lang, subset)
        for lang in (None, language)
        for subset in SUBSETS
        if rating in subset
    }


def test_a_comment_is_under_each_combination_of_its_language_and_rating() -> None:
    assert rating_key([5, 1, 2]) == "1.2.5"
    assert rating_key(RATINGS) == "~"  # all five is "any": 32 items, as the post counts
    for rating in RATINGS:
        assert len(set(rating_sets(rating))) == 16
        for language in LANGUAGES:
            keys = combinations_of("p", language, rating)
            assert len(keys) == 32
            assert set(keys) == listed_under("p", language, rating)


def test_the_consumer_ignores_its_own_copies() -> None:
    review = Review("c1", "p", "en", 3, "t", "x", "u", "2026-01-01T00:00:00.000Z")
    made = consumer_writes(None, review.primary_item())
    assert len(made.puts) == 31
    assert not made.deletes
    assert consumer_writes(None, made.puts[0]) == consumer_writes(made.puts[0], None)
    assert not consumer_writes(None, made.puts[0]).puts


@dataclass(frozen=True, slots=True)
class Engine:
    client: DynamoClient
    table: str
    consumer: StreamConsumer

    def baseline(self) -> part1.Baseline:
        """A fresh product on the shared table."""
        return part1.Baseline(
            self.client, self.table, self.consumer, product=f"p-{uuid.uuid4().hex[:12]}"
        )


@pytest.fixture(scope="module")
async def part1_engine(engine: LocalEngine, client: DynamoClient) -> AsyncIterator[Engine]:
    name = f"part1_{uuid.uuid4().hex[:12]}"
    arn = await create_table(client, name)
    async with open_streams(engine.endpoint_url) as streams:
        yield Engine(client, name, StreamConsumer(streams, arn))


async def _items(b: part1.Baseline) -> dict[tuple[str, str], Item]:
    found: dict[tuple[str, str], Item] = {}
    start: dict[str, Item] = {}
    while True:
        page = await b.client.scan(TableName=b.table, ConsistentRead=True, **start)
        for item in page["Items"]:
            if item["sk"]["S"].startswith(f"PRODUCT#{b.product}/"):
                found[(item["pk"]["S"], item["sk"]["S"])] = item
        if "LastEvaluatedKey" not in page:
            return found
        start = {"ExclusiveStartKey": page["LastEvaluatedKey"]}


async def _listing(b: part1.Baseline, sk: str) -> list[tuple[str, ...]]:
    response = await b.client.query(
        TableName=b.table,
        IndexName=INDEX,
        KeyConditionExpression="#k = :k",
        ExpressionAttributeNames={"#k": "sk"},
        ExpressionAttributeValues={":k": {"S": sk}},
        ScanIndexForward=False,
    )
    assert "LastEvaluatedKey" not in response
    return [
        (i["pk"]["S"], i["language"]["S"], i["rating"]["N"], i["text"]["S"], i["cd"]["S"])
        for i in response["Items"]
    ]


async def _check(b: part1.Baseline, alive: dict[str, tuple[Review, str]]) -> None:
    published = [r for r, status in alive.values() if status == PUBLISHED]
    for language in (None, *LANGUAGES):
        for subset in SUBSETS:
            expected = [
                (f"COMMENT#{r.comment_id}", r.language, str(r.rating), r.text, r.cd)
                for r in sorted(published, key=lambda r: r.cd, reverse=True)
                if language in (None, r.language) and r.rating in subset
            ]
            assert await _listing(b, _sk(b.product, language, subset)) == expected
    # Nothing else: one item per combination of a published comment, one for any other.
    items = await _items(b)
    assert len(items) == sum(32 if status == PUBLISHED else 1 for _, status in alive.values())
    assert {pk for pk, _ in items} == {f"COMMENT#{i}" for i in alive}
    for (pk, _), item in items.items():
        review, _ = alive[pk.removeprefix("COMMENT#")]
        assert (item["title"]["S"], item["username"]["S"]) == (review.title, review.username)


async def test_every_combination_lists_what_the_design_says(part1_engine: Engine) -> None:
    b = part1_engine.baseline()
    c = Part1Comments(b.client, b.table)
    rng = random.Random(11)
    alive: dict[str, tuple[Review, str]] = {}
    kinds = ["create"] * 3 + ["text", "rating", "language", "status", "status", "delete"]
    for step in range(45):
        kind = rng.choice(kinds) if alive else "create"
        if kind == "create":
            review = b.review(rng.choice(RATINGS), rng.choice(LANGUAGES))
            status = rng.choice([PUBLISHED, PUBLISHED, "PENDING"])
            await c.create(review, status)
            alive[review.comment_id] = (review, status)
        else:
            comment_id = rng.choice(sorted(alive))
            review, status = alive[comment_id]
            if kind == "text":
                review = replace(review, text=f"edited at step {step}")
                await c.edit(review.product, comment_id, text=review.text)
            elif kind == "rating":
                review = replace(
                    review, rating=rng.choice([r for r in RATINGS if r != review.rating])
                )
                await c.edit(review.product, comment_id, rating=review.rating)
            elif kind == "language":
                language = rng.choice([x for x in LANGUAGES if x != review.language])
                review = replace(review, language=language)
                await c.edit(review.product, comment_id, language=language)
            elif kind == "status":
                status = rng.choice([s for s in STATUSES if s != status])
                await c.set_status(review.product, comment_id, status)
            else:
                await c.delete(review.product, comment_id)
                del alive[comment_id]
                continue
            alive[comment_id] = (review, status)
        await b.consumer.drain(b.client, b.table)
        if step in (20, 44):
            await _check(b, alive)


async def test_each_change_writes_one_item_per_combination_it_touches(
    part1_engine: Engine,
) -> None:
    b = part1_engine.baseline()
    en3, en5 = listed_under(b.product, "en", 3), listed_under(b.product, "en", 5)
    touched = {
        "create, POST, rating 3": len(en3),
        "create, POST, rating 5": len(en5),
        "create, PRE, rating 3": 1,  # the primary item, in no listing
        "delete": len(en3),
        "approve (PENDING)": len(en3),
        "reject (PUBLISHED)": len(en3),
        "reject (PENDING)": 1,
        "edit: text only": len(en3),
        "edit: rating 3 -> 4": len(en3 | listed_under(b.product, "en", 4)),
        "edit: language en -> de": len(en3 | listed_under(b.product, "de", 3)),
    }
    measured = {}
    for transition in part1.transitions():
        run = await transition.part1(b)
        figures = part1.part1_figures(await b.measure(run))
        assert transition.combinations == touched[transition.name]
        measured[transition.name] = figures["items"]
        # Every item is under 1 KB; a listed one also writes its entry in the GSI.
        listed = transition.combinations > 1
        assert figures["index_entries"] == (figures["items"] if listed else 0)
        assert figures["wcu"] == figures["items"] + figures["index_entries"]
        assert figures["items_client"] == 1
    assert measured == touched
