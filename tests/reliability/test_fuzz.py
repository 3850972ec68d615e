"""Schema fuzzing (schemathesis, GraphQL mode) against a live server: the short form of
`python -m reliability.fuzz`. No 5xx, well-formed GraphQL, contract codes, no leaks, and
the counters still exact afterwards."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from graphql import build_schema

from reliability.fuzz import check_response, fuzz
from resolvers.auth import mint
from server.dev.local_engine import LocalEngine
from storage.engine.table import TableRef
from storage.ops.verify import verify
from testing.live_server import ROOT, LiveServer, live_server
from tests.api_helpers import SECRET
from tests.helpers import own_table

EXAMPLES = 25  # per root field and auth mode


def root_fields() -> int:
    """Query and mutation fields in the committed schema: what the fuzzer must cover."""
    schema = build_schema((ROOT / "schema.graphql").read_text())
    roots = (schema.query_type, schema.mutation_type)
    return sum(len(root.fields) for root in roots if root is not None)


@pytest.fixture(scope="module")
async def fuzz_table(table: TableRef) -> TableRef:
    return await own_table(table, "fuzz")


@pytest.fixture(scope="module")
def server(engine: LocalEngine, fuzz_table: TableRef) -> Iterator[LiveServer]:
    with live_server(engine.endpoint_url, fuzz_table.name, SECRET) as running:
        yield running


@pytest.mark.slow
async def test_fuzzing_finds_nothing(server: LiveServer, fuzz_table: TableRef) -> None:
    token = mint(SECRET, "fuzzer", roles=["moderator", "merchant"])
    author = mint(SECRET, "fuzz-author")
    report = fuzz(server.graphql_url, token, examples=EXAMPLES, authors=[author])
    assert report.problems == [], "\n".join(map(str, report.problems[:5]))
    assert report.operations == root_fields()
    assert report.examples == report.operations * 2 * EXAMPLES
    assert all(status < 500 for status in report.statuses)
    # Steering reached past validation: reads and writes really ran.
    assert report.accepted["Query.product"] > 0
    assert report.accepted["Mutation.createComment"] > 0
    # Steered ids name real objects (seeded before fuzzing), so these resolve too.
    assert report.accepted["Query.node"] > 0
    assert report.accepted["Mutation.deleteComment"] > 0
    # Seeded comments by another author are what reports, replies, votes and decisions act on.
    for mutation in ("reportComment", "replyToComment", "moderateComment", "voteHelpful"):
        # The report says which codes came back instead, should none be accepted.
        assert report.accepted[f"Mutation.{mutation}"] > 0, (mutation, report.codes)
    assert "UNAUTHENTICATED" in report.codes
    outcome = await verify(fuzz_table)
    assert outcome.describe() == []
    assert outcome.comments >= report.accepted["Mutation.createComment"]


@pytest.mark.parametrize(
    ("status", "text", "problem"),
    [
        (502, "<html>bad gateway</html>", "status 502"),
        (200, "not json", "the body is not JSON"),
        (200, "[]", "not a GraphQL response (no data, no errors)"),
        (200, '{"errors": [{"message": "x"}]}', "an error without a contract code: None"),
        (
            200,
            '{"errors": [{"message": "x", "extensions": {"code": "INTERNAL_SERVER_ERROR"}}]}',
            "an unexpected error (masked as INTERNAL_SERVER_ERROR)",
        ),
        (
            200,
            '{"errors": [{"message": "Traceback (most recent call last)", '
            '"extensions": {"code": "BAD_USER_INPUT"}}]}',
            "the error leaks ['Traceback']",
        ),
        (
            200,
            '{"errors": [{"message": "key PRODUCT#p/en", "extensions": {"code": "FORBIDDEN"}}]}',
            "the error leaks ['PRODUCT#']",
        ),
        (200, '{"data": {"x": 1}}', None),
        (
            200,
            '{"data": {"createComment": {"userErrors": [{"message": "m", "code": "WRONG"}]}}}',
            "a userError without a contract code: 'WRONG'",
        ),
        (
            200,
            '{"data": {"a": [{"userErrors": [{"message": "at GSISK", "code": "INVALID"}]}]}}',
            "the userError leaks ['GSISK']",
        ),
        (
            200,
            '{"data": {"c": {"userErrors": [{"message": null, "code": "INVALID"}]}}}',
            "a userError without a message",
        ),
        (200, '{"data": {"c": {"userErrors": [{"field": null}]}}}', None),
        (
            400,
            '{"data": null, "errors": [{"message": "m", '
            '"extensions": {"code": "BAD_USER_INPUT"}}]}',
            None,
        ),
    ],
)
def test_the_checks_catch_what_they_should(status: int, text: str, problem: str | None) -> None:
    assert check_response(status, text)[0] == problem


def test_a_refused_input_is_not_counted_as_accepted() -> None:
    refused = (
        '{"data": {"createComment": {"comment": null, '
        '"userErrors": [{"message": "m", "code": "INVALID"}]}}}'
    )
    assert check_response(200, refused) == (None, [], False)
    done = '{"data": {"createComment": {"comment": {"id": "x"}, "userErrors": []}}}'
    assert check_response(200, done) == (None, [], True)
    # userErrors left out of the selection: the nulled payload still says nothing was written.
    assert check_response(200, '{"data": {"deleteComment": {"deletedId": null}}}')[2] is False
    assert check_response(200, '{"data": {"createComment": {"created": false}}}')[2] is False
