"""``comments taxonomy load`` and ``comments retag``: what they print and their exit codes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from server.cli import main as cli_main
from server.dev.local_engine import LocalEngine

BATTERY = {"key": "battery", "labels": {"en": "Battery"}, "words": {"en": ["battery"]}}
SCREEN = {"key": "screen", "labels": {"en": "Screen"}, "words": {"en": ["screen"]}}
DOCUMENT = {
    "format": 1,
    "defaultLanguage": "en",
    "topics": [BATTERY, SCREEN],
}


def test_a_taxonomy_is_loaded_from_its_revision_and_comments_follow(
    engine: LocalEngine, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = ["--endpoint-url", engine.endpoint_url, "--table", "cli_topics"]
    assert cli_main(["create-table", *args]) == 0
    bad = tmp_path / "bad.json"
    broken = {**DOCUMENT, "topics": [{**BATTERY, "words": {"en": ["!!"]}}]}
    bad.write_text(json.dumps(broken))
    capsys.readouterr()
    assert cli_main(["taxonomy", "load", str(bad), *args]) == 1
    err = capsys.readouterr().err
    assert "topics[0].words.en[0]: '!!' has no letters or digits" in err
    assert "nothing was stored" in err

    good = tmp_path / "topics.json"
    good.write_text(json.dumps(DOCUMENT))
    assert cli_main(["taxonomy", "load", str(good), *args]) == 0
    assert "stored 2 topics as revision 1" in capsys.readouterr().out
    assert cli_main(["taxonomy", "load", str(good), *args]) == 0
    assert "(revision 1) is this one already" in capsys.readouterr().out
    fewer = tmp_path / "fewer.json"
    fewer.write_text(json.dumps({**DOCUMENT, "topics": [BATTERY]}))
    assert cli_main(["taxonomy", "load", str(fewer), *args, "--revision", "0"]) == 1
    assert "at revision 1, not 0" in capsys.readouterr().err

    assert cli_main(["retag", *args, "--settle-seconds", "0"]) == 0
    captured = capsys.readouterr()
    assert captured.err.splitlines()[-1].startswith("re-tagging: ")
    assert captured.out.startswith("re-tagged 0 comments")
    assert cli_main(["retag", *args, "--settle-seconds", "0"]) == 0
    assert "tagged with the stored taxonomy already" in capsys.readouterr().out
    assert cli_main(["retag", *args, "--page-items", "0"]) == 2
