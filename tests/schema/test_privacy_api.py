"""Privacy requests through the API: moderators export and erase an author's data, anyone
else is refused with FORBIDDEN; the author's new comments are refused with a stable
reason while an erasure of theirs runs."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator

import pytest

from storage.engine.table import TableRef
from storage.model.erasure import Mode
from storage.ops.erasure import start_erasure
from storage.ops.verify import verify
from tests.api_helpers import Api, running_api, token
from tests.helpers import own_table

MODERATOR = token("mod", moderator=True)
SHOPPER = token("shopper")
EXPORT = "query($s: String!) { exportAuthor(subject: $s) }"
ERASE = """mutation($i: EraseAuthorInput!) {
  eraseAuthor(input: $i) {
    erasure { requestId mode state counts { comments votes reports replies } finishedAt }
    userErrors { field code message }
  }
}"""
STATUS = "query($r: ID!) { authorErasure(requestId: $r) { state mode counts { comments } } }"
CREATE = """mutation($p: ID!) {
  createComment(input: {productId: $p, rating: 5, language: "en", body: "Fine"}) {
    comment { id author }
    userErrors { code message }
  }
}"""
VOTE = """mutation($c: ID!) {
  voteHelpful(input: {id: $c, vote: HELPFUL}) { userErrors { code } }
}"""


@pytest.fixture(scope="module")
async def api(table: TableRef) -> AsyncIterator[tuple[Api, TableRef]]:
    own = await own_table(table, "privacyapi")
    async with running_api(own.client, own.name, erasure_mode="ANONYMIZE") as running:
        yield running, own


async def _create(client: Api, author: str, product: str) -> str:
    made = await client.data(CREATE, {"p": product}, token(author, name=author.title()))
    assert made["createComment"]["userErrors"] == []
    return str(made["createComment"]["comment"]["id"])


@pytest.mark.parametrize(
    ("operation", "variables"),
    [
        (EXPORT, {"s": "ann"}),
        (ERASE, {"i": {"subject": "ann"}}),
        (STATUS, {"r": "0" * 32}),
    ],
    ids=["export", "erase", "status"],
)
async def test_only_moderators_make_privacy_requests(
    api: tuple[Api, TableRef], operation: str, variables: dict[str, object]
) -> None:
    client, _ = api
    for who in (SHOPPER, None):
        refused = await client.gql(operation, variables, who)
        codes = {e["extensions"]["code"] for e in refused["errors"]}
        assert codes <= {"FORBIDDEN", "UNAUTHENTICATED"}
        assert codes
    assert "errors" not in await client.gql(operation, variables, MODERATOR)


async def test_export_then_erase_through_the_api(api: tuple[Api, TableRef]) -> None:
    client, own = api
    mine = [await _create(client, "erin", p) for p in ("pa1", "pa2")]
    theirs = await _create(client, "finn", "pa1")
    voted = await client.data(VOTE, {"c": theirs}, token("erin"))
    assert voted["voteHelpful"]["userErrors"] == []
    exported = json.loads((await client.data(EXPORT, {"s": "erin"}, MODERATOR))["exportAuthor"])
    assert len(exported["comments"]) == 2
    assert {c["authorName"] for c in exported["comments"]} == {"Erin"}
    assert [v["vote"] for v in exported["votes"]] == ["HELPFUL"]
    assert exported["photos"] == []
    assert exported["subject"] == "erin"
    # The shop's setting (ANONYMIZE here) when the request names no mode.
    done = (await client.data(ERASE, {"i": {"subject": "erin"}}, MODERATOR))["eraseAuthor"]
    assert done["userErrors"] == []
    erasure = done["erasure"]
    assert (erasure["mode"], erasure["state"]) == ("ANONYMIZE", "DONE")
    assert erasure["counts"] == {"comments": 2, "votes": 1, "reports": 0, "replies": 0}
    status = await client.data(STATUS, {"r": erasure["requestId"]}, MODERATOR)
    assert status["authorErasure"] == {
        "state": "DONE",
        "mode": "ANONYMIZE",
        "counts": {"comments": 2},
    }
    after = json.loads((await client.data(EXPORT, {"s": "erin"}, MODERATOR))["exportAuthor"])
    assert (after["comments"], after["votes"]) == ([], [])
    shown = await client.data(
        "query($c: ID!) { node(id: $c) { ... on Comment { author } } }", {"c": mine[0]}, SHOPPER
    )
    assert shown["node"]["author"] == "Anonymous"
    assert (await verify(own)).exact


async def test_the_authors_comments_wait_while_their_erasure_runs(
    api: tuple[Api, TableRef],
) -> None:
    client, own = api
    await _create(client, "gus", "pb1")
    running = await start_erasure(own, "gus", Mode.DELETE)
    refused = (await client.data(CREATE, {"p": "pb2"}, token("gus")))["createComment"]
    assert refused["comment"] is None
    assert [e["code"] for e in refused["userErrors"]] == ["FORBIDDEN"]
    assert refused["userErrors"][0]["message"].startswith("AUTHOR_ERASURE_RUNNING")
    # The same request again (here with another mode) goes on with the running erasure.
    variables = {"i": {"subject": "gus", "mode": "ANONYMIZE"}}
    done = (await client.data(ERASE, variables, MODERATOR))["eraseAuthor"]["erasure"]
    assert (done["requestId"], done["mode"], done["state"]) == (
        running.request_id,
        "DELETE",
        "DONE",
    )
    assert done["counts"]["comments"] == 1
    # After it, the subject's writes are new data.
    await _create(client, "gus", "pb2")
    assert (await verify(own)).exact


async def test_a_bad_subject_is_a_user_error(api: tuple[Api, TableRef]) -> None:
    client, _ = api
    done = (await client.data(ERASE, {"i": {"subject": ""}}, MODERATOR))["eraseAuthor"]
    assert done["erasure"] is None
    assert [(e["field"], e["code"]) for e in done["userErrors"]] == [
        (["input", "subject"], "INVALID")
    ]
    refused = await client.gql(EXPORT, {"s": "x" * 600}, MODERATOR)
    assert refused["errors"][0]["extensions"]["code"] == "BAD_USER_INPUT"


async def test_one_export_a_request_and_each_spends_a_moderators_turn(table: TableRef) -> None:
    """An export scans the whole table: aliases cannot multiply it, and a moderator's
    turns (the rate their erasures and decisions share) bound how often it runs."""
    own = await own_table(table, "privacyscans")
    async with running_api(own.client, own.name, moderations_per_hour=1) as client:
        twice = await client.gql(
            '{ a: exportAuthor(subject: "ann") b: exportAuthor(subject: "bob") }',
            None,
            MODERATOR,
        )
        codes = [e["extensions"]["code"] for e in twice["errors"]]
        assert codes == ["QUERY_TOO_COMPLEX"]
        assert "one such field a request" in twice["errors"][0]["message"]
        # The first alias ran and spent the hour's one turn: the next export waits.
        again = await client.gql(EXPORT, {"s": "ann"}, MODERATOR)
        assert again["errors"][0]["extensions"]["code"] == "RATE_LIMITED"
