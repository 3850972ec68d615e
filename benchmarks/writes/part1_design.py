"""Part 1 of the series, as written: a copy of each comment per filter combination, by stream.

The design of ``../shared/reference/part1-duplication-with-streams.txt`` and its diagrams
(the table and index views of the original post), kept as the baseline of the write costs
(``benchmarks.writes.part1``):

- **Table** ``pk`` = ``COMMENT#<id>``, ``sk`` = ``PRODUCT#<product>/<language>/<ratings>``;
  attributes ``cd`` (the creation date, a sortable string), ``language``, ``rating``, and the
  comment itself: "not shown are the non-indexed attributes such as the comment text
  itself" (``title``, ``text``, ``username``, the names part 2 gives them).
- **One GSI** ``gsi``: partition key ``sk``, sort key ``cd``, projecting every attribute; each
  access pattern is one Query on it, newest first (AP4 and AP5 read the table by ``pk``).
- **The combinations.** ``<language>`` is ``~`` (any) or the comment's language; ``<ratings>``
  a set of ratings, ordered and ``.``-delimited (``1.2.5``), ``~`` for any. A comment is in
  every set of the power set of 1-5 that holds its rating (16) under both language keys: 32
  items, the number the post gives ("we write the comment to the table 32 times"). The full
  set is ``~`` only: spelling it ``1.2.3.4.5`` as well would make 34 items, not 32.
- **The primary item** is the one under ``PRODUCT#<product>/~/~``, the only one the client
  writes. The other 31, the *copies*, are written by the stream consumer (the post's Lambda),
  whole comments carrying ``auto`` so that the consumer takes no action on its own writes.

The consumer (``StreamConsumer``) reads the table's stream (NEW_AND_OLD_IMAGES) through the
Streams API, DescribeStream, GetShardIterator and GetRecords, as a Lambda trigger does, and
for each change of a primary item writes with BatchWriteItem (25 requests a call):

- created or updated: the copies of the new image; when the rating or language changed, the
  post says "previous duplicate items will be removed before the new duplicate set is
  added": here only the old copies whose keys the new set lacks are deleted and the others
  overwritten by the new set, which writes fewer items than deleting all 31 first (a change
  of rating 3 -> 4 or of language: 16 deletes rather than 31). Where the post leaves a
  choice, the baseline takes the one cheaper for part 1.
- deleted: the copies of the old image ("upon a delete modification, all duplicate items
  will be removed"). The client deletes the primary item only. AP5's other wording, the
  client querying ``pk`` and deleting every item in a batch, deletes the same 32 items
  (plus a Query); doing both would delete every copy twice, the second time an absent
  item, which AWS still bills at one unit.

The real stream is used, not a function applied beside the writes, so the measured writes
are those of a consumer that only sees what the stream carries (the images, in order); the
consumer's rule is also a pure function of one change (``consumer_writes``), which the tests
use as the specification it must follow.

Outside the post:

- **Statuses.** Part 1 has none. A comment outside PUBLISHED has no copies and its primary
  item no ``cd`` (it keeps the date in ``held_cd``, its status in ``status``), so it is in no
  listing (the GSI needs ``cd``): the same sparse rule as ours. Leaving PUBLISHED makes the
  consumer remove the 31 copies; entering it, write them.
- **Counters.** Part 1 keeps none (statistics come in part 4, from the stream): nothing here
  counts, so part 1 answers no total, histogram or leaderboard.
- Conditions, retries of a failed Lambda batch and the post's repair jobs are left out: none
  changes what a successful change writes. Shards are read in turn, not parents before
  children (a Lambda trigger's order), which matters only when one item's changes straddle
  a shard's rollover.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Iterable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from itertools import combinations
from typing import Any, Protocol

import aioboto3

from benchmarks.scale.capacity import GlobalIndex, Layout
from storage.base.types import DynamoClient, Item, Response

RATINGS = (1, 2, 3, 4, 5)
ANY = "~"
INDEX = "gsi"
AUTO = "auto"
HELD = "held_cd"
PUBLISHED = "PUBLISHED"
BATCH = 25  # BatchWriteItem's limit


class StreamsClient(Protocol):
    """The DynamoDB Streams calls the consumer makes (aiobotocore's client satisfies it)."""

    async def describe_stream(self, **kwargs: Any) -> Response: ...
    async def get_shard_iterator(self, **kwargs: Any) -> Response: ...
    async def get_records(self, **kwargs: Any) -> Response: ...


def rating_key(ratings: Iterable[int]) -> str:
    """A set of ratings as the post serialises it: ordered, ``.``-delimited; ``~`` for all."""
    chosen = sorted(set(ratings))
    return ANY if chosen == list(RATINGS) else ".".join(str(r) for r in chosen)


def rating_sets(rating: int) -> list[str]:
    """The keys of the 16 sets of ratings that hold ``rating``."""
    others = [r for r in RATINGS if r != rating]
    return [rating_key((rating, *more)) for n in range(5) for more in combinations(others, n)]


def sort_key(product: str, language: str, ratings: str) -> str:
    return f"PRODUCT#{product}/{language}/{ratings}"


def combinations_of(product: str, language: str, rating: int) -> list[str]:
    """Every ``sk`` a published comment is under: 2 language keys x 16 rating sets."""
    return [sort_key(product, lang, r) for lang in (ANY, language) for r in rating_sets(rating)]


def primary_key(product: str, comment_id: str) -> Item:
    return {"pk": {"S": f"COMMENT#{comment_id}"}, "sk": {"S": sort_key(product, ANY, ANY)}}


@dataclass(frozen=True, slots=True)
class Review:
    """A comment as part 1 stores it."""

    comment_id: str
    product: str
    language: str
    rating: int
    title: str
    text: str
    username: str
    cd: str

    def primary_item(self, status: str = PUBLISHED) -> Item:
        item: Item = {
            **primary_key(self.product, self.comment_id),
            "language": {"S": self.language},
            "rating": {"N": str(self.rating)},
            "title": {"S": self.title},
            "text": {"S": self.text},
            "username": {"S": self.username},
        }
        if status == PUBLISHED:
            item["cd"] = {"S": self.cd}
        else:
            item.update({HELD: {"S": self.cd}, "status": {"S": status}})
        return item


def _product(primary: Item) -> str:
    sk: str = primary["sk"]["S"]
    return sk.removeprefix("PRODUCT#").removesuffix(f"/{ANY}/{ANY}")


def copies(image: Item | None) -> dict[str, Item]:
    """The copies a primary item's image calls for, by ``sk``: none unless it is listed."""
    if image is None or AUTO in image or "cd" not in image:
        return {}
    product, language = _product(image), image["language"]["S"]
    keys = combinations_of(product, language, int(image["rating"]["N"]))
    return {
        sk: {**image, "sk": {"S": sk}, AUTO: {"BOOL": True}}
        for sk in keys
        if sk != image["sk"]["S"]
    }


@dataclass(frozen=True, slots=True)
class Writes:
    """What the consumer writes for one change: whole items to put, keys to delete."""

    puts: list[Item] = field(default_factory=list)
    deletes: list[Item] = field(default_factory=list)


def consumer_writes(old: Item | None, new: Item | None) -> Writes:
    """The consumer's rule for one change of an item: nothing for a change of a copy."""
    if any(image is not None and AUTO in image for image in (old, new)):
        return Writes()
    before, after = copies(old), copies(new)
    gone = [{"pk": c["pk"], "sk": c["sk"]} for sk, c in before.items() if sk not in after]
    return Writes(puts=list(after.values()), deletes=gone)


def _role(key: Item) -> str:
    return "primary item" if key["sk"]["S"].endswith(f"/{ANY}/{ANY}") else "copy"


LAYOUT = Layout("pk", "sk", (GlobalIndex(INDEX, "sk", "cd"),), _role)


def table_definition(name: str) -> dict[str, Any]:
    """The post's table and GSI, with a stream carrying both images of every change."""
    return {
        "TableName": name,
        "BillingMode": "PAY_PER_REQUEST",
        "AttributeDefinitions": [
            {"AttributeName": a, "AttributeType": "S"} for a in ("pk", "sk", "cd")
        ],
        "KeySchema": [
            {"AttributeName": "pk", "KeyType": "HASH"},
            {"AttributeName": "sk", "KeyType": "RANGE"},
        ],
        "GlobalSecondaryIndexes": [
            {
                "IndexName": INDEX,
                "KeySchema": [
                    {"AttributeName": "sk", "KeyType": "HASH"},
                    {"AttributeName": "cd", "KeyType": "RANGE"},
                ],
                "Projection": {"ProjectionType": "ALL"},
            }
        ],
        "StreamSpecification": {"StreamEnabled": True, "StreamViewType": "NEW_AND_OLD_IMAGES"},
    }


async def create_table(client: DynamoClient, name: str) -> str:
    """Create the baseline's table; its stream's ARN."""
    response = await client.create_table(**table_definition(name))
    arn: str = response["TableDescription"]["LatestStreamArn"]
    return arn


@asynccontextmanager
async def open_streams(endpoint_url: str, region: str = "us-east-1") -> AsyncIterator[Any]:
    """A DynamoDB Streams client for a local endpoint (placeholder credentials if none)."""
    credentials = {}
    if not os.environ.get("AWS_ACCESS_KEY_ID"):
        credentials = {"aws_access_key_id": "local", "aws_secret_access_key": "local"}
    session = aioboto3.Session()
    async with session.client(
        "dynamodbstreams", region_name=region, endpoint_url=endpoint_url, **credentials
    ) as streams:
        yield streams


async def write_batches(client: DynamoClient, table: str, writes: Writes) -> None:
    """Deletes and puts in BatchWriteItem calls of 25, unprocessed requests sent again."""
    requests: list[dict[str, Any]] = [{"DeleteRequest": {"Key": k}} for k in writes.deletes]
    requests += [{"PutRequest": {"Item": item}} for item in writes.puts]
    for start in range(0, len(requests), BATCH):
        pending: dict[str, Any] = {table: requests[start : start + BATCH]}
        while pending:
            response = await client.batch_write_item(RequestItems=pending)
            pending = response.get("UnprocessedItems") or {}


class StreamConsumer:
    """Part 1's Lambda: reads the table's stream and keeps every primary item's copies."""

    def __init__(self, streams: StreamsClient, stream_arn: str) -> None:
        self.streams = streams
        self.stream_arn = stream_arn
        self._iterators: dict[str, str | None] = {}
        self.get_records_calls = 0
        self.records = 0

    async def _discover(self) -> None:
        """Start every shard not yet read at its beginning (new shards hold new records)."""
        start: dict[str, str] = {}
        while True:
            described = await self.streams.describe_stream(StreamArn=self.stream_arn, **start)
            stream = described["StreamDescription"]
            for shard in stream["Shards"]:
                if shard["ShardId"] not in self._iterators:
                    response = await self.streams.get_shard_iterator(
                        StreamArn=self.stream_arn,
                        ShardId=shard["ShardId"],
                        ShardIteratorType="TRIM_HORIZON",
                    )
                    self._iterators[shard["ShardId"]] = response["ShardIterator"]
            if "LastEvaluatedShardId" not in stream:
                return
            start = {"ExclusiveStartShardId": stream["LastEvaluatedShardId"]}

    async def drain(self, client: DynamoClient, table: str) -> int:
        """Handle every record until the stream holds no more, its own writes' included;
        the number of records handled. Writes go through ``client``."""
        handled = 0
        while True:
            await self._discover()
            records: list[dict[str, Any]] = []
            for shard, iterator in list(self._iterators.items()):
                if iterator is None:
                    continue  # a closed shard, read to its end
                response = await self.streams.get_records(ShardIterator=iterator)
                self.get_records_calls += 1
                self._iterators[shard] = response.get("NextShardIterator")
                records += response["Records"]
            if not records:
                return handled
            for record in records:
                change = record["dynamodb"]
                writes = consumer_writes(change.get("OldImage"), change.get("NewImage"))
                await write_batches(client, table, writes)
            handled += len(records)
            self.records += len(records)


class Part1Comments:
    """The client's side of part 1: it writes and changes the primary item only."""

    def __init__(self, client: DynamoClient, table: str) -> None:
        self.client = client
        self.table = table

    async def create(self, review: Review, status: str = PUBLISHED) -> None:
        await self.client.put_item(TableName=self.table, Item=review.primary_item(status))

    async def delete(self, product: str, comment_id: str) -> None:
        await self.client.delete_item(TableName=self.table, Key=primary_key(product, comment_id))

    async def edit(
        self,
        product: str,
        comment_id: str,
        *,
        text: str | None = None,
        rating: int | None = None,
        language: str | None = None,
    ) -> None:
        """Change the primary item in place: its key holds neither rating nor language."""
        changes = {
            name: value
            for name, value in (
                ("text", None if text is None else {"S": text}),
                ("rating", None if rating is None else {"N": str(rating)}),
                ("language", None if language is None else {"S": language}),
            )
            if value is not None
        }
        await self.client.update_item(
            TableName=self.table,
            Key=primary_key(product, comment_id),
            UpdateExpression="SET " + ", ".join(f"#a{n} = :v{n}" for n in range(len(changes))),
            ExpressionAttributeNames={f"#a{n}": name for n, name in enumerate(changes)},
            ExpressionAttributeValues={f":v{n}": v for n, v in enumerate(changes.values())},
        )

    async def set_status(self, product: str, comment_id: str, status: str) -> None:
        """Read the primary item, then list it (``cd`` back) or unlist it (``cd`` held)."""
        key = primary_key(product, comment_id)
        item = (await self.client.get_item(TableName=self.table, Key=key, ConsistentRead=True))[
            "Item"
        ]
        listed = "cd" in item
        names = {"#cd": "cd", "#held": HELD, "#status": "status"}
        if status == PUBLISHED:
            if listed:
                return
            update, values = "SET #cd = #held REMOVE #held, #status", {}
        elif listed:
            update, values = "SET #held = #cd, #status = :s REMOVE #cd", {":s": {"S": status}}
        else:
            update, values = "SET #status = :s", {":s": {"S": status}}
        used = {k: v for k, v in names.items() if k in update}
        await self.client.update_item(
            TableName=self.table,
            Key=key,
            UpdateExpression=update,
            ExpressionAttributeNames=used,
            **({"ExpressionAttributeValues": values} if values else {}),
        )
