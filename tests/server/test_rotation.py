"""Rotating the JWT secret (docs/deployment.md): tokens signed with the previous secret hold
while it is configured and are refused once it is gone; new tokens are signed with the
current one only; and with AUTHOR_ID_KEY pinned to what `comments author-id-key` printed,
every author keeps their public id, their own listing and their token's subject."""

from __future__ import annotations

import os
import subprocess
import sys
from typing import Any

import jwt
import pytest
from pydantic import ValidationError

from resolvers.auth import ALGORITHM, mint
from resolvers.authors import author_key, configured_key, public_author_id
from server.cli import main
from server.runtime import prepare
from server.settings import Settings
from storage.engine.table import TableRef
from testing.live_server import ROOT
from tests.api_helpers import SECRET, running_api

OLD = SECRET
NEW = "the-secret-after-the-rotation-" + "0123456789abcdef" * 2
CREATE = """
mutation($input: CreateCommentInput!) {
  createComment(input: $input) { comment { commentId authorId } }
}"""
OWN = """
query($id: ID!) {
  viewer { comments(first: 5) { nodes { commentId } } }
  comment(commentId: $id) { authorId }
}"""


@pytest.fixture
def environment(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    """No setting comes from the environment the tests run in."""
    for name in Settings.model_fields:
        monkeypatch.delenv(name.upper(), raising=False)
    return monkeypatch


def printed_key(environment: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> str:
    """What `comments author-id-key` prints with the environment as it is."""
    assert main(["author-id-key"]) == 0
    out = capsys.readouterr().out
    assert out.count("\n") == 1
    return out.strip()


async def test_a_rotation_keeps_old_tokens_for_a_while_and_author_ids_for_good(
    environment: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    table: TableRef,
    product_id: str,
) -> None:
    # An author of this test's own: other tests write as ann on the session's table.
    author = f"rotating-{product_id}"
    ann_old, ann_new = mint(OLD, author), mint(NEW, author)
    comment = {"productId": product_id, "rating": 4, "language": "en", "body": "Kept"}

    # Before: JWT_SECRET alone, the ids derived from it.
    async with running_api(table.client, table.name, jwt_secret=OLD, author_id_key=None) as api:
        made = (await api.data(CREATE, {"input": comment}, ann_old))["createComment"]["comment"]
    comment_id, author_id = made["commentId"], made["authorId"]
    assert author_id == public_author_id(author_key(OLD), author)

    # The operator pins the key the ids are made with, before anything else changes.
    environment.setenv("JWT_SECRET", OLD)
    key = printed_key(environment, capsys)
    assert OLD not in key

    def seen(data: dict[str, Any]) -> tuple[list[str], str]:
        own = [node["commentId"] for node in data["viewer"]["comments"]["nodes"]]
        return own, data["comment"]["authorId"]

    # During: the new secret signs, the previous one is still accepted.
    rotating = {"jwt_secret": NEW, "jwt_previous_secret": OLD, "author_id_key": key}
    async with running_api(table.client, table.name, **rotating) as api:
        for token in (ann_old, ann_new):
            assert seen(await api.data(OWN, {"id": comment_id}, token)) == (
                [comment_id],
                author_id,
            )

    # After: the previous secret is gone, and so are its tokens; the ids stay.
    async with running_api(table.client, table.name, jwt_secret=NEW, author_id_key=key) as api:
        # A read takes the refused token for no token; a write says why.
        assert (await api.data(OWN, {"id": comment_id}, ann_old))["viewer"] is None
        assert await api.error_code(CREATE, {"input": comment}, ann_old) == "UNAUTHENTICATED"
        assert seen(await api.data(OWN, {"id": comment_id}, ann_new)) == ([comment_id], author_id)


def test_the_printed_key_gives_exactly_the_ids_of_the_secret_it_came_from(
    environment: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    environment.setenv("JWT_SECRET", OLD)
    key = printed_key(environment, capsys)
    assert key.startswith("hmac-sha256:")
    assert configured_key(key) == author_key(OLD)
    # Printed again from the pinned key, whatever signs tokens by then: the same key.
    environment.setenv("JWT_SECRET", NEW)
    environment.setenv("AUTHOR_ID_KEY", key)
    assert printed_key(environment, capsys) == key
    # An AUTHOR_ID_KEY of the old secret's value (what docs/sign-in.md said before) keeps
    # the same ids too, and prints as the same key.
    environment.setenv("AUTHOR_ID_KEY", OLD)
    assert printed_key(environment, capsys) == key


@pytest.mark.parametrize(
    "altered",
    [
        "hmac-sha256:" + "ab" * 31,
        "hmac-sha256:" + "ab" * 33,
        "hmac-sha256:" + "zz" * 32,
        "hmac-sha256:" + "ab " * 32,
    ],
    ids=["cut-short", "too-long", "not-hex", "spaced"],
)
def test_a_printed_key_cut_short_or_altered_is_refused(
    environment: pytest.MonkeyPatch, altered: str
) -> None:
    # Taken as a secret of its own, it would silently give every author a new id.
    with pytest.raises(ValidationError, match="AUTHOR_ID_KEY: a key printed by"):
        Settings(author_id_key=altered)


def test_new_tokens_are_signed_with_the_current_secret_only(
    environment: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    environment.setenv("JWT_SECRET", NEW)
    environment.setenv("JWT_PREVIOUS_SECRET", OLD)
    environment.setenv("AUTHOR_ID_KEY", "hmac-sha256:" + author_key(OLD).hex())
    assert main(["token", "ann"]) == 0
    token = capsys.readouterr().out.strip()
    assert jwt.decode(token, NEW, algorithms=[ALGORITHM])["sub"] == "ann"
    with pytest.raises(jwt.InvalidSignatureError):
        jwt.decode(token, OLD, algorithms=[ALGORITHM])


def test_dev_tokens_are_signed_with_the_current_secret_only(
    environment: pytest.MonkeyPatch,
) -> None:
    settings = Settings(
        dynamodb_endpoint_url="http://127.0.0.1:9",
        jwt_secret=NEW,
        jwt_previous_secret=OLD,
        author_id_key=OLD,
        dev_token=True,
        port=0,
    )
    with prepare(settings) as prepared:
        tokens = prepared.dev_tokens
    assert tokens is not None
    for token in (tokens.shopper, tokens.moderator):
        assert jwt.decode(token, NEW, algorithms=[ALGORITHM])["sub"].startswith("dev-")
        with pytest.raises(jwt.InvalidSignatureError):
            jwt.decode(token, OLD, algorithms=[ALGORITHM])
    # What the workers check tokens with still takes the previous one.
    assert prepared.settings.jwt_previous_secret == OLD


@pytest.mark.parametrize(
    ("variables", "message"),
    [
        (
            {"JWT_PREVIOUS_SECRET": OLD, "JWT_SECRET": NEW},
            "JWT_PREVIOUS_SECRET needs AUTHOR_ID_KEY",
        ),
        (
            {"JWT_PREVIOUS_SECRET": OLD, "AUTHOR_ID_KEY": NEW},
            "JWT_PREVIOUS_SECRET needs JWT_SECRET",
        ),
        ({"JWT_PREVIOUS_SECRET": "short", "JWT_SECRET": NEW}, "at least 32 bytes"),
    ],
)
def test_a_rotation_that_would_lose_something_is_refused(
    environment: pytest.MonkeyPatch, variables: dict[str, str], message: str
) -> None:
    for name, value in variables.items():
        environment.setenv(name, value)
    with pytest.raises(ValidationError, match=message):
        Settings()


def test_production_refuses_to_start_without_the_author_id_key(
    environment: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    production = {"PRODUCTION": "true", "DYNAMODB_ENDPOINT_URL": "http://127.0.0.1:9"}
    # A real process: were the configuration accepted, it would serve until the timeout.
    done = subprocess.run(
        [sys.executable, "-m", "server", "serve"],
        cwd=ROOT,
        env={**os.environ, **production, "JWT_SECRET": OLD, "PORT": "0"},
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 2
    # One line, which tells a running deployment how to keep its authors' ids.
    assert done.stderr.startswith("error: PRODUCTION needs AUTHOR_ID_KEY")
    assert "comments author-id-key" in done.stderr
    assert done.stderr.count("\n") == 1
    assert OLD not in done.stderr
    # Which it does with the configuration it has.
    for name, value in {**production, "JWT_SECRET": OLD}.items():
        environment.setenv(name, value)
    environment.setenv("AUTHOR_ID_KEY", printed_key(environment, capsys))
    assert Settings().production
