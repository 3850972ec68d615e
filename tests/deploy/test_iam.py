"""The IAM policies in ``deploy/iam/`` grant exactly what the code can call, per role.

What the code can call is derived from the source, not listed by hand: every engine call
goes through ``TableRef.client`` (the seam, ``storage.engine.seam``), so each call site is
an attribute call ``<...>.client.<operation>(...)`` whose name is one of botocore's
DynamoDB or DynamoDB Streams operations. ``TransactWriteItems`` is no IAM action of its
own: each of its parts needs the action of its kind (a ``Put`` part ``PutItem``, a
``ConditionCheck`` part ``ConditionCheckItem``...), and the parts are the dict displays
keyed by those kinds. Which role a call belongs to follows the imports: the runtime role
is what the serving process imports (``server.http.app``, ``server.workers``) less the
operations modules (``storage.ops``: the development server creates its table and seeds
demo data through them, which a production process never does); the operations role is
what ``storage.ops`` imports.

A policy that misses an action fails here before it fails in production with
AccessDenied; one that grants an action nothing calls fails too (least privilege). A
second test runs the API and the operations commands over a recording client and checks
that every call they made is derived and granted, so a call the derivation cannot see (a
name built at run time) fails as well.
"""

from __future__ import annotations

import ast
import json
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import botocore.session
import pytest
from botocore import xform_name

from resolvers.auth import mint
from server.dev.local_engine import LocalEngine
from storage.base.types import DynamoClient, Response
from storage.engine.client import ClientSettings, open_client
from storage.engine.table import TableRef
from storage.engine.wrapping import ClientWrapper
from storage.ops.create import create_table
from storage.ops.migrate import migrate
from storage.ops.verify import repair, verify
from tests.api_helpers import SECRET, running_api

ROOT = Path(__file__).resolve().parents[2]
POLICIES = ROOT / "deploy" / "iam"
PRODUCT = ("storage", "resolvers", "schema", "server")
RUNTIME_ROOTS = ("server.http.app", "server.workers")
OPS_PACKAGE = "storage.ops"

# A transaction part's kind, and the action IAM checks for it.
PART_ACTIONS = {
    "Get": "GetItem",
    "Put": "PutItem",
    "Update": "UpdateItem",
    "Delete": "DeleteItem",
    "ConditionCheck": "ConditionCheckItem",
}
# Operations IAM knows only through their parts.
TRANSACTIONS = {"TransactWriteItems", "TransactGetItems"}
# Where each kind of action applies: the stream's, the indexes' (Query only), the table's.
STREAM_ACTIONS = {"DescribeStream", "GetRecords", "GetShardIterator", "ListStreams"}


def _operations() -> dict[str, str]:
    """Client method name -> operation name, of DynamoDB and DynamoDB Streams."""
    session = botocore.session.get_session()
    names: dict[str, str] = {}
    for service in ("dynamodb", "dynamodbstreams"):
        for operation in session.get_service_model(service).operation_names:
            names[xform_name(operation)] = operation
    return names


OPERATIONS = _operations()


def _module(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _sources() -> dict[str, Path]:
    return {
        _module(path): path
        for package in PRODUCT
        for path in sorted((ROOT / package).rglob("*.py"))
    }


SOURCES = _sources()


def _imports(tree: ast.AST) -> Iterator[str]:
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            yield node.module
            yield from (f"{node.module}.{alias.name}" for alias in node.names)


def _closure(roots: tuple[str, ...], *, leave_out: str | None = None) -> set[str]:
    """The product modules ``roots`` import, transitively (``leave_out``'s package not
    entered), the roots included."""
    seen: set[str] = set()
    todo = list(roots)
    while todo:
        module = todo.pop()
        if module in seen or module not in SOURCES:
            continue
        if leave_out and (module == leave_out or module.startswith(leave_out + ".")):
            continue
        seen.add(module)
        tree = ast.parse(SOURCES[module].read_text(), str(SOURCES[module]))
        todo.extend(name for name in _imports(tree) if name in SOURCES)
    return seen


def _calls(module: str) -> set[str]:
    """The IAM actions the engine calls in ``module`` need."""
    tree = ast.parse(SOURCES[module].read_text(), str(SOURCES[module]))
    actions: set[str] = set()
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in OPERATIONS
            and ast.unparse(node.func.value).endswith("client")
        ):
            operation = OPERATIONS[node.func.attr]
            if operation not in TRANSACTIONS:
                actions.add(operation)
        elif isinstance(node, ast.Dict):
            for key in node.keys:
                if isinstance(key, ast.Constant) and key.value in PART_ACTIONS:
                    actions.add(PART_ACTIONS[key.value])
    return actions


def derived(role: str) -> set[str]:
    """Every action the role's code can call, as ``dynamodb:Action``."""
    if role == "runtime":
        modules = _closure(RUNTIME_ROOTS, leave_out=OPS_PACKAGE)
    else:
        modules = _closure(tuple(m for m in SOURCES if m.startswith(OPS_PACKAGE + ".")))
    return {f"dynamodb:{action}" for module in modules for action in _calls(module)}


def _policy(role: str) -> dict[str, Any]:
    document: dict[str, Any] = json.loads((POLICIES / f"{role}.json").read_text())
    return document


def granted(role: str) -> dict[str, set[str]]:
    """Action -> the resources the role's policy grants it on."""
    grants: dict[str, set[str]] = {}
    for statement in _policy(role)["Statement"]:
        assert statement["Effect"] == "Allow"
        for action in statement["Action"]:
            grants.setdefault(action, set()).update(statement["Resource"])
    return grants


ROLES = ("runtime", "operations")


@pytest.mark.parametrize("role", ROLES)
def test_the_policy_grants_exactly_what_the_code_calls(role: str) -> None:
    calls = derived(role)
    grants = set(granted(role))
    assert not calls - grants, f"{role} misses {sorted(calls - grants)}"
    assert not grants - calls, f"{role} grants {sorted(grants - calls)}, which nothing calls"


def test_no_engine_call_is_made_by_a_name_built_at_run_time() -> None:
    # getattr(client, name)(...) would hide a call from the derivation.
    hidden = [
        f"{module}:{node.lineno}"
        for module, path in SOURCES.items()
        for node in ast.walk(ast.parse(path.read_text(), str(path)))
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id == "getattr"
        and node.args
        and ast.unparse(node.args[0]).endswith("client")
    ]
    assert hidden == []


def test_the_derivation_sees_the_calls_the_issue_named() -> None:
    # Deletes, moderation and vote withdrawal delete inside transactions; every serving
    # process follows the stream; the health check reads an item. None of these was in the
    # list the README gave before, and the derivation must find each of them.
    runtime = derived("runtime")
    assert {
        "dynamodb:DeleteItem",
        "dynamodb:ConditionCheckItem",
        "dynamodb:DescribeStream",
        "dynamodb:GetShardIterator",
        "dynamodb:GetRecords",
        "dynamodb:GetItem",
    } <= runtime
    # What only operations do stays out of the runtime role.
    assert not {"dynamodb:CreateTable", "dynamodb:UpdateTable"} & runtime
    # One scan serves: a privacy request's, finding an author's votes and reports (no
    # index finds them by author); no other serving code scans the table.
    scanning = {
        module
        for module in _closure(RUNTIME_ROOTS, leave_out=OPS_PACKAGE)
        if "Scan" in _calls(module)
    }
    assert scanning == {"storage.reads.author_data"}
    assert {"dynamodb:Scan", "dynamodb:UpdateTable", "dynamodb:CreateTable"} <= derived(
        "operations"
    )


@pytest.mark.parametrize("role", ROLES)
def test_each_grant_is_scoped_to_the_table_its_indexes_or_its_stream(role: str) -> None:
    for action, resources in granted(role).items():
        name = action.removeprefix("dynamodb:")
        assert "*" not in action
        if name in STREAM_ACTIONS:
            assert resources == {"${TableArn}/stream/*"}, action
        elif name == "Query":
            assert resources == {"${TableArn}", "${TableArn}/index/*"}, action
        else:
            assert resources == {"${TableArn}"}, action


class Recording(ClientWrapper):
    """Passes every call on, and keeps the IAM actions it needed."""

    def __init__(self, inner: DynamoClient) -> None:
        super().__init__(inner)
        self.actions: set[str] = set()

    async def _call(self, operation: str, kwargs: dict[str, Any]) -> Response:
        name = OPERATIONS[operation]
        if name in TRANSACTIONS:
            for part in kwargs["TransactItems"]:
                self.actions.update(f"dynamodb:{PART_ACTIONS[kind]}" for kind in part)
        else:
            self.actions.add(f"dynamodb:{name}")
        return await super()._call(operation, kwargs)


_WORKLOAD = [
    (
        "ann",
        """mutation($pid: ID!) { createComment(input: {productId: $pid, rating: 5,
        language: "en", body: "Fits well"}) { comment { id } userErrors { code } } }""",
    ),
    (
        "bob",
        """mutation($pid: ID!) { createComment(input: {productId: $pid, rating: 2,
        language: "de", body: "Zu klein"}) { comment { id } userErrors { code } } }""",
    ),
]


async def _exercise_api(client: DynamoClient, table: str, product_id: str) -> None:
    """Every kind of write and read the API makes, once."""
    moderator = mint(SECRET, "mod", roles=["moderator"])
    merchant = mint(SECRET, "shop", roles=["merchant"])
    async with running_api(client, table) as api:
        ids = []
        for author, document in _WORKLOAD:
            data = await api.data(document, {"pid": product_id}, mint(SECRET, author))
            ids.append(data["createComment"]["comment"]["id"])
        first, second = ids
        ann, cid = mint(SECRET, "ann"), mint(SECRET, "cid")
        # (mutation, its input besides the id, whose token)
        writes = [
            ("updateComment", "rating: 4", first, ann),
            ("voteHelpful", "vote: HELPFUL", first, cid),
            ("voteHelpful", "vote: null", first, cid),  # withdrawn: a delete in a transaction
            ("reportComment", "reason: SPAM", second, cid),
            ("replyToComment", 'body: "Thanks"', first, merchant),
            ("deleteReply", "", first, merchant),
            ("moderateComment", "decision: REJECT", second, moderator),
            ("deleteComment", "", first, ann),
        ]
        for field, fields, comment_id, bearer in writes:
            document = (
                f'mutation {{ {field}(input: {{id: "{comment_id}", {fields}}}) '
                "{ userErrors { code } } }"
            )
            payload = (await api.data(document, token=bearer))[field]
            assert payload["userErrors"] == [], document
        reads = [
            f'{{ product(productId: "{product_id}") {{ stats {{ total }} '
            "comments(orderBy: MOST_HELPFUL, first: 5) { totalCount } "
            'en: comments(language: "en", ratings: [4, 5], first: 5) { totalCount } } }',
            "{ topProducts(first: 3) { product { id } } moderationQueue(first: 3) { totalCount } }",
        ]
        for document in reads:
            await api.data(document, token=moderator)
        await api.http.get("/readyz")


async def test_every_call_the_api_and_the_operations_make_is_derived_and_granted(
    engine: LocalEngine,
) -> None:
    async with open_client(ClientSettings(endpoint_url=engine.endpoint_url)) as opened:
        name = f"iam_{uuid.uuid4().hex[:8]}"
        operations = Recording(opened)
        await create_table(operations, name)
        runtime = Recording(opened)
        await _exercise_api(runtime, name, "p-iam")
        table = TableRef(operations, name)
        await migrate(table)
        await repair(table, await verify(table))
    assert runtime.actions, "the workload made no call"
    assert runtime.actions <= derived("runtime") <= set(granted("runtime"))
    assert operations.actions <= derived("operations") <= set(granted("operations"))


def test_production_never_creates_its_table(monkeypatch: pytest.MonkeyPatch) -> None:
    # The runtime role has no CreateTable: a production process asked to make its table
    # would fail on AccessDenied at its first start in an empty region; it is refused at
    # once instead, with what to do.
    from pydantic import ValidationError

    from server.settings import Settings

    for name in (
        "PRODUCTION",
        "CREATE_TABLE",
        "DYNAMODB_ENDPOINT_URL",
        "JWT_SECRET",
        "AUTHOR_ID_KEY",
    ):
        monkeypatch.delenv(name, raising=False)
    endpoint = "http://dynamodb:8000"
    with pytest.raises(ValidationError, match="CREATE_TABLE=true"):
        Settings(
            production=True,
            create_table=True,
            dynamodb_endpoint_url=endpoint,
            jwt_secret=SECRET,
            author_id_key=SECRET,
        )
    assert not Settings(
        production=True, dynamodb_endpoint_url=endpoint, jwt_secret=SECRET, author_id_key=SECRET
    ).creates_table
    assert Settings(
        create_table=True, dynamodb_endpoint_url=endpoint, jwt_secret=SECRET, author_id_key=SECRET
    ).creates_table
