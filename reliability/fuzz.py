"""Fuzz a live server from `schema.graphql` with schemathesis (GraphQL mode).

Every root field is exercised with generated queries and arguments, without a token and
with a valid one. Each response must be well-formed GraphQL (an object with `data` and/or a
list of `errors`), no status may be 5xx, every error must carry a contract code (and none
may be INTERNAL_SERVER_ERROR, which would be a bug we masked), and no error message may
leak internals.

    python -m reliability.fuzz --examples 500    # the long form (docs/reliability.md)
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import hypothesis
import requests
import schemathesis
from graphql import (
    ArgumentNode,
    GraphQLError,
    IntValueNode,
    ListValueNode,
    NullValueNode,
    ObjectFieldNode,
    StringValueNode,
    ValueNode,
    Visitor,
    parse,
    print_ast,
    visit,
)
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from schemathesis.core.result import Err
from schemathesis.graphql import nodes

from testing.live_server import ROOT, rig

# The top-level error codes of contract v2 (input problems of mutations are userErrors).
CODES = frozenset(
    {
        "BAD_USER_INPUT",
        "UNAUTHENTICATED",
        "FORBIDDEN",
        "CONFLICT",
        "QUERY_TOO_COMPLEX",
        "RATE_LIMITED",
        "PERSISTED_QUERY_NOT_FOUND",
        "PERSISTED_QUERY_NOT_SUPPORTED",
        "STORAGE_UNAVAILABLE",
        "INTERNAL_SERVER_ERROR",
    }
)
# The contract's UserErrorCode: what mutation payloads may report in userErrors.
USER_ERROR_CODES = frozenset(
    {
        "INVALID",
        "TOO_LONG",
        "REQUIRED",
        "NOT_FOUND",
        "FORBIDDEN",
        "CHANGED",
        "IDEMPOTENCY_KEY_REUSED",
        "LIMIT_REACHED",
    }
)
# Words no error message may contain: stack traces, AWS and engine text, table, index and
# key formats. (Data may name indexes: the `plan` field explains the query by design.)
LEAKS = (
    "Traceback",
    'File "',
    "botocore",
    "ClientError",
    "DynamoDB",
    "dynamodb",
    "ConditionalCheck",
    "ProvisionedThroughput",
    "TransactionCanceled",
    "GSISK",
    "GSIPK",
    "PRODUCT#",
    "COMMENT#",
    "LEADERS",
    "byLangAndRating",
    "byRating",
    "comments_test",
)

# DateTime appears only in outputs; a strategy is still required to load the schema.
schemathesis.graphql.scalar(
    "DateTime",
    st.datetimes(min_value=datetime(2000, 1, 1), max_value=datetime(2100, 1, 1)).map(
        lambda d: nodes.String(d.replace(tzinfo=UTC).isoformat())
    ),
)


@dataclass
class Problem:
    operation: str
    authenticated: bool
    reason: str
    request: str
    response: str

    def __str__(self) -> str:
        auth = "with token" if self.authenticated else "without token"
        return (
            f"{self.operation} ({auth}): {self.reason}\n  request: {self.request[:400]}\n"
            f"  response: {self.response[:400]}"
        )


@dataclass
class FuzzReport:
    examples: int = 0
    operations: int = 0  # root fields fuzzed (each in both auth modes)
    statuses: Counter[int] = field(default_factory=Counter)
    codes: Counter[str] = field(default_factory=Counter)
    accepted: Counter[str] = field(default_factory=Counter)  # root field -> clean answers
    problems: list[Problem] = field(default_factory=list)
    seconds: float = 0.0

    def summary(self) -> dict[str, Any]:
        return {
            "examples": self.examples,
            "operations": self.operations,
            "accepted": dict(sorted(self.accepted.items())),
            "statuses": dict(sorted(self.statuses.items())),
            "errorCodes": dict(self.codes.most_common()),
            "problems": len(self.problems),
            "seconds": round(self.seconds, 1),
        }


def check_response(status: int, text: str) -> tuple[str | None, list[str], bool]:
    """(problem or None, the error codes, whether data came back without errors)."""
    if status >= 500:
        return f"status {status}", [], False
    try:
        body = json.loads(text)
    except ValueError:
        return "the body is not JSON", [], False
    if not isinstance(body, dict) or not ({"data", "errors"} & body.keys()):
        return "not a GraphQL response (no data, no errors)", [], False
    errors = body.get("errors") or []
    if not isinstance(errors, list):
        return "errors is not a list", [], False
    codes: list[str] = []
    for error in errors:
        if not isinstance(error, dict) or not isinstance(error.get("message"), str):
            return "an error without a message", codes, False
        code = (error.get("extensions") or {}).get("code")
        if code not in CODES:
            return f"an error without a contract code: {code!r}", codes, False
        codes.append(code)
        if code == "INTERNAL_SERVER_ERROR":
            return "an unexpected error (masked as INTERNAL_SERVER_ERROR)", codes, False
        leaked = [word for word in LEAKS if word in json.dumps(error)]
        if leaked:
            return f"the error leaks {leaked}", codes, False
    data = body.get("data")
    refusals = list(_user_errors(data))
    for problem in refusals:
        # The selection may leave fields out; those it asked for must be well formed.
        if not isinstance(problem, dict):
            return "a userError that is not an object", codes, False
        if "message" in problem and not isinstance(problem["message"], str):
            return "a userError without a message", codes, False
        if "code" in problem and problem["code"] not in USER_ERROR_CODES:
            return f"a userError without a contract code: {problem['code']!r}", codes, False
        leaked = [word for word in LEAKS if word in json.dumps(problem)]
        if leaked:
            return f"the userError leaks {leaked}", codes, False
    # Accepted: an answer that did what it was asked, no error and no refused input.
    done = data is not None and not refusals and not _wrote_nothing(data)
    return None, codes, not errors and done


# Payload fields that are null (or false) exactly when a mutation wrote nothing, whatever
# else the selection asked for: it may leave userErrors out.
_NOTHING_WRITTEN = {"comment": None, "commentEdge": None, "deletedId": None, "created": False}


def _wrote_nothing(data: object) -> bool:
    if not isinstance(data, dict):
        return False
    return any(
        isinstance(payload, dict)
        and any(key in payload and payload[key] == v for key, v in _NOTHING_WRITTEN.items())
        for payload in data.values()
    )


def _user_errors(data: object) -> list[object]:
    """Every entry of every ``userErrors`` list in a response's data."""
    found: list[object] = []
    if isinstance(data, dict):
        for key, value in data.items():
            if key == "userErrors" and isinstance(value, list):
                found += value
            else:
                found += _user_errors(value)
    elif isinstance(data, list):
        for value in data:
            found += _user_errors(value)
    return found


PRODUCTS = ("fz-a", "fz-b", "fz-c")
GROUPS = ("fz-group", "fz-other-group")
UNPUBLISHING = {"Mutation.moderateComment": 1, "Mutation.deleteComment": 2}  # and in this order
LANGUAGES = ("en", "de", "pt-br")
SEED_COMMENT = """mutation($input: CreateCommentInput!) {
  createComment(input: $input) {
    comment { id commentId product { id } } userErrors { message } } }"""


@dataclass(frozen=True, slots=True)
class Known:
    """Objects that exist when fuzzing starts, so that steered ids name real ones."""

    global_ids: tuple[str, ...] = ()  # Relay ids of comments and products
    comment_ids: tuple[str, ...] = ()


def seed_known(
    session: requests.Session, url: str, token: str, others: Sequence[str] = ()
) -> Known:
    """Create two comments per product (idempotently: a rerun finds the same ones).

    The authors take turns between ``token`` and ``others``: comments by someone else are
    what reports, replies and moderation act on; the fuzzer's own are what edits act on."""
    authors = (token, *others)
    global_ids: list[str] = []
    comment_ids: list[str] = []
    for number in range(2 * len(PRODUCTS)):
        variables: dict[str, Any] = {
            "input": {
                "productId": PRODUCTS[number % len(PRODUCTS)],
                "rating": number % 5 + 1,
                "language": LANGUAGES[number % len(LANGUAGES)],
                "body": f"fuzzing seed {number}",
                "idempotencyKey": f"fuzz-seed-{number}",
            }
        }
        response = session.post(
            url,
            json={"query": SEED_COMMENT, "variables": variables},
            headers={"Authorization": f"Bearer {authors[number % len(authors)]}"},
            timeout=30,
        )
        body = response.json()
        if body.get("errors"):
            raise RuntimeError(f"seeding the fuzz target failed: {body['errors'][0]['message']}")
        payload = body["data"]["createComment"]
        if payload["userErrors"]:
            raise RuntimeError(f"seeding the fuzz target failed: {payload['userErrors']}")
        comment = payload["comment"]
        comment_ids.append(comment["commentId"])
        global_ids += [comment["id"], comment["product"]["id"]]
    return Known(tuple(dict.fromkeys(global_ids)), tuple(comment_ids))


def _int(value: int) -> IntValueNode:
    return IntValueNode(value=str(value))


def _string(value: str) -> StringValueNode:
    return StringValueNode(value=value)


def _valid(name: str, data: st.DataObject, known: Known) -> ValueNode | None:
    """A valid value for an argument or input field of this name, drawn; None: keep it."""
    if name == "id" and known.global_ids:
        return _string(data.draw(st.sampled_from(known.global_ids)))
    if name == "ids" and known.global_ids:
        named = data.draw(st.lists(st.sampled_from(known.global_ids), max_size=5))
        return ListValueNode(values=tuple(_string(i) for i in named))
    if name == "commentId" and known.comment_ids:
        return _string(data.draw(st.sampled_from(known.comment_ids)))
    if name == "productId":
        return _string(data.draw(st.sampled_from(PRODUCTS)))
    if name == "groupId":
        return _string(data.draw(st.sampled_from(GROUPS)))
    if name == "language":
        return _string(data.draw(st.sampled_from(LANGUAGES)))
    if name == "rating":
        return _int(data.draw(st.integers(1, 5)))
    if name == "ratings":
        picked = data.draw(st.sets(st.integers(1, 5), max_size=5))
        return ListValueNode(values=tuple(_int(r) for r in sorted(picked)))
    if name in ("first", "last"):
        return _int(data.draw(st.integers(1, 30)))
    if name in ("after", "before"):
        return NullValueNode()
    if name in ("body", "note"):
        # Letters, digits, punctuation and spaces: always acceptable (the unsteered half
        # tries the rest: controls, bidi overrides, invisible-only texts).
        visible = st.characters(categories=["L", "N", "P", "Zs"])
        return _string(data.draw(st.text(visible, min_size=1, max_size=50).filter(str.strip)))
    if name == "idempotencyKey":
        # A fresh key: a reused one names another request and is refused, by design.
        return _string(data.draw(st.uuids()).hex)
    if name == "title":
        return _string(data.draw(st.text(max_size=40)))
    return None


def steer(query: str, data: st.DataObject, known: Known = Known()) -> str:
    """The query with some arguments replaced by valid values."""

    class Steer(Visitor):
        def enter_argument(self, node: ArgumentNode, *_: Any) -> ArgumentNode | None:
            value = _valid(node.name.value, data, known)
            return None if value is None else ArgumentNode(name=node.name, value=value)

        def enter_object_field(self, node: ObjectFieldNode, *_: Any) -> ObjectFieldNode | None:
            value = _valid(node.name.value, data, known)
            return None if value is None else ObjectFieldNode(name=node.name, value=value)

    try:
        document = parse(query)
    except GraphQLError:
        return query
    return print_ast(visit(document, Steer()))


def fuzz(
    url: str, token: str, *, examples: int, seed: int = 0, authors: Sequence[str] = ()
) -> FuzzReport:
    """Run ``examples`` generated requests per root field and per auth mode against ``url``.

    ``authors``: tokens of other users who write some of the seeded comments."""
    schema = schemathesis.graphql.from_path(ROOT / "schema.graphql")
    report = FuzzReport()
    started = time.monotonic()
    with requests.Session() as session:
        known = seed_known(session, url, token, authors)
        operations = []
        for result in schema.get_all_operations():
            if isinstance(result, Err):
                raise RuntimeError(f"schema.graphql cannot be fuzzed: {result.err()}")
            operations.append(result.ok())
        # Writes that unpublish or remove the seeded comments go last, so that reports,
        # replies and edits still find them published.
        operations.sort(key=lambda operation: UNPUBLISHING.get(operation.label, 0))
        for operation in operations:
            report.operations += 1
            for authenticated in (False, True):
                headers = {"Authorization": f"Bearer {token}"} if authenticated else {}
                _fuzz_one(operation, session, url, headers, examples, seed, report, known)
    report.seconds = time.monotonic() - started
    return report


def _fuzz_one(
    operation: Any,
    session: requests.Session,
    url: str,
    headers: dict[str, str],
    examples: int,
    seed: int,
    report: FuzzReport,
    known: Known,
) -> None:
    @settings(
        max_examples=examples,
        deadline=None,
        database=None,
        derandomize=seed == 0,
        suppress_health_check=list(HealthCheck),
    )
    @given(case=operation.as_strategy(), data=st.data())
    def run(case: Any, data: st.DataObject) -> None:
        # Half the cases are steered towards valid arguments, so the fuzzing also reaches
        # the planner, the fan-out and the writes, not only argument validation.
        query = case.body
        if data.draw(st.booleans(), label="steer"):
            query = steer(query, data, known)
        body = {"query": query}
        response = session.post(url, json=body, headers=headers, timeout=30)
        report.examples += 1
        report.statuses[response.status_code] += 1
        problem, codes, accepted = check_response(response.status_code, response.text)
        report.codes.update(codes)
        report.accepted[operation.label] += accepted
        if problem is not None:
            report.problems.append(
                Problem(operation.label, bool(headers), problem, json.dumps(body), response.text)
            )

    if seed:
        run = hypothesis.seed(seed)(run)
    run()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--examples", type=int, default=500, help="per root field and auth mode (default 500)"
    )
    parser.add_argument("--seed", type=int, default=0, help="0: the same examples as CI")
    args = parser.parse_args(argv)
    with rig("fuzz") as running:
        url = running.server.graphql_url
        print(f"fuzzing {url}, {args.examples} examples per field and auth mode", file=sys.stderr)
        report = fuzz(
            url,
            running.token(merchant=True),
            examples=args.examples,
            seed=args.seed,
            authors=[running.token("fuzz-author", moderator=False)],
        )
        drift = running.verify()
    summary = {**report.summary(), "commentsAtEnd": drift.comments, "drifts": len(drift.describe())}
    print(json.dumps(summary, indent=2))
    for problem in report.problems[:20]:
        print(problem, file=sys.stderr)
    return 1 if report.problems or not drift.exact else 0


if __name__ == "__main__":
    raise SystemExit(main())
