"""Live updates across processes: two servers on one table with its stream; a client
subscribed on one sees, in order and exactly once, what is written through the other;
filters hold; the limits, auth and errors of the WebSocket transport."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator, Iterator
from contextlib import AsyncExitStack, ExitStack
from typing import Any

import httpx
import orjson
import pytest
from websockets.exceptions import ConnectionClosed

from resolvers.auth import mint
from server.dev.local_engine import LocalEngine
from server.http.persisted import sha256_hex
from storage.engine.client import ClientSettings, open_client
from storage.ops.create import create_table
from testing.live_server import LiveServer, live_server
from testing.scrape import parse_scrape, sample
from testing.subscriber import Subscriber, subscriber
from tests.api_helpers import SECRET

pytestmark = pytest.mark.engine

EVENTS = """subscription($pid: ID!, $lang: String, $ratings: [Int!]) {
  commentEvents(productId: $pid, language: $lang, ratings: $ratings) {
    kind commentId nodeId
    comment { commentId body rating language status }
    stats { total histogram { rating count } }
    languageStats { language total }
  }
}"""
CREATE = """mutation($input: CreateCommentInput!) {
  createComment(input: $input) { comment { commentId } userErrors { code } } }"""
UPDATE = """mutation($input: UpdateCommentInput!) {
  updateComment(input: $input) { comment { rating } userErrors { code } } }"""
DELETE = (
    """mutation($id: ID!) { deleteComment(input: {id: $id}) { deletedId userErrors { code } } }"""
)
MODERATE = """mutation($id: ID!, $decision: ModerationDecision!) {
  moderateComment(input: {id: $id, decision: $decision}) { comment { status } userErrors { code } }
}"""
VOTE = """mutation($id: ID!) {
  voteHelpful(input: {id: $id, vote: HELPFUL}) { comment { helpfulCount } userErrors { code } } }"""
STATS = """query($pid: ID!) {
  product(productId: $pid) { stats { total histogram { rating count } } } }"""

AUTHOR = mint(SECRET, "ann", name="Ann")
VOTER = mint(SECRET, "bob", name="Bob")
MODERATOR = mint(SECRET, "mod", name="Mod", roles=["moderator"])


async def _streamed_table(endpoint_url: str) -> str:
    name = f"live_{uuid.uuid4().hex[:8]}"
    async with open_client(ClientSettings(endpoint_url=endpoint_url)) as client:
        await create_table(client, name)  # with its stream, as create-table makes it
    return name


# The documents server D trusts (its TRUSTED_DOCUMENTS manifest).
TRUSTED = 'subscription { commentEvents(productId: "p") { kind } }'


@pytest.fixture(scope="module")
def servers(
    engine: LocalEngine, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[dict[str, LiveServer]]:
    """A: where clients subscribe; B: where writes go; C: small limits; D: live updates
    off, trusted documents only. All on one table with its stream."""
    table = asyncio.run(_streamed_table(engine.endpoint_url))
    manifest = tmp_path_factory.mktemp("trusted") / "manifest.json"
    manifest.write_bytes(orjson.dumps({sha256_hex(TRUSTED): TRUSTED}))
    roles: dict[str, dict[str, str]] = {
        "A": {},
        "B": {},
        "C": {
            "SUBSCRIPTIONS_PER_CONNECTION": "2",
            "SUBSCRIPTIONS_PER_PROCESS": "3",
            "SUBSCRIPTION_IDLE_SECONDS": "1",
            "CONNECTION_INIT_SECONDS": "1",
            "MAX_QUERY_COST": "3",
            "MAX_WEBSOCKETS": "3",
            "MAX_CONNECTIONS": "2",
            "SUBSCRIPTION_EVENT_COST": "1",
            "SUBSCRIPTION_CONNECTION_COST": "3",
            "SUBSCRIPTION_PRODUCT_COST": "3",
            "MAX_RESPONSE_BYTES": "1024",
        },
        "D": {"LIVE_UPDATES": "false", "TRUSTED_DOCUMENTS": str(manifest)},
    }
    # The default poll: DynamoDB Local answers GetRecords slowly enough that four servers
    # polling every 50 ms slow each other's start-up threefold.
    with ExitStack() as stack:
        yield {
            role: stack.enter_context(
                live_server(engine.endpoint_url, table, SECRET, log=None, **env)
            )
            for role, env in roles.items()
        }


@pytest.fixture
async def http() -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(timeout=30) as client:
        yield client


async def _call(
    http: httpx.AsyncClient, server: LiveServer, query: str, token: str, **variables: Any
) -> dict[str, Any]:
    response = await http.post(
        server.graphql_url,
        json={"query": query, "variables": variables},
        headers={"authorization": f"Bearer {token}"},
    )
    body: dict[str, Any] = response.json()
    assert "errors" not in body, body
    data: dict[str, Any] = body["data"]
    return data


async def _create(
    http: httpx.AsyncClient, server: LiveServer, pid: str, rating: int, language: str, body: str
) -> str:
    data = await _call(
        http,
        server,
        CREATE,
        AUTHOR,
        input={"productId": pid, "rating": rating, "language": language, "body": body},
    )
    assert data["createComment"]["userErrors"] == []
    cid: str = data["createComment"]["comment"]["commentId"]
    return cid


async def _ready(
    http: httpx.AsyncClient,
    writer: LiveServer,
    client: Subscriber,
    op_ids: list[str],
    pid: str,
) -> str:
    """Wait until the subscriptions are live: write a comment every subscription shows
    (German, 5 stars) until each has received its event. Returns the probe's id."""
    # A subscription is registered within moments of its message; should a probe be
    # written before that, another is, and the late events of earlier probes are skipped.
    probes: list[str] = []
    for _ in range(5):
        probe = await _create(http, writer, pid, 5, "de", "probe")
        probes.append(probe)
        try:
            for op_id in op_ids:
                while True:
                    message = await client.next(op_id, seconds=5)
                    assert message["type"] == "next", message
                    event = message["payload"]["data"]["commentEvents"]
                    assert event["kind"] == "PUBLISHED", event
                    assert event["commentId"] in probes, event
                    if event["commentId"] == probe:
                        break
        except TimeoutError:
            continue
        return probe
    raise AssertionError("the subscriptions never received an event")


async def _events(client: Subscriber, op_id: str, n: int) -> list[dict[str, Any]]:
    out = []
    for _ in range(n):
        message = await client.next(op_id)
        assert message["type"] == "next", message
        assert "errors" not in message["payload"], message
        out.append(message["payload"]["data"]["commentEvents"])
    return out


async def test_a_subscriber_on_one_process_sees_the_writes_of_another_in_order_once(
    servers: dict[str, LiveServer], http: httpx.AsyncClient
) -> None:
    a, b = servers["A"], servers["B"]
    pid = f"live-{uuid.uuid4().hex[:8]}"
    async with subscriber(a.graphql_url, authorization=f"Bearer {VOTER}") as client:
        await client.subscribe("all", EVENTS, {"pid": pid})
        await client.subscribe("de5", EVENTS, {"pid": pid, "lang": "DE", "ratings": [5]})
        probe = await _ready(http, b, client, ["all", "de5"], pid)

        one = await _create(http, b, pid, 4, "en", "first")
        two = await _create(http, b, pid, 5, "de", "second")
        await _call(http, b, UPDATE, AUTHOR, input={"id": two, "body": "second, edited"})
        await _call(http, b, UPDATE, AUTHOR, input={"id": two, "rating": 3})
        await _call(http, b, MODERATE, MODERATOR, id=one, decision="REJECT")
        await _call(http, b, MODERATE, MODERATOR, id=one, decision="APPROVE")
        await _call(http, b, VOTE, VOTER, id=two)  # a vote is not an edit
        await _call(http, b, DELETE, AUTHOR, id=two)
        await _call(http, b, DELETE, AUTHOR, id=probe)
        # Written last: the next event after the expected ones must be this one, so
        # nothing came twice in between.
        last = await _create(http, b, pid, 5, "de", "last")

        seen = await _events(client, "all", 9)
        assert [(e["kind"], e["commentId"]) for e in seen] == [
            ("PUBLISHED", one),
            ("PUBLISHED", two),
            ("EDITED", two),
            ("EDITED", two),
            ("REMOVED", one),
            ("PUBLISHED", one),
            ("REMOVED", two),
            ("REMOVED", probe),
            ("PUBLISHED", last),
        ]
        assert seen[2]["comment"]["body"] == "second, edited"
        assert seen[3]["comment"]["rating"] == 3
        assert seen[4]["comment"] is None  # a rejected comment is not shown to everyone
        assert seen[6]["nodeId"] != two  # the global id, for a client cache
        german = await _events(client, "de5", 4)
        # The edit to 3 stars took it out of the 5-star listing; the English one was
        # never in it.
        assert [(e["kind"], e["commentId"]) for e in german] == [
            ("PUBLISHED", two),
            ("EDITED", two),
            ("REMOVED", two),
            ("REMOVED", probe),
        ]
        assert german[0]["languageStats"]["language"] == "de"
        last_german = await _events(client, "de5", 1)
        assert last_german[0]["commentId"] == last
        # The counters of the last event are the product's as stored.
        stored = await _call(http, a, STATS, VOTER, pid=pid)
        assert seen[-1]["stats"] == stored["product"]["stats"]
        assert client.binary_frames == 0  # text frames only, as the protocol says


async def _open_on(http: httpx.AsyncClient, server: LiveServer, until: int | None = None) -> float:
    """The subscriptions the server's metrics count open; with ``until``, waiting (up to
    ten seconds) for that figure, as the gauge is set after each poll of the stream."""
    for _ in range(100):
        scraped = await http.get(f"{server.base_url}/metrics")
        assert scraped.status_code == 200, scraped.text
        open_now = sample(parse_scrape(scraped.text), "comments_subscriptions_open")
        if until is None or open_now == until:
            return open_now
        await asyncio.sleep(0.1)
    return open_now


async def test_limits_per_connection_and_per_process_and_freed_on_disconnect(
    servers: dict[str, LiveServer], http: httpx.AsyncClient
) -> None:
    c = servers["C"]
    pid = f"lim-{uuid.uuid4().hex[:8]}"
    query = "subscription($pid: ID!) { commentEvents(productId: $pid) { kind commentId } }"
    async with subscriber(c.graphql_url) as first:
        await first.subscribe("1", query, {"pid": pid})
        await first.subscribe("2", query, {"pid": pid})
        await first.subscribe("3", query, {"pid": pid})
        refused = await first.next("3")
        assert refused["type"] == "error"
        assert refused["payload"][0]["extensions"]["code"] == "TOO_MANY_SUBSCRIPTIONS"
        async with subscriber(c.graphql_url) as second:
            await second.subscribe("1", query, {"pid": pid})
            # The process's third place is taken; its fourth is refused.
            async with subscriber(c.graphql_url) as third:
                await third.subscribe("1", query, {"pid": pid})
                over = await third.next("1")
                assert over["type"] == "error"
                assert over["payload"][0]["extensions"]["code"] == "TOO_MANY_SUBSCRIPTIONS"
            assert await _open_on(http, c, until=3) == 3
        # The first connection leaves: its places are freed (the process's metrics say so
        # too), so a new subscription is accepted and receives events.
    assert await _open_on(http, c, until=0) == 0
    async with subscriber(c.graphql_url) as again:
        await again.subscribe("new", query, {"pid": pid})
        await again.subscribe("other", query, {"pid": pid})
        # Both receive events (a refusal would arrive instead of the probe's event).
        await _ready(http, servers["B"], again, ["new", "other"], pid)


async def test_connection_init_checks_the_token(servers: dict[str, LiveServer]) -> None:
    async with subscriber(servers["A"].graphql_url, init=False) as client:
        await client.send({"type": "connection_init", "payload": {"authorization": "Bearer x"}})
        closed = await client.closed()
    assert closed.code == 4403
    async with subscriber(servers["A"].graphql_url, authorization=f"Bearer {AUTHOR}") as ok:
        assert ok.acknowledged == {"type": "connection_ack"}
    # A connection lives no longer than its token.
    brief = mint(SECRET, "ann", name="Ann", ttl_seconds=2)
    async with subscriber(servers["A"].graphql_url, authorization=f"Bearer {brief}") as short:
        await short.subscribe("1", 'subscription { commentEvents(productId: "p") { kind } }')
        closed = await short.closed(seconds=10)
    assert (closed.code, closed.reason) == (4403, "Token expired")


async def test_a_connection_without_init_or_without_subscriptions_is_closed(
    servers: dict[str, LiveServer],
) -> None:
    async with subscriber(servers["C"].graphql_url, init=False) as silent:
        assert (await silent.closed(seconds=10)).code == 4408
    async with subscriber(servers["C"].graphql_url) as idle:
        assert (await idle.closed(seconds=10)).code == 4000


async def test_refusals_carry_codes(servers: dict[str, LiveServer]) -> None:
    async with subscriber(servers["C"].graphql_url) as client:
        await client.send(
            {"id": "q", "type": "subscribe", "payload": {"query": "{ viewer { subject } }"}}
        )
        query = await client.next("q")
        assert query["payload"][0]["extensions"]["code"] == "BAD_USER_INPUT"
        costly = """subscription { commentEvents(productId: "p") {
          comment { product { comments(first: 50) { nodes { body } } } } } }"""
        await client.subscribe("cost", costly)
        over = await client.next("cost")
        assert over["type"] == "error"
        assert over["payload"][0]["extensions"]["code"] == "QUERY_TOO_COMPLEX"
        await client.subscribe(
            "bad", 'subscription { commentEvents(productId: "p", ratings: [7]) { kind } }'
        )
        bad = await client.next("bad")
        assert bad["type"] == "error"
        assert bad["payload"][0]["extensions"]["code"] == "BAD_USER_INPUT"
    async with subscriber(servers["D"].graphql_url) as off:
        await off.subscribe("x", 'subscription { commentEvents(productId: "p") { kind } }')
        refused = await off.next("x")
        assert refused["type"] == "error"
        assert refused["payload"][0]["extensions"]["code"] == "LIVE_UPDATES_UNAVAILABLE"


async def test_sockets_have_places_of_their_own_and_never_starve_http(
    servers: dict[str, LiveServer], http: httpx.AsyncClient
) -> None:
    c = servers["C"]  # MAX_WEBSOCKETS=3, MAX_CONNECTIONS=2
    async with AsyncExitStack() as stack:
        held: list[Subscriber] = []
        for attempt in range(40):  # sockets of the tests before may still be closing
            try:
                client = await stack.enter_async_context(subscriber(c.graphql_url))
            except (RuntimeError, ConnectionClosed):
                await asyncio.sleep(0.1)
                continue
            # A subscription keeps it from the idle timeout (1 s on C).
            await client.subscribe(
                str(attempt), 'subscription { commentEvents(productId: "h") { kind } }'
            )
            held.append(client)
            if len(held) == 3:
                break
        assert len(held) == 3
        async with subscriber(c.graphql_url, init=False) as fourth:
            closed = await fourth.closed()
        assert (closed.code, closed.reason) == (1013, "Too many connections; retry later")
        # HTTP keeps its own places: with three sockets open, more than MAX_CONNECTIONS.
        for path in ("/healthz", "/metrics"):
            assert (await http.get(c.base_url + path)).status_code == 200


async def test_a_malformed_subscribe_message_closes_with_4400(
    servers: dict[str, LiveServer],
) -> None:
    for message, reason in (
        ({"id": "1", "type": "subscribe", "payload": 5}, "Invalid subscribe message"),
        (
            {"id": 1, "type": "subscribe", "payload": {"query": "subscription { x }"}},
            "Invalid subscribe message",
        ),
        ({"id": ["a"], "type": "complete"}, "Invalid complete message"),
    ):
        async with subscriber(servers["A"].graphql_url) as client:
            await client.send(message)
            closed = await client.closed(seconds=10)
        assert (closed.code, closed.reason) == (4400, reason)


async def test_variables_the_operation_does_not_declare_change_nothing(
    servers: dict[str, LiveServer], http: httpx.AsyncClient
) -> None:
    # Nested deeper than an encoder walks (orjson stops at 255), within the cap on values;
    # written by hand, as no encoder writes it.
    junk = '{"x":' * 300 + "1" + "}" * 300
    pid = f"junk-{uuid.uuid4().hex[:8]}"
    async with subscriber(servers["A"].graphql_url) as client:
        payload = orjson.dumps({"query": SHARED}).decode()[:-1]
        variables = f'"variables":{{"pid":"{pid}","junk":{junk}}}'
        client._queue("s")
        await client.socket.send(
            f'{{"id":"s","type":"subscribe","payload":{payload},{variables}}}}}'
        )
        await _ready(http, servers["B"], client, ["s"], pid)


async def test_a_token_in_the_upgrade_header_is_not_an_identity(
    servers: dict[str, LiveServer], http: httpx.AsyncClient
) -> None:
    pid = f"hdr-{uuid.uuid4().hex[:8]}"
    query = """subscription($pid: ID!) {
      commentEvents(productId: $pid) { kind commentId comment { authorSubject } } }"""
    headers = {"authorization": f"Bearer {MODERATOR}"}
    async with subscriber(servers["A"].graphql_url, headers=headers) as client:
        await client.subscribe("1", query, {"pid": pid})
        await _ready(http, servers["B"], client, ["1"], pid)
        made = await _create(http, servers["B"], pid, 3, "en", "who wrote this?")
        message = await client.next("1")
        event = message["payload"]["data"]["commentEvents"]
        assert event["commentId"] == made
        # A moderator would see the author's subject; this connection is anonymous.
        assert event["comment"]["authorSubject"] is None


# One storage call per event (the product's counters), and none of the viewer's own.
SHARED = """subscription($pid: ID!) {
  commentEvents(productId: $pid) { kind commentId comment { product { stats { total } } } }
}"""
# The viewer's own vote: resolved per viewer.
PER_VIEWER = """subscription($pid: ID!) {
  commentEvents(productId: $pid) { kind commentId comment { viewerVote } }
}"""


async def _work(http: httpx.AsyncClient, server: LiveServer) -> tuple[float, float]:
    """Events resolved and the storage calls they made, so far, in the server's process."""
    scraped = parse_scrape((await http.get(f"{server.base_url}/metrics")).text)
    return (
        sample(scraped, "comments_subscription_resolutions_total"),
        sample(scraped, "comments_subscription_storage_calls_total"),
    )


async def _until(client: Subscriber, op_id: str, comment_id: str, seconds: float) -> None:
    """Skip the operation's events until that comment's."""
    async with asyncio.timeout(seconds):
        while True:
            message = await client.next(op_id, seconds=seconds)
            assert message["type"] == "next", message
            if message["payload"]["data"]["commentEvents"]["commentId"] == comment_id:
                return


async def _one_event(
    http: httpx.AsyncClient,
    servers: dict[str, LiveServer],
    clients: list[Subscriber],
    pid: str,
) -> tuple[float, float]:
    """The work one write makes in server A for these subscribers (op "s" on each):
    probes until every subscription is live, then one comment, counted."""
    a, b = servers["A"], servers["B"]
    for _ in range(5):
        probe = await _create(http, b, pid, 5, "de", "probe")
        try:
            for client in clients:
                await _until(client, "s", probe, seconds=3)
        except TimeoutError:
            continue
        break
    else:
        raise AssertionError("the subscriptions never received an event")
    before = await _work(http, a)
    counted = await _create(http, b, pid, 4, "en", "counted")
    for client in clients:
        await _until(client, "s", counted, seconds=10)
    after = await _work(http, a)
    return after[0] - before[0], after[1] - before[1]


async def test_subscribers_sharing_a_document_cost_one_resolution_per_event(
    servers: dict[str, LiveServer], http: httpx.AsyncClient
) -> None:
    url = servers["A"].graphql_url
    pid = f"share-{uuid.uuid4().hex[:8]}"
    async with subscriber(url) as alone:
        await alone.subscribe("s", SHARED, {"pid": pid})
        resolved, calls = await _one_event(http, servers, [alone], pid)
    assert resolved == 1
    assert calls >= 1  # the document reads storage: sharing it is worth something
    # Twelve subscribers of the same document, anonymous and signed in (it selects nothing
    # of the viewer's own): the work of one.
    tokens = [None] * 10 + [AUTHOR, VOTER]
    async with AsyncExitStack() as stack:
        many = []
        for token in tokens:
            authorization = None if token is None else f"Bearer {token}"
            client = await stack.enter_async_context(subscriber(url, authorization=authorization))
            await client.subscribe("s", SHARED, {"pid": pid})
            many.append(client)
        assert await _one_event(http, servers, many, pid) == (resolved, calls)
    # A field of the viewer's own is resolved per viewer: anonymous viewers share one
    # resolution, and each token one of its own.
    async with AsyncExitStack() as stack:
        viewers = []
        for token in [None, None, VOTER, VOTER, MODERATOR]:
            authorization = None if token is None else f"Bearer {token}"
            client = await stack.enter_async_context(subscriber(url, authorization=authorization))
            await client.subscribe("s", PER_VIEWER, {"pid": pid})
            viewers.append(client)
        per_viewer, _ = await _one_event(http, servers, viewers, pid)
    assert per_viewer == 3 * resolved


async def _refused(client: Subscriber, op_id: str) -> dict[str, Any]:
    message = await client.next(op_id)
    assert message["type"] == "error", message
    error: dict[str, Any] = message["payload"][0]
    return error


async def test_budgets_of_events_connections_and_products(
    servers: dict[str, LiveServer],
) -> None:
    c = servers["C"]  # one storage call per event, 3 points per connection and product
    pid = f"budget-{uuid.uuid4().hex[:8]}"
    stats = "subscription($pid: ID!) { commentEvents(productId: $pid) { %s } }"
    one_call = stats % "comment { product { stats { total } } }"  # 2 points
    two_calls = stats % "comment { p: product { stats { total } } q: product { stats { total } } }"
    listing = stats % "comment { product { comments(first: 1) { totalCount } } }"
    async with subscriber(c.graphql_url) as first:
        await first.subscribe("listing", listing, {"pid": pid})
        error = await _refused(first, "listing")
        assert error["extensions"]["code"] == "QUERY_TOO_COMPLEX"
        assert "Product.comments" in error["message"]
        await first.subscribe("two", two_calls, {"pid": pid})
        error = await _refused(first, "two")
        assert error["extensions"]["code"] == "QUERY_TOO_COMPLEX"
        assert "at most 1 are allowed" in error["message"]
        await first.subscribe("one", one_call, {"pid": pid})
        # A second document of 2 points: the connection would hold 4 of its 3.
        other = stats % "comment { product { other: stats { total } } }"
        await first.subscribe("other", other, {"pid": pid})
        error = await _refused(first, "other")
        assert error["extensions"]["code"] == "QUERY_TOO_COMPLEX"
        assert "This connection's subscriptions would cost 4 points" in error["message"]
        async with subscriber(c.graphql_url) as second:
            # Another connection's different document: the product would cost 4 of its 3.
            await second.subscribe("other", other, {"pid": pid})
            error = await _refused(second, "other")
            assert error["extensions"]["code"] == "TOO_MANY_SUBSCRIPTIONS"
            assert "this product would cost 4 points" in error["message"]
            # So does one whose root field comes through a fragment: it is charged to the
            # product it watches all the same.
            fragment = (
                "subscription($pid: ID!) { ...W } fragment W on Subscription { "
                "commentEvents(productId: $pid) { comment { product { f: stats { total } } } } }"
            )
            await second.subscribe("fragment", fragment, {"pid": pid})
            error = await _refused(second, "fragment")
            assert "this product would cost 4 points" in error["message"]
            # The same document as the first connection's joins its resolution: accepted.
            await second.subscribe("same", one_call, {"pid": pid})
            with pytest.raises(TimeoutError):
                await second.next("same", seconds=1)


async def test_an_event_over_the_response_bytes_ends_its_subscription(
    servers: dict[str, LiveServer], http: httpx.AsyncClient
) -> None:
    c = servers["C"]  # MAX_RESPONSE_BYTES=1024
    pid = f"bytes-{uuid.uuid4().hex[:8]}"
    query = """subscription($pid: ID!) {
      commentEvents(productId: $pid) { commentId comment { body } } }"""
    async with subscriber(c.graphql_url) as client:
        await client.subscribe("s", query, {"pid": pid})
        small = ""
        for _ in range(5):  # until the subscription is live
            small = await _create(http, servers["B"], pid, 3, "en", "small")
            try:
                message = await client.next("s", seconds=3)
            except TimeoutError:
                continue
            break
        else:
            raise AssertionError("the subscription never received an event")
        assert message["payload"]["data"]["commentEvents"]["commentId"] == small
        await _create(http, servers["B"], pid, 3, "en", "x" * 2000)
        ended = await client.next("s")
        assert ended["type"] == "next"
        error = ended["payload"]["errors"][0]
        assert error["extensions"]["code"] == "QUERY_TOO_COMPLEX"
        assert "at most 1024 are allowed (MAX_RESPONSE_BYTES" in error["message"]
        assert (await client.next("s"))["type"] == "complete"


async def test_trusted_documents_hold_over_websocket(servers: dict[str, LiveServer]) -> None:
    d = servers["D"]  # TRUSTED_DOCUMENTS: only TRUSTED runs (and live updates are off)
    other = 'subscription { commentEvents(productId: "p") { kind commentId } }'
    async with httpx.AsyncClient() as http:
        over_http = await http.post(d.graphql_url, json={"query": "{ __typename }"})
    assert over_http.status_code == 403
    async with subscriber(d.graphql_url) as client:
        await client.subscribe("other", other)
        error = await _refused(client, "other")
        assert error["extensions"]["code"] == "FORBIDDEN"
        # The trusted document passes the policy (and meets live updates being off).
        await client.subscribe("trusted", TRUSTED)
        error = await _refused(client, "trusted")
        assert error["extensions"]["code"] == "LIVE_UPDATES_UNAVAILABLE"
        # So does its hash alone, as a persisted query.
        persisted = {"version": 1, "sha256Hash": sha256_hex(TRUSTED)}
        await client.send(
            {
                "id": "hash",
                "type": "subscribe",
                "payload": {"extensions": {"persistedQuery": persisted}},
            }
        )
        error = await _refused(client, "hash")
        assert error["extensions"]["code"] == "LIVE_UPDATES_UNAVAILABLE"


ORDERED = """subscription($pid: ID!, $order: CommentOrder!, $verified: Boolean!) {
  commentEvents(productId: $pid, orderBy: $order, verifiedOnly: $verified) {
    kind commentId edge { cursor node { commentId rating } }
  }
}"""
LISTED = """query($pid: ID!, $order: CommentOrder!) { product(productId: $pid) {
  comments(orderBy: $order, first: 50) { edges { cursor node { commentId } } } } }"""


async def test_events_carry_their_edge_in_the_order_watched_and_verified_only_holds(
    servers: dict[str, LiveServer], http: httpx.AsyncClient
) -> None:
    a, b = servers["A"], servers["B"]
    pid = f"order-{uuid.uuid4().hex[:8]}"
    buyer = mint(SECRET, "buyer", name="Buyer", purchases=[pid])

    async def write(token: str, rating: int) -> str:
        data = await _call(
            http,
            b,
            CREATE,
            token,
            input={"productId": pid, "rating": rating, "language": "en", "body": "x"},
        )
        cid: str = data["createComment"]["comment"]["commentId"]
        return cid

    async def next_event(client: Subscriber, op_id: str) -> dict[str, Any]:
        message = await client.next(op_id, seconds=10)
        assert message["type"] == "next", message
        event: dict[str, Any] = message["payload"]["data"]["commentEvents"]
        return event

    async with subscriber(a.graphql_url) as client:
        variables = {"pid": pid, "order": "HIGHEST_RATING", "verified": False}
        await client.subscribe("high", ORDERED, variables)
        await client.subscribe(
            "verified", ORDERED, {**variables, "order": "NEWEST", "verified": True}
        )
        for _ in range(5):  # until both are live: a verified purchase's comment reaches both
            probe = await write(buyer, 4)
            try:
                for op_id in ("high", "verified"):
                    await _until(client, op_id, probe, seconds=3)
            except TimeoutError:
                continue
            break
        else:
            raise AssertionError("the subscriptions never received an event")
        plain = await write(AUTHOR, 2)  # not a verified purchase
        bought = await write(buyer, 5)
        high = [await next_event(client, "high") for _ in range(2)]
        assert [(e["kind"], e["commentId"]) for e in high] == [
            ("PUBLISHED", plain),
            ("PUBLISHED", bought),
        ]
        # The verified-only listing never had the other one.
        assert (await next_event(client, "verified"))["commentId"] == bought
        # Each edge is the comment's as a page of that order gives it.
        listed = await _call(http, a, LISTED, VOTER, pid=pid, order="HIGHEST_RATING")
        cursors = {
            e["node"]["commentId"]: e["cursor"] for e in listed["product"]["comments"]["edges"]
        }
        assert {e["commentId"]: e["edge"]["cursor"] for e in high} == {
            cid: cursors[cid] for cid in (plain, bought)
        }
        await _call(http, b, DELETE, AUTHOR, id=plain)
        removed = await next_event(client, "high")
        assert (removed["kind"], removed["edge"]) == ("REMOVED", None)
