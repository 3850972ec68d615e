"""Race phase: deletes, re-creates with reused idempotency keys and same-key bursts, by few
authors on few products, through two server processes sharing one engine; then proof that
nothing drifted.

Every operation targets one of the two processes at random, with many in flight at once,
so writes to the same comment, key and counters race across processes (each process has
its own locks; only the transactions' conditions keep them exact). At the end:

- ``verify-stats`` (a strongly consistent scan and recount): no drift in any counter,
  histogram, leaderboard entry or author slot;
- every listing of every product (all, per language, per rating set) is walked to its end
  through the API with cursors, and its length equals the counters' ``totalCount``;
- an acknowledged delete is never undone and a key never made two comments.

    python -m reliability.race --operations 2000    # the long form (scripts/reliability)
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import httpx

from resolvers.auth import mint
from server.dev.local_engine import LocalEngine
from server.dev.progress import progress_bar
from storage.engine.client import ClientSettings, open_client
from storage.engine.table import TableRef
from storage.ops.create import create_table
from storage.ops.verify import verify
from testing.live_server import LiveServer, live_server
from testing.responses import refusal

CREATE = """mutation($input: CreateCommentInput!) {
  createComment(input: $input) {
    created comment { commentId rating language } userErrors { code } } }"""
DELETE = """mutation($id: ID!) {
  deleteComment(input: {id: $id}) { deletedId userErrors { code } } }"""

WALK = """query($pid: ID!, $lang: String, $ratings: [Int!], $after: String) {
  product(productId: $pid) {
    comments(language: $lang, ratings: $ratings, first: 50, after: $after) {
      totalCount nodes { commentId } pageInfo { hasNextPage endCursor }
    }
  }
}"""
LANGUAGES = ("en", "de", "fr")
FILTERS: tuple[tuple[str | None, list[int] | None], ...] = (
    (None, None),
    ("en", None),
    ("de", None),
    (None, [5]),
    (None, [1, 2]),
    (None, [2, 4, 5]),
    ("fr", [4, 5]),
)


@dataclass
class Tally:
    operations: int = 0
    outcomes: Counter[str] = field(default_factory=Counter)
    # (author, key) -> comment ids the API returned for it: must stay one.
    bindings: dict[tuple[str, str], set[str]] = field(default_factory=dict)
    deleted: set[str] = field(default_factory=set)
    created: set[str] = field(default_factory=set)
    problems: list[str] = field(default_factory=list)


class Race:
    def __init__(
        self, servers: list[LiveServer], secret: str, seed: int, products: int, authors: int
    ) -> None:
        self.servers = servers
        self.rng = random.Random(seed)
        self.products = [f"race-{seed}-{n}" for n in range(products)]
        self.authors = [f"racer-{n}" for n in range(authors)]
        self.tokens = {a: mint(secret, a) for a in self.authors}
        self.moderator = mint(secret, "race-moderator", roles=["moderator"])
        self.tally = Tally()
        self.known: list[str] = []

    async def call(
        self, http: httpx.AsyncClient, query: str, variables: dict[str, Any], token: str
    ) -> dict[str, Any]:
        server = self.rng.choice(self.servers)
        response = await http.post(
            server.graphql_url,
            json={"query": query, "variables": variables},
            headers={"authorization": f"Bearer {token}"},
        )
        body: dict[str, Any] = response.json()
        return body

    async def operation(self, http: httpx.AsyncClient) -> None:
        roll = self.rng.random()
        if roll < 0.35 and self.known:
            await self.delete(http, self.rng.choice(self.known))
        elif roll < 0.5:
            # A same-key burst: one request sent several times at once.
            request = self.request()
            await asyncio.gather(*(self.create(http, *request) for _ in range(3)))
        else:
            await self.create(http, *self.request())

    def request(self) -> tuple[str, str, dict[str, Any]]:
        author = self.rng.choice(self.authors)
        # Enough keys that re-creates and replays interleave with fresh comments; few enough
        # that every key is reused many times, often for another request.
        key = f"key-{self.rng.randrange(40)}" if self.rng.random() < 0.7 else None
        fields = {
            "productId": self.rng.choice(self.products),
            "rating": self.rng.choice([1, 2, 4, 5, 5]),
            "language": self.rng.choice(LANGUAGES),
            "body": "racing",
        }
        if key is not None:
            fields["idempotencyKey"] = key
        return author, key or "", fields

    async def create(
        self, http: httpx.AsyncClient, author: str, key: str, fields: dict[str, Any]
    ) -> None:
        self.tally.operations += 1
        body = await self.call(http, CREATE, {"input": fields}, self.tokens[author])
        code = refusal(body, "createComment")
        if code is not None:
            self.tally.outcomes[f"create {code}"] += 1
            return
        payload = body["data"]["createComment"]
        cid = payload["comment"]["commentId"]
        self.tally.outcomes["create created" if payload["created"] else "create replayed"] += 1
        if key:
            self.tally.bindings.setdefault((author, key), set()).add(cid)
        if payload["created"]:
            self.tally.created.add(cid)
            self.known.append(cid)

    async def delete(self, http: httpx.AsyncClient, cid: str) -> None:
        self.tally.operations += 1
        body = await self.call(http, DELETE, {"id": cid}, self.moderator)
        code = refusal(body, "deleteComment")
        if code is not None:
            self.tally.outcomes[f"delete {code}"] += 1
            return
        self.tally.outcomes["delete done"] += 1
        if cid in self.tally.deleted:
            self.tally.problems.append(f"comment {cid} was deleted twice")
        self.tally.deleted.add(cid)

    async def walk(self, http: httpx.AsyncClient) -> list[str]:
        """Every listing of every product to its end; its length must be its totalCount."""
        problems = []
        for pid in self.products:
            for lang, ratings in FILTERS:
                seen: list[str] = []
                after = None
                total = None
                while True:
                    variables = {"pid": pid, "lang": lang, "ratings": ratings, "after": after}
                    body = await self.call(http, WALK, variables, self.moderator)
                    page = body["data"]["product"]["comments"]
                    total = page["totalCount"]
                    seen += [n["commentId"] for n in page["nodes"]]
                    if not page["pageInfo"]["hasNextPage"]:
                        break
                    after = page["pageInfo"]["endCursor"]
                if len(seen) != total or len(set(seen)) != len(seen):
                    problems.append(f"{pid} {lang} {ratings}: walked {len(seen)}, total {total}")
                resurrected = set(seen) & self.tally.deleted
                if resurrected:
                    problems.append(f"{pid}: deleted comments listed again: {resurrected}")
        return problems


async def run_race(
    servers: list[LiveServer],
    endpoint_url: str,
    table: str,
    secret: str,
    *,
    operations: int,
    concurrency: int = 16,
    seed: int = 7,
    products: int = 2,
    authors: int = 3,
) -> dict[str, Any]:
    race = Race(servers, secret, seed, products, authors)
    started = time.monotonic()
    async with httpx.AsyncClient(timeout=30) as http:
        gate = asyncio.Semaphore(concurrency)

        async def one() -> None:
            async with gate:
                await race.operation(http)

        batch = 200
        show = progress_bar(operations, "race: operations")
        while race.tally.operations < operations:
            await asyncio.gather(*(one() for _ in range(batch)))
            show(race.tally.operations)
        walk_problems = await race.walk(http)
    async with open_client(ClientSettings(endpoint_url=endpoint_url)) as client:
        report = await verify(TableRef(client, table))
    problems = list(race.tally.problems) + walk_problems + report.describe()
    for binding, ids in race.tally.bindings.items():
        if len(ids) > 1:
            problems.append(f"key {binding} made {len(ids)} comments")
    unexpected = [o for o in race.tally.outcomes if "INTERNAL" in o or "UNAVAILABLE" in o]
    problems += [f"unexpected outcome {o}" for o in unexpected]
    return {
        "operations": race.tally.operations,
        "seconds": round(time.monotonic() - started, 1),
        "outcomes": dict(sorted(race.tally.outcomes.items())),
        "commentsCreated": len(race.tally.created),
        "commentsDeleted": len(race.tally.deleted),
        "counterDrifts": len(report.describe()),
        "listingsWalked": len(race.products) * len(FILTERS),
        "problems": problems,
    }


async def _create_table(endpoint_url: str, table: str) -> None:
    async with open_client(ClientSettings(endpoint_url=endpoint_url)) as client:
        await create_table(client, table)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--operations", type=int, default=2000)
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args(argv)
    secret = "race-" + "0123456789abcdef" * 3
    table = "race"
    print("starting DynamoDB Local and two server processes ...", file=sys.stderr)
    with LocalEngine() as engine:
        asyncio.run(_create_table(engine.endpoint_url, table))
        with (
            live_server(engine.endpoint_url, table, secret) as first,
            live_server(engine.endpoint_url, table, secret) as second,
        ):
            summary = asyncio.run(
                run_race(
                    [first, second],
                    engine.endpoint_url,
                    table,
                    secret,
                    operations=args.operations,
                    concurrency=args.concurrency,
                    seed=args.seed,
                )
            )
    print(json.dumps(summary, indent=2))
    return 1 if summary["problems"] else 0


if __name__ == "__main__":
    sys.exit(main())
