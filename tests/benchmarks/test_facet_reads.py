"""The facet reads benchmark (benchmarks/reads/facet_reads.py, its report
benchmarks/reads/facet_report.py, behind docs/benchmarks/facets.md) in its fast form: a
small product loaded with its facet items (verified exact), every filter walked by both
readers, which must return the brute-force pages, and a result its report can render.
Figures are checked for shape, never for speed."""

from __future__ import annotations

import json
import uuid
from dataclasses import replace

import pytest

from benchmarks.reads import facet_data, facet_reads, facet_report
from storage.base.types import DynamoClient
from storage.model.facets import FacetValue
from testing.facet_items import facet_items


def test_the_data_set_draws_values_at_their_rates() -> None:
    made = facet_data.comments([("p", 4_000)], seed=3)
    share = {
        value: sum(value in c.facets for c in made) / len(made)
        for value in (facet_reads.BATTERY, facet_reads.SMALL, facet_reads.REGULAR)
    }
    assert share[facet_reads.BATTERY] == pytest.approx(0.06, abs=0.015)
    assert share[facet_reads.SMALL] == pytest.approx(0.10, abs=0.02)
    assert share[facet_reads.REGULAR] == pytest.approx(0.30, abs=0.03)
    assert all(len([v for v in c.facets if v.token.startswith("t:")]) <= 4 for c in made)


def test_facet_items_count_each_value_once_per_comment() -> None:
    c = facet_data.comments([("p", 1)], seed=1)[0]
    values = frozenset({FacetValue.topic("price"), FacetValue.attribute("fit", "small")})
    one = replace(c, facets=values, incentivized=False)
    items = facet_items([one, one])
    entries = [i for i in items if i["SK"]["S"].startswith("FACET#")]
    counters = [i for i in items if i["SK"]["S"].startswith("F#")]
    assert len(entries) == 4  # the same comment twice: its two entries, put twice
    assert len(counters) == 2
    assert all(int(v["N"]) == 2 for i in counters for k, v in i.items() if "N" in v)


async def test_the_fast_form_runs_and_reports(client: DynamoClient) -> None:
    table = f"facet_reads_{uuid.uuid4().hex[:8]}"
    products = (("facets-smoke", 900),)
    result = await facet_reads.run(client, products, pages=2, seed=5, table_name=table)
    result.update(command="test", when="now", page_size=facet_reads.PAGE, pages_per_walk=2)
    json.dumps(result)  # what the long form writes
    rows = result["rows"]
    assert {r["filter"] for r in rows} <= {
        f.name for f in facet_reads.ONE_VALUE + tuple(f for _, f in facet_reads.TWO_VALUES)
    }
    assert any(r["values"] == 2 for r in rows)
    assert any(r["values"] == 1 for r in rows)
    for r in rows:
        for reader in ("ours", "ours_again", "blog"):
            figures = r[reader]
            assert 1 <= figures["pages"] <= 2
            assert figures["full_pages"] == figures["pages"]
            assert figures["amplification"] >= 1.0 or r["matching"] == 0
        assert r["estimated_calls"] > 0
    assert [r["z"] for r in result["headroom_sweep"]] == list(facet_reads.SWEEP)
    assert all(r["pages"] > 0 for r in result["headroom_sweep"])
    targets = facet_report.target_rows(result)
    assert targets
    assert all(isinstance(ok, bool) for _, _, ok in targets)
    lines = facet_report.section(result)
    header = next(line for line in lines if line.startswith("| product"))
    assert all(line.count("|") == header.count("|") for line in lines[4 : 6 + len(rows)])
