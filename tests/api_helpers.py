"""An in-process API for tests: the real app over the session's DynamoDB Local."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

import httpx

from resolvers.auth import mint
from server.dev.local_engine import free_port
from server.http.app import create_app
from server.settings import Settings
from storage.base.types import DynamoClient

SECRET = "test-secret-for-the-suite-" + "0123456789abcdef" * 3


@dataclass
class Api:
    http: httpx.AsyncClient

    async def gql(
        self, query: str, variables: dict[str, Any] | None = None, token: str | None = None
    ) -> dict[str, Any]:
        headers = {"authorization": f"Bearer {token}"} if token else {}
        response = await self.http.post(
            "/graphql", json={"query": query, "variables": variables or {}}, headers=headers
        )
        assert response.status_code == 200, response.text
        body: dict[str, Any] = response.json()
        return body

    async def data(
        self, query: str, variables: dict[str, Any] | None = None, token: str | None = None
    ) -> dict[str, Any]:
        body = await self.gql(query, variables, token)
        assert "errors" not in body, body["errors"]
        data: dict[str, Any] = body["data"]
        return data

    async def error_code(
        self, query: str, variables: dict[str, Any] | None = None, token: str | None = None
    ) -> str:
        body = await self.gql(query, variables, token)
        assert body.get("errors"), body
        code: str = body["errors"][0]["extensions"]["code"]
        return code


def token(sub: str = "ann", *, name: str | None = None, moderator: bool = False) -> str:
    return mint(SECRET, sub, name=name, roles=["moderator"] if moderator else None)


# Settings that lift every per-author limit and rate (the tests of them pass their own).
NO_WRITE_LIMITS = {
    "comments_per_product": 0,
    "comments_per_hour": 0,
    "edits_per_hour": 0,
    "deletes_per_hour": 0,
    "replies_per_hour": 0,
    "reports_per_hour": 0,
    "votes_per_hour": 0,
    "moderations_per_hour": 0,
}


@asynccontextmanager
async def running_api(client: DynamoClient, table: str, **overrides: Any) -> AsyncIterator[Api]:
    """The app in process. Per-author write limits and rates are lifted unless given: most
    tests write many comments as one author on one product; the limit tests pass them
    explicitly. A production app's metrics listener takes a free port unless one is given,
    never the fixed default, which another test process (or a server) may hold. The author
    ids' key is pinned to the secret, as a deployment keeps the ids that secret gave."""
    settings = Settings(
        dynamodb_endpoint_url="http://unused.invalid",
        dynamodb_table=table,
        gc_freeze=False,
        **{
            "jwt_secret": SECRET,
            "author_id_key": SECRET,
            "metrics_port": free_port(),
            **NO_WRITE_LIMITS,
            **overrides,
        },
    )
    app = create_app(settings, client=client)
    async with (
        app.router.lifespan_context(app),
        httpx.AsyncClient(
            transport=httpx.ASGITransport(app=app), base_url="http://api.test"
        ) as http,
    ):
        yield Api(http)
