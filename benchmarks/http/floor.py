"""The API over the in-memory DynamoDB, loaded with the benchmark data: the HTTP floor.

    python -m benchmarks.http.floor --port 8000 [--seed 7] [--hot-size 50000] [--pages N]

``--pages N`` loads the product-page data set of N products instead (benchmarks.data.pages),
what benchmarks.http.freshness loads into DynamoDB Local for the servers it compares.

Settings (caches, orjson, gc.freeze, loop, http) come from the environment as for `serve`.
"""

from __future__ import annotations

import argparse
import asyncio

import uvicorn

from benchmarks import data
from server.http.app import create_app
from server.settings import Settings
from storage.engine.table import TableRef
from testing.fake_dynamo import FakeDynamo


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--hot-size", type=int, default=50_000)
    parser.add_argument("--pages", type=int, help="the product-page data set of N products")
    args = parser.parse_args()
    fake = FakeDynamo()
    table = TableRef(fake, "bench")
    comments = (
        data.comments(args.seed, args.hot_size)
        if args.pages is None
        else data.pages(args.seed, args.pages)
    )
    asyncio.run(data.load(table, comments, "loading the fake"))
    settings = Settings(
        dynamodb_endpoint_url="http://in-memory.invalid",
        dynamodb_table="bench",
        jwt_secret="floor-secret-" + "x" * 32,
        host="127.0.0.1",
        port=args.port,
    )
    uvicorn.run(
        create_app(settings, client=fake),
        host="127.0.0.1",
        port=args.port,
        log_level="warning",
        loop=settings.uvicorn_loop,
        http=settings.uvicorn_http,
        access_log=False,
    )


if __name__ == "__main__":
    main()
