"""The ``comments`` command: creating and verifying the table, moving products between
groups, minting dev tokens, exporting and erasing an author's data."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import jwt
import pytest

from resolvers.auth import ALGORITHM, TokenRules, authenticate
from server.cli import main as cli_main
from server.dev.local_engine import LocalEngine
from storage.engine.client import ClientSettings, open_client
from storage.engine.table import TableRef
from storage.model.comments import NewComment
from storage.model.erasure import Mode
from storage.ops.erasure import start_erasure
from storage.writes import create_comment
from tests.api_helpers import SECRET

ISSUER = "https://auth.shop.example"
AUDIENCE = "comments-api"
STRICT = TokenRules(SECRET, issuer=ISSUER, audience=AUDIENCE)


def test_cli_verify_and_create_table(engine: LocalEngine, capsys: object) -> None:
    args = ["--endpoint-url", engine.endpoint_url, "--table", "cli_check"]
    assert cli_main(["create-table", *args]) == 0
    assert cli_main(["create-table", *args]) == 0
    assert cli_main(["verify-stats", *args]) == 0
    out, err = capsys.readouterr()  # type: ignore[attr-defined]
    # Its progress, in a log (stderr is not a terminal here): whole lines.
    assert "\r" not in err
    assert err.splitlines()[-1].startswith("scanned ")
    assert "created" in out
    assert "already exists" in out
    assert "all counters and leaderboard entries are exact" in out


def test_cli_migrates_the_leaderboard_to_shards(engine: LocalEngine, capsys: object) -> None:
    args = ["--endpoint-url", engine.endpoint_url, "--table", "cli_shards"]
    assert cli_main(["create-table", *args]) == 0
    assert cli_main(["migrate-table", *args, "--leaderboard-shards", "17"]) == 2
    assert cli_main(["migrate-table", *args, "--leaderboard-shards", "4"]) == 0
    assert cli_main(["migrate-table", *args, "--leaderboard-shards", "4"]) == 0
    assert cli_main(["verify-stats", *args]) == 0
    captured = capsys.readouterr()  # type: ignore[attr-defined]
    assert "the leaderboard has 1 to 16 shards" in captured.err
    assert "leaderboard: moving from 1 to 4 shards" in captured.err
    assert "the leaderboard has 4 shards; moved 0 entries" in captured.out
    assert "the leaderboard already has 4 shards" in captured.out
    assert "leaderboard layout: 4 shards" in captured.out


def test_cli_rejects_a_bad_table_name_clearly(capsys: object) -> None:
    assert cli_main(["create-table", "--endpoint-url", "http://127.0.0.1:9", "--table", "a"]) == 2
    err = capsys.readouterr().err  # type: ignore[attr-defined]
    assert "table name 'a' must be 3-255 characters" in err


def test_the_token_command_uses_the_configured_claims(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("JWT_ISSUER", ISSUER)
    monkeypatch.setenv("JWT_AUDIENCE", AUDIENCE)
    assert cli_main(["token", "ann", "--secret", SECRET, "--hours", "2"]) == 0
    token = capsys.readouterr().out.strip()
    claims = jwt.decode(token, SECRET, algorithms=[ALGORITHM], audience=AUDIENCE)
    assert (claims["iss"], claims["aud"], claims["exp"] - claims["iat"]) == (
        ISSUER,
        AUDIENCE,
        7200,
    )
    assert authenticate(f"Bearer {token}", STRICT).author_id == "ann"


def test_the_token_command_refuses_a_lifetime_the_server_would(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("JWT_MAX_LIFETIME", "3600")
    assert cli_main(["token", "ann", "--secret", SECRET, "--hours", "2"]) == 2
    assert "at most 1 h" in capsys.readouterr().err


def test_cli_verify_reports_json_for_scripts(engine: LocalEngine, capsys: object) -> None:
    args = ["--endpoint-url", engine.endpoint_url, "--table", "cli_json"]
    assert cli_main(["create-table", *args]) == 0
    capsys.readouterr()  # type: ignore[attr-defined]
    assert cli_main(["verify-stats", *args, "--json", "--max-read-units", "1000"]) == 0
    report = json.loads(capsys.readouterr().out)  # type: ignore[attr-defined]
    assert report["exact"] is True
    assert report["stats"] == report["counts"] == report["commentDrifts"] == []
    assert cli_main(["verify-stats", *args, "--max-read-units", "0"]) == 2
    assert "above 0" in capsys.readouterr().err  # type: ignore[attr-defined]


def test_cli_moves_a_product_and_applies_a_catalogue(
    engine: LocalEngine, capsys: object, tmp_path: Path
) -> None:
    args = ["--endpoint-url", engine.endpoint_url, "--table", "cli_groups"]
    assert cli_main(["create-table", *args]) == 0
    assert cli_main(["move-group", *args, "p1", "--group", "g1"]) == 0
    captured = capsys.readouterr()  # type: ignore[attr-defined]
    assert "p1: membership none -> g1 (epoch 1)" in captured.err
    assert "p1: in g1, all 0 published comments counted there" in captured.out
    catalogue = tmp_path / "catalogue.jsonl"
    catalogue.write_text('{"productId": "p1", "groupId": "g2"}\n{"productId": 1}\n')
    assert cli_main(["apply-catalogue", *args, str(catalogue)]) == 1
    captured = capsys.readouterr()  # type: ignore[attr-defined]
    assert "line 2: productId:" in captured.err
    assert "1 products: 1 changed group" in captured.out
    assert cli_main(["apply-catalogue", *args, str(tmp_path / "missing.jsonl")]) == 2
    assert cli_main(["verify-stats", *args]) == 0


def test_cli_remaps_answers_and_refuses_a_remap_of_nothing_retired(
    engine: LocalEngine, capsys: object
) -> None:
    args = ["--endpoint-url", engine.endpoint_url, "--table", "cli_remap"]
    assert cli_main(["create-table", *args]) == 0
    move = ["--product", "p1", "--move", "fit:large=small"]
    # Nothing is retired: refused, the problem printed with its path.
    assert cli_main(["remap-answers", *args, *move]) == 1
    captured = capsys.readouterr()  # type: ignore[attr-defined]
    assert "remap[0].value:" in captured.out
    assert "NOT_RETIRED" in captured.out
    assert cli_main(["remap-answers", *args, "--product", "p1", "--move", "fit-large"]) == 2


def test_cli_exports_and_erases_an_author(
    engine: LocalEngine, capsys: object, tmp_path: Path
) -> None:
    args = ["--endpoint-url", engine.endpoint_url, "--table", "cli_privacy"]
    assert cli_main(["create-table", *args]) == 0

    async def write() -> str:
        settings = ClientSettings(endpoint_url=engine.endpoint_url)
        async with open_client(settings) as client:
            table = TableRef(client, "cli_privacy")
            for product in ("p1", "p2"):
                new = NewComment(
                    product_id=product, language="en", rating=4, body="Good", author_id="pat"
                )
                await create_comment(table, new)
            # An erasure the API left RUNNING.
            return (await start_erasure(table, "pat", Mode.ANONYMIZE)).request_id

    request_id = asyncio.run(write())
    out = tmp_path / "pat.json"
    assert cli_main(["export-author", *args, "pat", "--output", str(out)]) == 0
    assert len(json.loads(out.read_text())["comments"]) == 2
    assert cli_main(["erase-author", *args]) == 2  # neither a subject nor --resume
    assert cli_main(["erase-author", *args, "--resume"]) == 0
    captured = capsys.readouterr()  # type: ignore[attr-defined]
    assert f"erasure {request_id} (ANONYMIZE): DONE; 2 comments" in captured.out
    assert "pass 2: scanned" in captured.err
    assert cli_main(["erase-author", *args, "pat", "--mode", "DELETE"]) == 0
    assert "(DELETE): DONE; 0 comments, 0 votes" in capsys.readouterr().out  # type: ignore[attr-defined]
    assert cli_main(["export-author", *args, "pat"]) == 0
    assert json.loads(capsys.readouterr().out)["comments"] == []  # type: ignore[attr-defined]
    assert cli_main(["verify-stats", *args]) == 0
