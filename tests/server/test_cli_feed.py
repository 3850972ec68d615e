"""``comments export``: the feed on stdout or in a file, product identifiers from a
catalogue file, bad templates refused before anything is read."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from lxml import etree

from server.cli import main as cli_main
from server.dev.local_engine import LocalEngine
from storage.engine.client import ClientSettings, open_client
from storage.model.comments import Comment
from storage.model.items import comment_to_item
from storage.ops.create import create_table

XSD = Path(__file__).parents[2] / "storage" / "ops" / "feeds" / "product_reviews.xsd"
TEMPLATES = [
    "--format",
    "google-product-reviews",
    "--review-url-template",
    "https://shop.example/p/{productId}#review-{commentId}",
    "--product-url-template",
    "https://shop.example/p/{productId}",
    "--publisher-name",
    "Shop",
]


async def _seed(endpoint: str, table: str) -> None:
    async with open_client(ClientSettings(endpoint_url=endpoint)) as client:
        await create_table(client, table, stream=False)
        for n in range(3):
            c = Comment(f"c{n}", "p1", "en", 5, None, f"Body {n}", "a", "2024-01-01T00:00:00.000Z")
            await client.put_item(TableName=table, Item=comment_to_item(c))


@pytest.mark.engine
def test_cli_exports_to_a_file_with_catalogue_identifiers(
    engine: LocalEngine, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    asyncio.run(asyncio.wait_for(_seed(engine.endpoint_url, "cli_feed"), 60))
    catalogue = tmp_path / "catalogue.jsonl"
    lines = [{"productId": "p1", "gtin": "4006381333931", "brand": "Acme"}, {"productId": "?"}]
    catalogue.write_text("".join(json.dumps(line) + "\n" for line in lines))
    output = tmp_path / "feed.xml"
    args = ["--endpoint-url", engine.endpoint_url, "--table", "cli_feed", *TEMPLATES]
    code = cli_main(["export", *args, "--catalogue", str(catalogue), "--output", str(output)])
    assert code == 0
    document = etree.parse(str(output))
    assert etree.XMLSchema(etree.parse(str(XSD))).validate(document)
    assert document.xpath("count(//review)") == 3
    assert document.xpath("string(//review[review_id='c1']//gtin)") == "4006381333931"
    err = capsys.readouterr().err
    assert "catalogue line 2 skipped" in err
    assert "wrote 3 reviews" in err
    assert "--since" in err

    assert cli_main(["export", *args]) == 0  # to stdout
    out = capsys.readouterr().out
    assert out.startswith('<?xml version="1.0" encoding="UTF-8"?>')
    assert out.count("<review>") == 3


def test_cli_refuses_a_bad_template_a_bad_since_and_a_file_limit_below_a_review(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = [*TEMPLATES]
    bad[bad.index("--product-url-template") + 1] = "https://shop.example/{commentId}"
    output = tmp_path / "feed.xml"
    assert cli_main(["export", *bad, "--output", str(output)]) == 2
    assert "unknown placeholder {commentId}" in capsys.readouterr().err
    assert cli_main(["export", *TEMPLATES, "--since", "yesterday"]) == 2
    assert "ISO-8601" in capsys.readouterr().err
    small = ["--output", str(output), "--max-file-bytes", "5000"]
    assert cli_main(["export", *TEMPLATES, *small]) == 2
    assert "--max-file-bytes is 0 or at least 1,000,000" in capsys.readouterr().err
    assert not output.exists()
