"""Several processes: two servers on one table stay exact and show each other's writes at
once; ``serve --workers 2`` runs two workers on one engine and leaves nothing behind, and
its metrics add up over both workers (a worker replaced after it died counted once)."""

from __future__ import annotations

import asyncio
import multiprocessing
import os
import signal
import subprocess
import time
from collections import Counter
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack, contextmanager
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

import httpx
import pytest
import uvicorn
from prometheus_client.multiprocess import MultiProcessCollector
from uvicorn.supervisors.multiprocess import SIGNALS

from resolvers.auth import mint
from server.dev.local_engine import LocalEngine, free_port
from server.http.head_limits import HeadLimits
from server.http.persisted import sha256_hex
from server.runtime import DevTokens, Prepared
from server.settings import Settings
from server.shutdown import Drain, Leaving
from server.workers import HEALTH_CHECK_SECONDS, Supervisor, WorkerApp, WorkerConfig
from storage.engine.table import TableRef
from storage.ops.verify import verify
from testing.live_server import COMMENTS, ROOT, LiveServer, live_server
from testing.responses import refusal
from testing.scrape import parse_scrape, sample
from tests.api_helpers import SECRET
from tests.helpers import own_table

CREATE = """mutation($input: CreateCommentInput!) {
  createComment(input: $input) { created comment { commentId } userErrors { code } } }"""
UPDATE = """mutation($id: ID!, $rating: Int!) {
  updateComment(input: {id: $id, rating: $rating}) { comment { rating } userErrors { code } } }"""
DELETE = """mutation($id: ID!) {
  deleteComment(input: {id: $id}) { deletedId userErrors { code } } }"""
VOTE = """mutation($id: ID!, $vote: HelpfulVote) {
  voteHelpful(input: {id: $id, vote: $vote}) { comment { helpfulCount } userErrors { code } } }"""
MODERATE = """mutation($id: ID!) {
  moderateComment(input: {id: $id, decision: REJECT}) {
    comment { status } userErrors { code } } }"""
PAGE = """query($pid: ID!, $lang: String, $ratings: [Int!], $after: String) {
  product(productId: $pid) {
    comments(language: $lang, ratings: $ratings, first: 10, after: $after) {
      totalCount
      nodes { commentId rating helpfulCount notHelpfulCount }
      pageInfo { hasNextPage endCursor }
    }
  }
}"""
STATS = """query($pid: ID!) {
  product(productId: $pid) { stats { total histogram { rating count } } }
  topProducts(first: 5) { fiveStarCount product { productId } }
}"""
# Listings whose totals and pages must agree across processes; rating 1 is the one no
# comment has until the freshness rounds, which a plan may skip.
FILTERS: list[tuple[str | None, list[int] | None]] = [
    (None, None),
    ("en", None),
    (None, [1, 2, 5]),
    ("de", [1, 3, 4, 5]),
]
# Authors of the racing comments: with pages of 10, most listings take two pages, the
# second through the other process.
AUTHORS = 16
# Each author may have one comment on a product (a limit kept in the table); the storage
# timeout leaves room for cores shared with the engine and the other process.
LIMITS = {"COMMENTS_PER_PRODUCT": "1", "STORAGE_TIMEOUT": "30"}
WHO = '{ viewer { authorId } product(productId: "x") { stats { total } } }'


class Both:
    """Two server processes on one table, and the tokens of the writers."""

    def __init__(self, servers: list[LiveServer], http: httpx.AsyncClient) -> None:
        self.servers = servers
        self.http = http
        self.moderator = mint(SECRET, "w-moderator", roles=["moderator"])

    async def call(
        self, side: int, query: str, variables: dict[str, Any], sub: str | None = None
    ) -> dict[str, Any]:
        """The answer of one process (``side``), as the moderator or ``sub``; a write that
        met persistent contention (CONFLICT, retryable) is sent again, as a client would,
        so that what the race leaves behind is known."""
        token = self.moderator if sub is None else mint(SECRET, sub)
        for attempt in range(1, 6):
            response = await self.http.post(
                self.servers[side % 2].graphql_url,
                json={"query": query, "variables": variables},
                headers={"authorization": f"Bearer {token}"},
            )
            assert response.status_code == 200, response.text
            body: dict[str, Any] = response.json()
            if not any(e["extensions"]["code"] == "CONFLICT" for e in body.get("errors", [])):
                break
            await asyncio.sleep(0.1 * attempt)
        return body

    async def listing(
        self, side: int, pid: str, lang: str | None, ratings: list[int] | None
    ) -> tuple[int, list[dict[str, Any]]]:
        """A listing walked to its end, from one process and on through the other, page by
        page (a cursor is good in any process): its totalCount and nodes."""
        nodes: list[dict[str, Any]] = []
        after = None
        totals = set()
        while True:
            variables = {"pid": pid, "lang": lang, "ratings": ratings, "after": after}
            body = await self.call(side, PAGE, variables)
            side += 1
            assert "errors" not in body, body
            page = body["data"]["product"]["comments"]
            totals.add(page["totalCount"])
            nodes += page["nodes"]
            if not page["pageInfo"]["hasNextPage"]:
                break
            after = page["pageInfo"]["endCursor"]
        assert len(totals) == 1, f"totalCount changed while walking: {totals}"
        return totals.pop(), nodes

    async def stats(self, side: int, pid: str) -> tuple[int, dict[int, int], int]:
        """The product's total and histogram, and its 5-star count on the leaderboard."""
        body = await self.call(side, STATS, {"pid": pid})
        stats = body["data"]["product"]["stats"] or {"total": 0, "histogram": []}
        histogram = {h["rating"]: h["count"] for h in stats["histogram"]}
        board = {e["product"]["productId"]: e["fiveStarCount"] for e in body["data"]["topProducts"]}
        return stats["total"], histogram, board.get(pid, 0)


def _ids(nodes: list[dict[str, Any]]) -> set[str]:
    return {n["commentId"] for n in nodes}


async def _create(both: Both, side: int, pid: str, author: str, rating: int, key: str) -> Any:
    language = "en" if int(author.rsplit("-", 1)[1]) % 2 else "de"
    fields = {"productId": pid, "rating": rating, "language": language, "body": "two processes"}
    body = await both.call(side, CREATE, {"input": {**fields, "idempotencyKey": key}}, sub=author)
    return refusal(body, "createComment") or body["data"]["createComment"]


async def _race_creates(both: Both, pid: str) -> dict[str, str]:
    """Every author creates one comment, through either process, all at once: twins of the
    same request (same key) through both processes, and a second request with another key
    (refused: one comment per author and product) through the other process."""
    calls = []
    for n in range(AUTHORS):
        author = f"w-author-{n}"
        rating = (2, 3, 4, 5)[n % 4]
        calls.append((n, author, _create(both, n, pid, author, rating, f"key-{n}")))
        if n < 4:
            calls.append((n + 1, author, _create(both, n + 1, pid, author, rating, f"key-{n}")))
        elif n < 8:
            calls.append((n + 1, author, _create(both, n + 1, pid, author, rating, f"k2-{n}")))
    results = await asyncio.gather(*(call for _, _, call in calls))
    made: dict[str, set[str]] = {}
    created: Counter[str] = Counter()
    for (_, author, _), result in zip(calls, results, strict=True):
        if isinstance(result, str):
            assert result == "LIMIT_REACHED", result
            continue
        made.setdefault(author, set()).add(result["comment"]["commentId"])
        created[author] += result["created"]
    # One comment per author, whichever process took which request.
    assert sorted(made) == sorted(f"w-author-{n}" for n in range(AUTHORS))
    assert all(len(ids) == 1 for ids in made.values()), made
    assert all(count == 1 for count in created.values()), created
    return {author: ids.pop() for author, ids in made.items()}


async def _race_changes(both: Both, pid: str, comments: dict[str, str]) -> set[str]:
    """Edits of rating, deletes, votes and rejections, through both processes at once; the
    comments that stay published."""
    ids = [comments[f"w-author-{n}"] for n in range(AUTHORS)]
    calls = [
        # The same comment edited through both processes at once.
        both.call(0, UPDATE, {"id": ids[0], "rating": 5}, sub="w-author-0"),
        both.call(1, UPDATE, {"id": ids[0], "rating": 2}, sub="w-author-0"),
        # Into and out of 5 stars: the leaderboard moves with them.
        both.call(1, UPDATE, {"id": ids[1], "rating": 5}, sub="w-author-1"),
        both.call(0, UPDATE, {"id": ids[3], "rating": 2}, sub="w-author-3"),
        both.call(1, UPDATE, {"id": ids[4], "rating": 4}, sub="w-author-4"),
        # Deletes racing votes on the same comments.
        both.call(0, DELETE, {"id": ids[12]}, sub="w-author-12"),
        both.call(1, DELETE, {"id": ids[13]}),
        # Rejections racing an edit by the author.
        both.call(0, MODERATE, {"id": ids[10]}),
        both.call(1, UPDATE, {"id": ids[10], "rating": 3}, sub="w-author-10"),
        both.call(1, MODERATE, {"id": ids[11]}),
        # One voter changing their mind through both processes at once.
        both.call(0, VOTE, {"id": ids[6], "vote": "HELPFUL"}, sub="w-voter-0"),
        both.call(1, VOTE, {"id": ids[6], "vote": "NOT_HELPFUL"}, sub="w-voter-0"),
    ]
    for v in range(1, 8):
        for n in (6, 7, 12, 13):
            calls.append(both.call(v + n, VOTE, {"id": ids[n], "vote": "HELPFUL"}, f"w-voter-{v}"))
    for body in await asyncio.gather(*calls):
        assert "errors" not in body, body
    gone = {ids[10], ids[11], ids[12], ids[13]}
    for side in (0, 1):
        _, nodes = await both.listing(side, pid, None, None)
        votes = {n["commentId"]: (n["helpfulCount"], n["notHelpfulCount"]) for n in nodes}
        assert votes[ids[7]] == (7, 0)
        assert votes[ids[6]] in ((8, 0), (7, 1))
    return set(ids) - gone


async def _agree(both: Both, pid: str, published: set[str]) -> None:
    """Every listing, the stats and the leaderboard read the same through both processes,
    and list exactly the published comments."""
    for lang, ratings in FILTERS:
        seen = [await both.listing(side, pid, lang, ratings) for side in (0, 1)]
        for total, nodes in seen:
            assert total == len(nodes) == len(_ids(nodes)), (lang, ratings, total, len(nodes))
        assert seen[0] == seen[1], (lang, ratings)
        if lang is None and ratings is None:
            assert _ids(seen[0][1]) == published
    stats = [await both.stats(side, pid) for side in (0, 1)]
    assert stats[0] == stats[1]
    total, histogram, five = stats[0]
    assert total == len(published)
    assert five == histogram.get(5, 0)


async def _fresh_each_time(both: Both, pid: str, published: set[str]) -> None:
    """A write through one process is seen by the next read through the other, in every
    listing that holds it, the one-star listings (skipped so far: no comment had one star)
    among them; nothing is kept per process that would hide it."""
    for n in range(4):
        writer, reader = n % 2, (n + 1) % 2
        author = f"w-late-{n}"
        result = await _create(both, writer, pid, author, 1, f"late-{n}")
        assert not isinstance(result, str), result
        cid = result["comment"]["commentId"]
        published.add(cid)
        total, nodes = await both.listing(reader, pid, None, [1])
        assert cid in _ids(nodes)
        assert total == len(nodes)
        total, nodes = await both.listing(reader, pid, None, None)
        assert _ids(nodes) == published
        assert total == len(published)
        if n % 2:
            body = await both.call(reader, DELETE, {"id": cid})
            assert refusal(body, "deleteComment") is None, body
            published.discard(cid)
            total, nodes = await both.listing(writer, pid, None, [1, 2])
            assert cid not in _ids(nodes)
            assert total == len(nodes)
        _, histogram, _ = await both.stats(reader, pid)
        _, nodes = await both.listing(writer, pid, None, [1])
        assert histogram[1] == len(nodes)


async def _persisted_queries(both: Both, pid: str) -> None:
    """A hash registered with one process is unknown to the other, which asks for the
    document (Apollo's link then sends it) and runs it from then on."""
    query = "query($pid: ID!) { product(productId: $pid) { stats { total } } }"
    digest = {"persistedQuery": {"version": 1, "sha256Hash": sha256_hex(query)}}
    first, second = (s.graphql_url for s in both.servers)
    registered = await both.http.post(
        first, json={"query": query, "variables": {"pid": pid}, "extensions": digest}
    )
    assert registered.json()["data"]["product"]["stats"]["total"] >= 0
    by_hash = {"variables": {"pid": pid}, "extensions": digest}
    missed = (await both.http.post(second, json=by_hash)).json()
    assert missed["errors"][0]["extensions"]["code"] == "PERSISTED_QUERY_NOT_FOUND"
    sent = (await both.http.post(second, json={**by_hash, "query": query})).json()
    again = (await both.http.post(second, json=by_hash)).json()
    still = (await both.http.post(first, json=by_hash)).json()
    assert sent["data"] == again["data"] == still["data"]


@contextmanager
def two_servers(endpoint_url: str, table: str) -> Iterator[list[LiveServer]]:
    """Two server processes on one table, started side by side."""
    managers = [live_server(endpoint_url, table, SECRET, log=None, **LIMITS) for _ in range(2)]
    with ExitStack() as stack:
        with ThreadPoolExecutor(2) as pool:
            starts = [pool.submit(manager.__enter__) for manager in managers]
        for manager, start in zip(managers, starts, strict=True):
            if start.exception() is None:
                stack.push(manager.__exit__)
        yield [start.result() for start in starts]


@pytest.mark.slow
async def test_two_processes_race_writes_and_stay_exact(
    engine: LocalEngine, table: TableRef
) -> None:
    own = await own_table(table, "workers")
    pid = "w-product"
    with two_servers(engine.endpoint_url, own.name) as servers:
        async with httpx.AsyncClient(timeout=30) as http:
            both = Both(servers, http)
            # Both processes read the empty product first: whatever they keep of it must
            # not outlive the writes of the other.
            await _agree(both, pid, set())
            comments = await _race_creates(both, pid)
            await _agree(both, pid, set(comments.values()))
            published = await _race_changes(both, pid, comments)
            await _agree(both, pid, published)
            await _fresh_each_time(both, pid, published)
            await _agree(both, pid, published)
            await _persisted_queries(both, pid)
    report = await verify(own)
    assert report.describe() == []
    # Every author's comment, and the late ones, but those deleted (two of each).
    assert report.comments == AUTHORS


def _children(pid: int) -> list[int]:
    children: list[int] = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        children += [int(c) for c in (task / "children").read_text().split()]
    return children


def _descendants(pid: int) -> list[int]:
    found: list[int] = []
    for child in _children(pid):
        found += [child, *_descendants(child)]
    return found


def _command(pid: int) -> str:
    return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return False
    return state != "Z"


@contextmanager
def _serve(env: dict[str, str], log: Path) -> Iterator[subprocess.Popen[bytes]]:
    with log.open("wb") as output:
        process = subprocess.Popen(
            [str(COMMENTS), "serve", "--workers", "2"],
            env=env,
            cwd=ROOT,
            stdin=subprocess.DEVNULL,
            stdout=output,
            stderr=subprocess.STDOUT,
        )
    try:
        yield process
    finally:
        # Asked to stop first, so that it stops what it started (the development broker,
        # by its PID); killed only if it does not. A killed parent leaves those running.
        if process.poll() is None:
            process.terminate()
            try:
                process.wait(30)
            except subprocess.TimeoutExpired:
                process.kill()
        process.wait()


def _get(url: str, **kwargs: Any) -> httpx.Response:
    # A connection of its own each time: the listening socket hands it to a worker.
    with httpx.Client(timeout=10) as http:
        return http.get(url, **kwargs)


@pytest.mark.slow
@pytest.mark.engine
def test_serve_with_two_workers_shares_one_engine_and_stops_whole(tmp_path: Path) -> None:
    port = free_port()
    env = {k: v for k, v in os.environ.items() if k not in ("DYNAMODB_ENDPOINT_URL", "JWT_SECRET")}
    env.update(
        HOST="127.0.0.1",
        PORT=str(port),
        DATA_DIR=str(tmp_path / "data"),
        SEED_DEMO="false",  # the table is created, not filled: the test needs no data
        ACCESS_LOG="false",
    )
    log = tmp_path / "serve.log"
    base = f"http://127.0.0.1:{port}"
    with _serve(env, log) as process:
        deadline = time.monotonic() + 90
        while True:
            assert process.poll() is None, log.read_text()[-3000:]
            try:
                if _get(f"{base}/healthz").status_code == 200:
                    break
            except httpx.TransportError:
                pass
            assert time.monotonic() < deadline, log.read_text()[-3000:]
            time.sleep(0.2)
        output = log.read_text()
        # One engine, one table, one pair of dev tokens, printed once by the parent.
        assert output.count("DynamoDB Local started") == 1
        assert output.count("Dev token (shopper") == output.count("Dev token (moderator") == 1
        token = output.split("Dev token (moderator", 1)[1].split(": ", 1)[1].split()[0]
        descendants = _descendants(process.pid)
        engines = [p for p in descendants if "DynamoDBLocal.jar" in _command(p)]
        workers = [p for p in _children(process.pid) if "spawn_main" in _command(p)]
        commands = [_command(p) for p in descendants]
        assert len(engines) == 1, commands
        assert len(workers) == 2, commands
        # Each worker answers alone (the other stopped), on the one engine and table, and
        # accepts the token the parent printed.
        for worker in workers:
            others = [w for w in workers if w != worker]
            for other in others:
                os.kill(other, signal.SIGSTOP)
            try:
                for _ in range(3):
                    answer = _get(
                        f"{base}/graphql",
                        params={"query": WHO},
                        headers={"authorization": f"Bearer {token}"},
                    ).json()
                    assert answer["data"] == {
                        "viewer": {"authorId": "dev-user"},
                        "product": {"stats": {"total": 0}},
                    }, answer
            finally:
                for other in others:
                    os.kill(other, signal.SIGCONT)
        # The shopper's dev token, printed beside it, and one `comments token` mints by
        # itself from the development secret the server keeps in DATA_DIR (no JWT_SECRET).
        printed = output.split("Dev token (shopper", 1)[1].split(": ", 1)[1].split()[0]
        minted = subprocess.run(
            [str(COMMENTS), "token", "shopper"],
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
            check=True,
        ).stdout.strip()
        for shopper, subject in ((printed, "dev-shopper"), (minted, "shopper")):
            answer = _get(
                f"{base}/graphql",
                params={"query": WHO},
                headers={"authorization": f"Bearer {shopper}"},
            ).json()
            assert answer["data"]["viewer"] == {"authorId": subject}, answer
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=30) == 0, log.read_text()[-3000:]
        # Nothing is left behind: no worker, no engine.
        deadline = time.monotonic() + 10
        while any(_alive(p) for p in descendants) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert [p for p in descendants if _alive(p)] == []


def _environment(pid: int) -> dict[str, str]:
    pairs = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
    return dict(p.decode().split("=", 1) for p in pairs if b"=" in p)


def _workers(pid: int) -> list[int]:
    return [p for p in _children(pid) if "spawn_main" in _command(p)]


COUNTED = 'query Counted { product(productId: "workers-metrics") { stats { total } } }'
REQUESTS = "comments_graphql_request_duration_seconds_count"
FANOUT = "comments_fanout_processes"


def _counted_in(path: Path) -> float:
    """Requests named Counted that one process's file of histograms holds (0 before it
    has one, or while the process is making it: an empty file)."""
    if not path.exists() or path.stat().st_size == 0:
        return 0.0
    # prometheus-client leaves merge unannotated.
    families = MultiProcessCollector.merge([str(path)])  # type: ignore[no-untyped-call]
    counted: float = sum(
        s.value
        for family in families
        for s in family.samples
        if s.name == REQUESTS and s.labels.get("operation") == "Counted"
    )
    return counted


@pytest.mark.engine
def test_two_workers_metrics_add_up_and_an_ended_worker_is_forgotten(
    engine: LocalEngine, table: TableRef, tmp_path: Path
) -> None:
    port = free_port()
    env = {k: v for k, v in os.environ.items() if k != "PROMETHEUS_MULTIPROC_DIR"}
    env.update(
        DYNAMODB_ENDPOINT_URL=engine.endpoint_url,
        DYNAMODB_TABLE=table.name,
        JWT_SECRET=SECRET,
        HOST="127.0.0.1",
        PORT=str(port),
        ACCESS_LOG="false",
    )
    log = tmp_path / "serve.log"
    base = f"http://127.0.0.1:{port}"

    def healthy(process: subprocess.Popen[bytes]) -> None:
        deadline = time.monotonic() + 90
        while True:
            assert process.poll() is None, log.read_text()[-3000:]
            try:
                if _get(f"{base}/healthz").status_code == 200:
                    return
            except httpx.TransportError:
                pass
            assert time.monotonic() < deadline, log.read_text()[-3000:]
            time.sleep(0.2)

    with _serve(env, log) as process:
        healthy(process)
        workers = _workers(process.pid)
        assert len(workers) == 2
        # A private directory, the same for both, that the parent made (the test's
        # environment names none).
        [where] = {_environment(w)["PROMETHEUS_MULTIPROC_DIR"] for w in workers}
        directory = Path(where)
        assert directory.stat().st_mode & 0o777 == 0o700
        # New connections until both workers have served some: the listening socket hands
        # each to one of them. (Routing them by stopping a worker with SIGSTOP proved
        # unreliable: a stopped worker's wakeup on the shared socket held connections.)
        sent = 0
        counted = dict.fromkeys(workers, 0.0)
        while not all(counted.values()):
            assert sent < 200, counted
            answer = _get(f"{base}/graphql", params={"query": COUNTED}).json()
            assert "errors" not in answer, answer
            sent += 1
            counted = {w: _counted_in(directory / f"histogram_{w}.db") for w in workers}
        # Each worker counted its own requests, in its own files ... (a worker counts a
        # request once its answer has gone, so the last count may land a moment later)
        deadline = time.monotonic() + 10
        while sum(counted.values()) < sent and time.monotonic() < deadline:
            time.sleep(0.05)
            counted = {w: _counted_in(directory / f"histogram_{w}.db") for w in workers}
        assert sum(counted.values()) == sent
        # ... and a scrape, whichever worker answers it, adds up both.
        for _ in range(4):
            samples = parse_scrape(_get(f"{base}/metrics").text)
            assert sample(samples, REQUESTS, operation="Counted", outcome="ok") == sent
            # Both take the table's changes from the broker serve started for them.
            assert sample(samples, FANOUT) == 2
        # A worker that dies is replaced; its live gauges stop counting, its counts stay.
        ended, kept = workers
        assert (directory / f"gauge_livesum_{ended}.db").exists()
        os.kill(ended, signal.SIGKILL)
        deadline = time.monotonic() + 30
        while (directory / f"gauge_livesum_{ended}.db").exists():
            assert time.monotonic() < deadline, log.read_text()[-3000:]
            time.sleep(0.1)
        assert (directory / f"gauge_livesum_{kept}.db").exists()
        assert (directory / f"histogram_{ended}.db").exists()
        # The replacement has started (stopped while starting, it would fail serve).
        started = "Application startup complete."
        deadline = time.monotonic() + 90
        while log.read_text().count(started) < 3:
            assert time.monotonic() < deadline, log.read_text()[-3000:]
            time.sleep(0.1)
        samples = parse_scrape(_get(f"{base}/metrics").text)
        assert sample(samples, REQUESTS, operation="Counted", outcome="ok") == sent
        assert sample(samples, FANOUT) == 2  # the replacement, not the dead worker
        # The parent counted the replacement; the dead worker's memory is no longer
        # shown, the CPU time it used still is.
        assert sample(samples, "comments_worker_restarts_total") == 1
        memory = "comments_process_resident_memory_bytes"
        assert sample(samples, memory, pid=str(ended)) == 0
        assert sample(samples, memory, pid=str(kept)) > 0
        assert sample(samples, "comments_process_cpu_seconds_total", pid=str(ended)) > 0
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=30) == 0, log.read_text()[-3000:]
    assert not directory.exists()


def test_a_worker_that_dies_while_its_health_check_is_out_is_replaced_at_once(
    tmp_path: Path,
) -> None:
    # The supervisor pings a worker and waits up to HEALTH_CHECK_SECONDS for the answer; a
    # worker that dies meanwhile must be found at once (its pipe reads as closed), not when
    # the wait runs out.
    config = uvicorn.Config(
        "starlette.applications:Starlette",
        factory=True,
        host="127.0.0.1",
        port=0,
        workers=1,
        timeout_worker_healthcheck=HEALTH_CHECK_SECONDS,
        log_level="warning",
    )
    handlers = {sig: signal.getsignal(sig) for sig in SIGNALS}  # the supervisor takes them
    sock = config.bind_socket()
    try:
        supervisor = Supervisor(config, [sock], str(tmp_path), Leaving(Drain(), 0))
        supervisor.init_processes()
        [worker] = supervisor.processes
        assert worker.pid is not None
        os.kill(worker.pid, signal.SIGSTOP)  # alive, but it cannot answer a ping
        try:
            with ThreadPoolExecutor(1) as pool:
                checking = pool.submit(supervisor.keep_subprocess_alive)
                time.sleep(0.5)  # the ping is out
                os.kill(worker.pid, signal.SIGKILL)
                started = time.monotonic()
                checking.result(timeout=HEALTH_CHECK_SECONDS + 10)
            assert time.monotonic() - started < 5
            [replacement] = supervisor.processes
            assert replacement.pid not in (None, worker.pid)
            # Counted, in a file of the parent's own, as a worker's scrape reads it.
            families = MultiProcessCollector.merge(  # type: ignore[no-untyped-call]
                [str(f) for f in tmp_path.glob("*.db")]
            )
            restarts = [s.value for f in families for s in f.samples]
            assert restarts == [1]
        finally:
            supervisor.should_exit.set()
            supervisor.terminate_all()
            supervisor.join_all()
    finally:
        sock.close()
        for sig, handler in handlers.items():
            signal.signal(sig, handler)


def test_workers_must_be_one_to_a_cap() -> None:
    assert Settings(workers=4).workers == 4
    for refused in (0, 65):
        with pytest.raises(ValueError, match="workers"):
            Settings(workers=refused)


def _arrived(config: WorkerConfig, answers: Connection) -> None:
    """In a spawned process, as a worker gets it: what the configuration carries, and then,
    once asked, whether the parent's drain has begun."""
    app, protocol = config.app, config.http
    assert isinstance(app, WorkerApp)
    assert isinstance(protocol, type)
    prepared = app.prepared
    limits = getattr(protocol, "limits", None)  # a class made on arrival, by guarded_protocol
    answers.send((limits, prepared.settings, prepared.dev_tokens, app.drain.draining))
    answers.recv()
    answers.send(app.drain.draining)


def test_a_workers_configuration_travels_with_its_head_limits_and_the_parents_drain() -> None:
    limits = HeadLimits(max_bytes=4096, max_headers=20, timeout=3)
    settings = Settings(dynamodb_endpoint_url="http://127.0.0.1:1", jwt_secret="s" * 32)
    drain = Drain()
    config = WorkerConfig(
        WorkerApp(Prepared(settings, DevTokens("a-shopper", "a-moderator")), os.getpid(), drain),
        protocol=("h11", limits),
        workers=2,
    )
    # As uvicorn's supervisor sends it: pickled to a spawned process.
    spawn = multiprocessing.get_context("spawn")
    ours, theirs = spawn.Pipe()
    worker = spawn.Process(target=_arrived, args=(config, theirs))
    worker.start()
    try:
        assert ours.poll(60)
        arrived = ours.recv()
        assert arrived == (limits, settings, DevTokens("a-shopper", "a-moderator"), False)
        # The drain is shared, not copied: begun here, it has begun there.
        drain.begin()
        ours.send("begun")
        assert ours.poll(60)
        assert ours.recv() is True
    finally:
        worker.join(60)
        if worker.exitcode is None:
            worker.kill()
            worker.join()
    assert worker.exitcode == 0
