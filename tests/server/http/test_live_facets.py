"""Live updates of facet and group listings, through the real stack (two servers on one
table with its stream, a WebSocket client): a facet subscription sees what its listing
gains and loses, a group subscription what the group counts (a group move included),
both carry the listing's exact count, bad filters are refused, and subscribers sharing a
facet document share one resolution per event."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator, Iterator
from contextlib import AsyncExitStack
from typing import Any

import httpx
import pytest

from resolvers.auth import mint
from server.dev.local_engine import LocalEngine
from server.http.subscriptions import _watched
from storage.engine.client import ClientSettings, open_client
from storage.engine.table import TableRef
from storage.model.attributes import parse_definitions
from storage.model.facets import Scope
from storage.ops.create import create_table
from storage.ops.group_move import move_product
from storage.writes.facet_settings import save_definitions
from testing.live_server import LiveServer, live_server
from testing.scrape import parse_scrape, sample
from testing.subscriber import Subscriber, subscriber
from tests.api_helpers import SECRET

pytestmark = pytest.mark.engine

PID = "live-facets"
FIT = [
    {
        "key": "fit",
        "kind": "CHOICE",
        "defaultLanguage": "en",
        "label": {"en": "How does it fit?"},
        "values": [
            {"value": "small", "label": {"en": "Small"}},
            {"value": "large", "label": {"en": "Large"}},
        ],
    }
]
EVENTS = """subscription($pid: ID, $gid: ID, $f: CommentFacets, $o: CommentOrder! = NEWEST) {
  commentEvents(productId: $pid, groupId: $gid, facets: $f, orderBy: $o) {
    kind commentId totalCount
    comment { productId attributes { key value } }
    stats { total }
  }
}"""
CREATE = """mutation($input: CreateCommentInput!) {
  createComment(input: $input) { comment { commentId } userErrors { code message } } }"""
UPDATE = """mutation($input: UpdateCommentInput!) {
  updateComment(input: $input) { comment { commentId } userErrors { code message } } }"""
LISTED = """query($pid: ID!, $f: CommentFacets) { product(productId: $pid) {
  stats { total } comments(facets: $f, first: 0) { totalCount } } }"""
GROUP_LISTED = """query($gid: ID!) { productGroup(groupId: $gid) {
  stats { total } comments(first: 0) { totalCount } } }"""
SMALL = {"attributes": [{"key": "fit", "value": "small"}]}

AUTHOR = mint(SECRET, "ann", name="Ann")


@pytest.fixture(scope="module")
def setup(engine: LocalEngine) -> Iterator[tuple[str, dict[str, LiveServer]]]:
    """A table with its stream and the product's question; A: where clients subscribe, B:
    where writes go."""

    async def made() -> str:
        name = f"livefacets_{uuid.uuid4().hex[:8]}"
        async with open_client(ClientSettings(endpoint_url=engine.endpoint_url)) as client:
            await create_table(client, name)
            table = TableRef(client, name)
            await save_definitions(table, Scope.product(PID), parse_definitions(FIT), revision=0)
        return name

    name = asyncio.run(made())
    with (
        live_server(engine.endpoint_url, name, SECRET, log=None) as a,
        live_server(engine.endpoint_url, name, SECRET, log=None) as b,
    ):
        yield name, {"A": a, "B": b}


@pytest.fixture
async def http() -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(timeout=30) as client:
        yield client


@pytest.fixture
async def table(
    engine: LocalEngine, setup: tuple[str, dict[str, LiveServer]]
) -> AsyncIterator[TableRef]:
    async with open_client(ClientSettings(endpoint_url=engine.endpoint_url)) as client:
        yield TableRef(client, setup[0])


async def _call(
    http: httpx.AsyncClient, server: LiveServer, query: str, **variables: Any
) -> dict[str, Any]:
    response = await http.post(
        server.graphql_url,
        json={"query": query, "variables": variables},
        headers={"authorization": f"Bearer {AUTHOR}"},
    )
    body: dict[str, Any] = response.json()
    assert "errors" not in body, body
    data: dict[str, Any] = body["data"]
    return data


async def _create(
    http: httpx.AsyncClient, server: LiveServer, pid: str, fit: str | None = None
) -> str:
    made: dict[str, Any] = {"productId": pid, "rating": 4, "language": "en", "body": "ok"}
    if fit is not None:
        made["attributes"] = [{"key": "fit", "value": fit}]
    data = (await _call(http, server, CREATE, input=made))["createComment"]
    assert data["userErrors"] == [], data
    cid: str = data["comment"]["commentId"]
    return cid


async def _event(client: Subscriber, op_id: str, seconds: float = 20) -> dict[str, Any]:
    message = await client.next(op_id, seconds=seconds)
    assert message["type"] == "next", message
    assert "errors" not in message["payload"], message
    event: dict[str, Any] = message["payload"]["data"]["commentEvents"]
    return event


async def _live(client: Subscriber, op_ids: list[str], probe: Any, seconds: float = 3) -> str:
    """Write probes (``probe()`` writes one every subscription shows) until each
    subscription has received its own; earlier probes' late events are skipped."""
    for _ in range(5):
        made = await probe()
        try:
            async with asyncio.timeout(seconds):
                for op_id in op_ids:
                    while (await _event(client, op_id, seconds))["commentId"] != made:
                        pass
        except TimeoutError:
            continue
        return str(made)
    raise AssertionError("the subscriptions never received an event")


async def test_a_facet_subscription_follows_what_its_listing_gains_and_loses(
    setup: tuple[str, dict[str, LiveServer]], http: httpx.AsyncClient
) -> None:
    a, b = setup[1]["A"], setup[1]["B"]
    async with subscriber(a.graphql_url) as client:
        await client.subscribe("small", EVENTS, {"pid": PID, "f": SMALL})
        await _live(client, ["small"], lambda: _create(http, b, PID, "small"))
        matching = await _create(http, b, PID, "small")
        other = await _create(http, b, PID, "large")  # not in the listing, until edited
        await _create(http, b, PID)  # no answer: not either
        edited = await _call(
            http,
            b,
            UPDATE,
            input={"id": matching, "attributes": [{"key": "fit", "value": "large"}]},
        )
        assert edited["updateComment"]["userErrors"] == []
        gained = await _call(
            http,
            b,
            UPDATE,
            input={"id": other, "attributes": [{"key": "fit", "value": "small"}]},
        )
        assert gained["updateComment"]["userErrors"] == []
        last = await _create(http, b, PID, "small")
        seen = [await _event(client, "small") for _ in range(4)]
        assert [(e["kind"], e["commentId"]) for e in seen] == [
            ("PUBLISHED", matching),
            ("REMOVED", matching),
            ("PUBLISHED", other),
            ("PUBLISHED", last),
        ]
        assert seen[0]["comment"]["attributes"] == [{"key": "fit", "value": "small"}]
        # The count is the listing's, the stats the product's, as over HTTP.
        listed = (await _call(http, a, LISTED, pid=PID, f=SMALL))["product"]
        assert seen[-1]["totalCount"] == listed["comments"]["totalCount"]
        assert seen[-1]["stats"] == listed["stats"]
        assert listed["stats"]["total"] > listed["comments"]["totalCount"]
        with pytest.raises(TimeoutError):
            await client.next("small", seconds=1)


async def test_a_group_subscription_sees_its_variants_and_products_moved_in_and_out(
    setup: tuple[str, dict[str, LiveServer]], http: httpx.AsyncClient, table: TableRef
) -> None:
    a, b = setup[1]["A"], setup[1]["B"]
    tag = uuid.uuid4().hex[:8]
    gid, variant, joining = f"g-{tag}", f"v-{tag}", f"j-{tag}"
    await move_product(table, variant, gid)
    joining_ids = {await _create(http, b, joining) for _ in range(2)}
    async with subscriber(a.graphql_url) as client:
        await client.subscribe("group", EVENTS, {"gid": gid})
        # A variant's comment is the group's.
        await _live(client, ["group"], lambda: _create(http, b, variant))
        await move_product(table, joining, gid)
        entered = [await _event(client, "group") for _ in range(2)]
        assert {(e["kind"], e["commentId"]) for e in entered} == {
            ("PUBLISHED", cid) for cid in joining_ids
        }
        assert {e["comment"]["productId"] for e in entered} == {joining}
        await move_product(table, joining, None)
        left = [await _event(client, "group") for _ in range(2)]
        assert {(e["kind"], e["commentId"]) for e in left} == {
            ("REMOVED", cid) for cid in joining_ids
        }
        await _create(http, b, joining)  # outside the group now
        last = await _create(http, b, variant)
        event = await _event(client, "group")
        assert (event["kind"], event["commentId"]) == ("PUBLISHED", last)
        listed = (await _call(http, a, GROUP_LISTED, gid=gid))["productGroup"]
        assert event["stats"] == listed["stats"]
        assert event["totalCount"] == listed["comments"]["totalCount"]


async def _refused(client: Subscriber, op_id: str) -> dict[str, Any]:
    message = await client.next(op_id)
    assert message["type"] == "error", message
    error: dict[str, Any] = message["payload"][0]
    return error


@pytest.mark.parametrize(
    ("variables", "named"),
    [
        ({"pid": PID, "f": SMALL, "o": "MOST_HELPFUL"}, "orderBy"),
        ({"gid": "g-any", "o": "MOST_HELPFUL"}, "orderBy"),
        ({"pid": PID, "gid": "g-any"}, "productId and groupId"),
        ({}, "productId and groupId"),
        ({"pid": PID, "f": {"topic": "Not A Topic"}}, "facets.topic"),
        ({"pid": PID, "f": {"attributes": [{"key": "fit", "value": "a#b"}]}}, "facets.attributes"),
        ({"pid": PID, "f": {"productId": "another"}}, "facets.productId"),
        ({"gid": "g-none", "f": {"productId": PID}}, "facets.productId"),
        ({"gid": "not a group id"}, "groupId"),
    ],
)
async def test_bad_filters_are_refused_naming_the_argument(
    setup: tuple[str, dict[str, LiveServer]], variables: dict[str, Any], named: str
) -> None:
    async with subscriber(setup[1]["A"].graphql_url) as client:
        await client.subscribe("bad", EVENTS, variables)
        error = await _refused(client, "bad")
    assert error["extensions"]["code"] == "BAD_USER_INPUT", error
    assert named in error["message"], error


async def _work(http: httpx.AsyncClient, server: LiveServer) -> tuple[float, float]:
    scraped = parse_scrape((await http.get(f"{server.base_url}/metrics")).text)
    return (
        sample(scraped, "comments_subscription_resolutions_total"),
        sample(scraped, "comments_subscription_storage_calls_total"),
    )


# One storage call per event besides the counters the feed reads for all.
SHARED = """subscription($pid: ID!, $f: CommentFacets) {
  commentEvents(productId: $pid, facets: $f) {
    kind commentId totalCount comment { product { stats { total } } } } }"""


async def test_facet_subscribers_sharing_a_document_cost_one_resolution_per_event(
    setup: tuple[str, dict[str, LiveServer]], http: httpx.AsyncClient
) -> None:
    a, b = setup[1]["A"], setup[1]["B"]
    work: list[tuple[float, float]] = []
    for count in (1, 8):
        async with AsyncExitStack() as stack:
            clients = [
                await stack.enter_async_context(subscriber(a.graphql_url)) for _ in range(count)
            ]
            for client in clients:
                await client.subscribe("s", SHARED, {"pid": PID, "f": SMALL})
            for client in clients:
                await _live(client, ["s"], lambda: _create(http, b, PID, "small"), seconds=5)
            before = await _work(http, a)
            counted = await _create(http, b, PID, "small")
            for client in clients:
                async with asyncio.timeout(10):
                    while (await _event(client, "s"))["commentId"] != counted:
                        pass
            after = await _work(http, a)
            work.append((after[0] - before[0], after[1] - before[1]))
    assert work[0] == work[1]
    assert work[0][0] == 1  # one resolution for the event, however many receive it


@pytest.mark.parametrize(
    ("arguments", "charged"),
    [
        ({"productId": "p"}, "p"),
        ({"groupId": "g"}, "GROUP#g"),
        ({"groupId": "g", "facets": {"productId": "p"}}, "GROUP#g"),
        ({"productId": "p", "groupId": "g"}, None),
        ({}, None),
    ],
)
def test_a_group_watched_is_charged_to_a_budget_of_its_own(
    arguments: dict[str, Any], charged: str | None
) -> None:
    # No product id holds '#': a group's budget is never a product's.
    assert _watched(arguments) == charged
