"""A typed client generated from schema.graphql (ariadne-codegen) drives a live server."""

from __future__ import annotations

import importlib
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from server.dev.local_engine import LocalEngine
from storage.engine.table import TableRef
from testing.live_server import live_server
from tests.api_helpers import SECRET, token
from tests.helpers import own_table

ROOT = Path(__file__).resolve().parents[2]
CODEGEN = ROOT / ".venv-codegen" / "bin" / "ariadne-codegen"


@pytest.fixture(scope="module")
def generated(tmp_path_factory: pytest.TempPathFactory) -> Any:
    if not CODEGEN.exists():
        raise AssertionError(f"{CODEGEN} is missing: run ./scripts/setup")
    out = tmp_path_factory.mktemp("client")
    config = out / "codegen.toml"
    config.write_text(
        "[tool.ariadne-codegen]\n"
        f'schema_path = "{ROOT / "schema.graphql"}"\n'
        f'queries_path = "{ROOT / "tests" / "client" / "operations.graphql"}"\n'
        'target_package_name = "comments_client"\n'
        f'target_package_path = "{out}"\n'
        "async_client = true\n\n"
        "[tool.ariadne-codegen.scalars.DateTime]\n"
        'type = "str"\n'
    )
    subprocess.run(
        [str(CODEGEN), "--config", str(config), "client"],
        check=True,
        capture_output=True,
        text=True,
    )
    sys.path.insert(0, str(out))
    try:
        return importlib.import_module("comments_client")
    finally:
        sys.path.remove(str(out))


@pytest.fixture(scope="module")
async def client_table(table: TableRef) -> TableRef:
    # The test looks for its product on the leaderboard, which spans a whole table: in the
    # shared one, other tests' products could fill the page.
    return await own_table(table, "client")


@pytest.fixture(scope="module")
def server(engine: LocalEngine, client_table: TableRef) -> Iterator[str]:
    with live_server(engine.endpoint_url, client_table.name, SECRET) as running:
        yield running.graphql_url


async def test_generated_client_round_trip(generated: Any, server: str) -> None:
    product = f"gen-{uuid.uuid4().hex[:8]}"
    auth = {"Authorization": f"Bearer {token('gina', name='Gina')}"}
    async with generated.Client(url=server, headers=auth) as client:
        good = await client.create_comment(
            generated.CreateCommentInput(
                product_id=product, rating=5, language="en", body="Love it", title="Yes"
            )
        )
        bad = await client.create_comment(
            generated.CreateCommentInput(product_id=product, rating=1, language="de", body="Nein")
        )
        assert good.create_comment.created is True
        assert good.create_comment.comment.author == "Gina"

        page = await client.product_page(product_id=product, first=1)
        assert page.product.product_id == product
        assert page.product.stats.total == 2
        assert [h.count for h in page.product.stats.histogram] == [1, 0, 0, 0, 1]
        comments = page.product.comments
        assert comments.total_count == 2
        assert comments.page_info.has_next_page is True
        assert comments.plan.strategy == "ALL"
        newest = comments.edges[0].node
        assert newest.comment_id == bad.create_comment.comment.comment_id

        rest = await client.product_page(
            product_id=product, first=1, after=comments.page_info.end_cursor
        )
        assert [e.node.comment_id for e in rest.product.comments.edges] == [
            good.create_comment.comment.comment_id
        ]
        assert rest.product.comments.page_info.has_next_page is False

        both = await client.newest_positive_and_negative(product_id=product)
        assert [n.rating for n in both.product.positive.nodes] == [5]
        assert [n.rating for n in both.product.negative.nodes] == [1]

        again = await client.refetch(id=good.create_comment.comment.id)
        assert again.node.typename__ == "Comment"
        assert again.node.comment_id == good.create_comment.comment.comment_id

        deleted = await client.delete_comment(id=bad.create_comment.comment.id)
        assert deleted.delete_comment.product.stats.total == 1

        board = await client.leaderboard(first=100)
        assert any(r.product.product_id == product for r in board.top_products)

        refused = await client.create_comment(
            generated.CreateCommentInput(product_id=product, rating=9, language="EN", body=" ")
        )
        assert refused.create_comment.comment is None
        problems = {(tuple(e.field or ()), e.code) for e in refused.create_comment.user_errors}
        assert problems == {
            (("input", "rating"), generated.UserErrorCode.INVALID),
            (("input", "body"), generated.UserErrorCode.REQUIRED),
        }
