"""How durable are DynamoDB Local's acknowledged writes when the engine is stopped hard?

No server of ours is involved: writers put and delete items of a bare table through
PutItem/DeleteItem and through single-item TransactWriteItems, without retries, and record
every acknowledgement. The engine (with a data directory) is stopped by a signal while they
write, started again, and the table is compared with the acknowledgements.

What it found for DynamoDB Local 3.3.0 (see docs/reliability.md): plain
writes survived every stop; transactional writes acknowledged in the last few tens of
milliseconds before the stop were sometimes lost, after SIGKILL and even after SIGTERM. The
soak (``reliability.soak``) uses this to tell the engine's losses at a crash from ours.

    python -m reliability.engine_durability --rounds 20 --signal SIGKILL
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import signal
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from server.dev.local_engine import LocalEngine
from storage.base.types import DynamoClient
from storage.engine.client import ClientSettings, open_client
from storage.engine.table import TableRef
from storage.ops.verify import scan_pages

TABLE = "durability"


@dataclass
class Round:
    """One write burst ended by a stop: what was acknowledged, when, and by which call."""

    acked_puts: dict[str, float] = field(default_factory=dict)  # key -> acknowledged at
    acked_deletes: dict[str, float] = field(default_factory=dict)
    tried_deletes: set[str] = field(default_factory=set)  # a delete may land unacknowledged
    kind: dict[str, str] = field(default_factory=dict)  # key -> "plain" | "transaction"
    stopped_at: float = 0.0
    running: bool = True

    def lost(self, present: set[str]) -> list[dict[str, Any]]:
        """Acknowledged puts that are gone and acknowledged deletes that are back."""
        gone = {k for k in self.acked_puts if k not in self.tried_deletes} - present
        back = self.acked_deletes.keys() & present
        found = [("put", k, self.acked_puts[k]) for k in sorted(gone)]
        found += [("delete", k, self.acked_deletes[k]) for k in sorted(back)]
        return [
            {
                "write": f"{self.kind[k]} {write}",
                "key": k,
                "acknowledgedMsBeforeStop": round((self.stopped_at - at) * 1000, 1),
            }
            for write, k, at in found
        ]


async def _writer(client: DynamoClient, state: Round, name: str, rng: random.Random) -> None:
    mine: list[str] = []
    serial = 0
    while state.running:
        serial += 1
        transactional = serial % 2 == 0
        try:
            if mine and rng.random() < 0.4:
                key = mine.pop()
                state.tried_deletes.add(key)
                await _delete(client, key, transactional)
                state.acked_deletes[key] = time.monotonic()
            else:
                key = f"{name}-{serial}"
                await _put(client, key, transactional)
                state.acked_puts[key] = time.monotonic()
                mine.append(key)
            state.kind[key] = "transaction" if transactional else "plain"
        except Exception:  # the engine went away: this writer's burst is over
            return


async def _put(client: DynamoClient, key: str, transactional: bool) -> None:
    item = {"PK": {"S": key}}
    if transactional:
        put = {"TableName": TABLE, "Item": item, "ConditionExpression": "attribute_not_exists(PK)"}
        await client.transact_write_items(TransactItems=[{"Put": put}])
    else:
        await client.put_item(TableName=TABLE, Item=item)


async def _delete(client: DynamoClient, key: str, transactional: bool) -> None:
    target = {"PK": {"S": key}}
    if transactional:
        delete = {"TableName": TABLE, "Key": target, "ConditionExpression": "attribute_exists(PK)"}
        await client.transact_write_items(TransactItems=[{"Delete": delete}])
    else:
        await client.delete_item(TableName=TABLE, Key=target)


async def _keys(client: DynamoClient) -> set[str]:
    return {
        item["PK"]["S"]
        async for page in scan_pages(TableRef(client, TABLE))
        for item in page["Items"]
    }


async def probe(
    rounds: int, stop_signal: signal.Signals, writers: int, seed: int
) -> dict[str, Any]:
    rng = random.Random(seed)
    acknowledged: Counter[str] = Counter()
    lost: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as data:
        engine = await asyncio.to_thread(LocalEngine(data_dir=Path(data)).start)
        # One attempt per call: a retry would blur which request was acknowledged.
        settings = ClientSettings(endpoint_url=engine.endpoint_url, max_attempts=1)
        try:
            async with open_client(settings) as client:
                await client.create_table(
                    TableName=TABLE,
                    AttributeDefinitions=[{"AttributeName": "PK", "AttributeType": "S"}],
                    KeySchema=[{"AttributeName": "PK", "KeyType": "HASH"}],
                    BillingMode="PAY_PER_REQUEST",
                )
                for number in range(rounds):
                    state = Round()
                    tasks = [
                        asyncio.create_task(
                            _writer(client, state, f"r{number}w{w}", random.Random(rng.random()))
                        )
                        for w in range(writers)
                    ]
                    await asyncio.sleep(rng.uniform(1.0, 2.5))
                    state.stopped_at = time.monotonic()
                    await asyncio.to_thread(engine.kill, stop_signal)
                    state.running = False
                    await asyncio.gather(*tasks)
                    await asyncio.to_thread(engine.start)
                    found = state.lost(await _keys(client))
                    for key in state.acked_puts:
                        acknowledged[f"{state.kind[key]} put"] += 1
                    for key in state.acked_deletes:
                        acknowledged[f"{state.kind[key]} delete"] += 1
                    lost += found
                    print(
                        f"round {number + 1}/{rounds}: {len(state.acked_puts)} puts, "
                        f"{len(state.acked_deletes)} deletes acknowledged, {len(found)} lost",
                        file=sys.stderr,
                    )
        finally:
            await asyncio.to_thread(engine.stop)
    gaps = [entry["acknowledgedMsBeforeStop"] for entry in lost]
    return {
        "signal": stop_signal.name,
        "rounds": rounds,
        "acknowledged": dict(sorted(acknowledged.items())),
        "lostByKind": dict(sorted(Counter(entry["write"] for entry in lost).items())),
        "maxMsBeforeStop": max(gaps, default=None),
        "lost": lost,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--signal", default="SIGKILL", choices=["SIGKILL", "SIGTERM"])
    parser.add_argument("--writers", type=int, default=16)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args(argv)
    result = asyncio.run(probe(args.rounds, signal.Signals[args.signal], args.writers, args.seed))
    print(json.dumps(result, indent=2))
    # A finding about the engine, not a check of ours: it never fails the run.
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
