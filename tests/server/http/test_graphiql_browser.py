"""GraphiQL in a real browser: headless Chromium (Debian's ``chromium``, installed by
scripts/setup) driven by Playwright loads the page from a live server, runs the example
query and a mutation with the dev token through the UI, and reads the results; the page
asks no other host for anything. A screenshot is left in .build/artifacts/graphiql.png."""

from __future__ import annotations

import json
import os
import shutil
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx
import pytest
from playwright.sync_api import ConsoleMessage, Page, Request, sync_playwright

from server.dev.local_engine import LocalEngine
from testing.live_server import LiveServer, live_server
from tests.api_helpers import SECRET, token

ROOT = Path(__file__).resolve().parents[3]
SCREENSHOT = ROOT / ".build" / "artifacts" / "graphiql.png"
TIMEOUT_MS = 30_000

CREATE = """mutation Create($input: CreateCommentInput!) {
  createComment(input: $input) { created }
}"""
TYPED = (
    'mutation { createComment(input: {productId: "sku-hot", rating: 4, language: "en", '
    'title: "From GraphiQL", body: "Typed in the browser."}) '
    "{ created comment { author rating } } }"
)


def chromium() -> str:
    """The Chromium binary: $CHROMIUM, else Debian's. Missing is a failure, never a skip,
    so CI cannot pass without having run the browser."""
    found = os.environ.get("CHROMIUM") or shutil.which("chromium")
    if not found:
        pytest.fail(
            "Chromium is not installed, so the GraphiQL browser test cannot run: run "
            "scripts/setup (as root it installs Debian's chromium package) or "
            "`apt-get install chromium`, or point CHROMIUM at a Chromium binary"
        )
    return found


@pytest.fixture(scope="module")
def server(engine: LocalEngine) -> Iterator[LiveServer]:
    """A live server on a table of its own, with a dev token for the page."""
    with live_server(
        engine.endpoint_url,
        f"graphiql_{uuid.uuid4().hex[:8]}",
        SECRET,
        CREATE_TABLE="true",
        SEED_DEMO="false",
        DEV_TOKEN="true",
    ) as running:
        yield running


def editor_text(page: Page, selector: str) -> str:
    """The whole text of one of GraphiQL's CodeMirror editors (the DOM holds only the lines
    in view)."""
    text: str = page.eval_on_selector(f"{selector} .CodeMirror", "e => e.CodeMirror.getValue()")
    return text


def wait_for_result(page: Page, marker: str) -> dict[str, Any]:
    """The result pane's JSON, once it holds ``marker``."""
    wait_for_text(page, ".result-window", marker)
    result: dict[str, Any] = json.loads(editor_text(page, ".result-window"))
    return result


def wait_for_text(page: Page, selector: str, text: str) -> None:
    page.wait_for_function(
        """([selector, text]) => {
          const editor = document.querySelector(selector + " .CodeMirror");
          return editor !== null && editor.CodeMirror.getValue().includes(text);
        }""",
        arg=[selector, text],
        polling=100,
        timeout=TIMEOUT_MS,
    )


@pytest.mark.browser
def test_graphiql_runs_queries_in_chromium_from_this_server_alone(server: LiveServer) -> None:
    binary = chromium()
    for n, rating in enumerate((5, 2)):
        variables = {
            "input": {
                "productId": "sku-hot",
                "rating": rating,
                "language": "en",
                "title": f"Seeded {n}",
                "body": "Written before the page opens.",
            }
        }
        response = httpx.post(
            server.graphql_url,
            json={"query": CREATE, "variables": variables},
            headers={"authorization": f"Bearer {token(f'seed-{n}')}"},
        )
        assert response.json()["data"]["createComment"]["created"] is True

    requests: list[str] = []
    problems: list[str] = []

    def on_console(message: ConsoleMessage) -> None:
        if message.type in ("error", "warning"):
            problems.append(f"console {message.type}: {message.text}")

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=binary,
            # As root Chromium refuses to start with its sandbox (it needs an unprivileged
            # user for it); elsewhere the sandbox stays on.
            args=["--no-sandbox"] if os.geteuid() == 0 else [],
        )
        try:
            context = browser.new_context(viewport={"width": 1400, "height": 1000})

            def on_request(request: Request) -> None:
                seen = f"{request.method} {request.url}"
                body = request.post_data_json if request.method == "POST" else None
                if isinstance(body, dict):
                    seen += f" ({body.get('operationName') or 'anonymous'})"
                requests.append(seen)

            context.on("request", on_request)
            page = context.new_page()
            page.on("console", on_console)
            page.on("pageerror", lambda error: problems.append(f"page error: {error}"))
            page.set_default_timeout(TIMEOUT_MS)

            page.goto(server.graphql_url, wait_until="networkidle")
            page.wait_for_selector(".graphiql-query-editor .CodeMirror")
            assert "query ProductPage" in editor_text(page, ".graphiql-query-editor")
            # Two tabs: the shopper's, open, and the moderator's.
            assert page.locator(".graphiql-tab").count() == 2
            # The Headers tab is open, with the shopper's dev token in it.
            tool = page.locator("section.graphiql-editor-tool")
            assert tool.get_attribute("aria-label") == "Headers"
            headers = json.loads(
                editor_text(page, ".graphiql-editor-tool .graphiql-editor:not(.hidden)")
            )
            assert headers["Authorization"].startswith("Bearer ey")

            page.click(".graphiql-execute-button")
            result = wait_for_result(page, '"pageInfo"')
            product = result["data"]["product"]
            assert product["stats"]["total"] == 2
            histogram = {h["rating"]: h["count"] for h in product["stats"]["histogram"]}
            assert histogram == {1: 0, 2: 1, 3: 0, 4: 0, 5: 1}
            comments = product["comments"]
            assert comments["totalCount"] == 2
            assert [e["node"]["title"] for e in comments["edges"]] == ["Seeded 1", "Seeded 0"]
            assert comments["pageInfo"]["hasNextPage"] is False
            SCREENSHOT.parent.mkdir(parents=True, exist_ok=True)
            page.screenshot(path=str(SCREENSHOT))

            # Typed into the editor and run with the keyboard; the dev token in the Headers
            # tab makes the write allowed.
            page.click(".graphiql-query-editor .CodeMirror-code")
            page.keyboard.press("Control+A")
            page.keyboard.insert_text(TYPED)
            wait_for_text(page, ".graphiql-query-editor", TYPED)
            # GraphiQL reads the operation name from the editor 100 ms after the last change
            # (a debounce); run sooner and it sends the old one. No person is that quick.
            page.wait_for_timeout(1000)
            page.keyboard.press("Control+Enter")
            created = wait_for_result(page, '"createComment"')
            assert created["data"]["createComment"] == {
                "created": True,
                # Written as the shopper the page opens as.
                "comment": {"author": "Dev Shopper", "rating": 4},
            }
        finally:
            browser.close()
            print("requests made by the page:", *requests, sep="\n  ")

    origin = urlsplit(server.base_url).netloc
    assert requests
    assert all(urlsplit(r.split()[1]).netloc == origin for r in requests), requests
    assert any(r.startswith("POST ") for r in requests), requests
    assert problems == []


def test_a_missing_chromium_fails_the_suite_with_a_clear_message(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("CHROMIUM", raising=False)
    monkeypatch.setattr(shutil, "which", lambda name: None)
    with pytest.raises(pytest.fail.Exception, match="Chromium is not installed"):
        chromium()
