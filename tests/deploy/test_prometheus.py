"""What Prometheus and Grafana read: the alert rules (deploy/prometheus/alerts.yml), the
dashboard (deploy/grafana-dashboard.json) and the manual's queries (docs/operations.md) name
only metrics a running server exports, in the series its types export; every alert says how
bad it is and points to its runbook, which has a section for each alert and no other.
promtool checks the rules and tests them (scripts/test)."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml
from prometheus_client.parser import text_string_to_metric_families

from resolvers.auth import mint
from server.dev.local_engine import LocalEngine
from storage.engine.table import TableRef
from testing.live_server import live_server
from testing.scrape import parse_scrape
from tests.api_helpers import SECRET

ROOT = Path(__file__).resolve().parents[2]
ALERTS = ROOT / "deploy" / "prometheus" / "alerts.yml"
DASHBOARD = ROOT / "deploy" / "grafana-dashboard.json"
MANUAL = ROOT / "docs" / "operations.md"
METRIC_NAME = re.compile(r"\bcomments_[a-z0-9_]+")
RECORDED_NAME = re.compile(r"\bcomments:[a-z0-9_:]+")
SCRAPE_HEALTH = re.compile(r"\bup\{job=\"comments\"\}")
# The series each type of family exports, by suffix (the text format's; a counter's family
# is named without its _total, and each _created is a family of its own).
SUFFIXES = {
    "counter": ("_total",),
    "histogram": ("_bucket", "_sum", "_count"),
    "summary": ("", "_sum", "_count"),
    "gauge": ("",),
    "untyped": ("",),
}
SEVERITIES = {"critical", "warning"}
RUNBOOK = "docs/operations.md#"

STATS = 'query ProductStats { product(productId: "prometheus-none") { stats { total } } }'
POST = """mutation Post {
  createComment(input: {productId: "prometheus-none", rating: 4, language: "en", body: "Hi"}) {
    created } }"""


def exported_series(scrape: str) -> set[str]:
    """Every series name a scrape exports: each family's name with its type's suffixes, its
    samples yet to come or not (a labelled counter nothing has moved is declared all the
    same)."""
    names: set[str] = set()
    for family in text_string_to_metric_families(scrape):
        names.update(family.name + suffix for suffix in SUFFIXES.get(family.type, ("",)))
    return names


def unexported(queries: list[str], exported: set[str]) -> list[tuple[str, set[str]]]:
    """The queries that name a series the server does not export, with those names."""
    return [
        (query, missing)
        for query in queries
        if (missing := set(METRIC_NAME.findall(query)) - exported)
    ]


def _rules() -> list[dict[str, Any]]:
    document = yaml.safe_load(ALERTS.read_text())
    return [rule for group in document["groups"] for rule in group["rules"]]


def _alerts() -> list[dict[str, Any]]:
    return [rule for rule in _rules() if "alert" in rule]


def _dashboard_queries() -> list[str]:
    dashboard = json.loads(DASHBOARD.read_text())
    return [t["expr"] for p in dashboard["panels"] for t in p.get("targets", [])]


def _manual_queries() -> list[str]:
    """The queries of the promql blocks of the manual's metrics page, one per paragraph,
    comments left out."""
    blocks = re.findall(r"```promql\n(.*?)```", MANUAL.read_text(), flags=re.DOTALL)
    queries = []
    for block in blocks:
        for paragraph in block.split("\n\n"):
            lines = [line for line in paragraph.splitlines() if not line.startswith("#")]
            if lines:
                queries.append("\n".join(lines))
    return queries


@pytest.fixture(scope="module")
def scrape(engine: LocalEngine, table: TableRef) -> Iterator[str]:
    """A live server's /metrics after some traffic: reads, a request error, a write."""
    with (
        live_server(engine.endpoint_url, table.name, SECRET) as server,
        httpx.Client(timeout=30) as http,
    ):
        assert "errors" not in http.post(server.graphql_url, json={"query": STATS}).json()
        http.post(server.graphql_url, json={"query": "{"})
        headers = {"authorization": f"Bearer {mint(SECRET, 'prometheus-writer')}"}
        written = http.post(server.graphql_url, json={"query": POST}, headers=headers).json()
        assert written["data"]["createComment"]["created"] is True, written
        scraped = http.get(f"{server.base_url}/metrics")
        assert scraped.status_code == 200
        yield scraped.text


def test_the_rules_the_dashboard_and_the_manual_name_only_exported_metrics(scrape: str) -> None:
    exported = exported_series(scrape)
    rules = [rule["expr"] for rule in _rules()]
    dashboard, manual = _dashboard_queries(), _manual_queries()
    assert len(rules) >= 15
    assert len(dashboard) >= 10
    assert len(manual) >= 8
    assert unexported(rules + dashboard + manual, exported) == []
    # Every query names some metric: the server's, a recording rule's, or the one
    # Prometheus makes of each scrape (up).
    for query in rules + dashboard + manual:
        named = METRIC_NAME.search(query) or RECORDED_NAME.search(query)
        assert named or SCRAPE_HEALTH.search(query), query


def test_a_process_without_a_broker_says_it_takes_no_change_from_one(scrape: str) -> None:
    # The fan-out alerts select the hosts whose processes use the broker by this gauge:
    # exported at 0 by a process that follows the stream itself (FANOUT_URL unset).
    assert parse_scrape(scrape)[("comments_fanout_processes", frozenset())] == 0


def test_the_check_finds_a_renamed_metric_or_a_wrong_suffix(scrape: str) -> None:
    exported = exported_series(scrape)
    [gaps] = [rule["expr"] for rule in _alerts() if rule["alert"] == "CommentsStreamGaps"]
    assert unexported([gaps], exported) == []
    renamed = gaps.replace("comments_stream_gaps_total", "comments_stream_gap_total")
    assert unexported([renamed], exported) == [(renamed, {"comments_stream_gap_total"})]
    # A counter has no _count, a histogram no series without a suffix.
    for wrong in ("comments_stream_gaps_count", "comments_graphql_request_duration_seconds"):
        assert unexported([f"rate({wrong}[5m])"], exported) == [(f"rate({wrong}[5m])", {wrong})]
    # The suffixes of each type are there: a histogram's, a counter's, a gauge's.
    assert {
        "comments_graphql_request_duration_seconds_bucket",
        "comments_graphql_request_duration_seconds_count",
        "comments_storage_throttles_total",
        "comments_process_resident_memory_bytes",
        "comments_build_info",
    } <= exported


def test_every_recorded_name_an_alert_uses_is_recorded() -> None:
    recorded = {rule["record"] for rule in _rules() if "record" in rule}
    used = {name for rule in _alerts() for name in RECORDED_NAME.findall(rule["expr"])}
    assert used
    assert used <= recorded
    for name in recorded:
        assert re.fullmatch(r"comments:[a-z0-9_]+:[a-z0-9_]+", name), name


def _runbook_sections() -> set[str]:
    """The anchors of the alerts' sections in the manual: each alert is a heading of its
    own under "Alerts" (mkdocs makes its anchor: the name in lower case)."""
    page = MANUAL.read_text()
    alerts = page.split("\n## Alerts\n", 1)[1].split("\n## ", 1)[0]
    return {heading.lower() for heading in re.findall(r"^### (Comments\w+)$", alerts, re.M)}


def test_every_alert_says_how_bad_it_is_and_where_its_runbook_is() -> None:
    sections = _runbook_sections()
    named = set()
    for alert in _alerts():
        name = alert["alert"]
        assert re.fullmatch(r"Comments[A-Z]\w+", name), name
        assert alert.get("for"), name
        assert alert["labels"]["severity"] in SEVERITIES, name
        annotations = alert["annotations"]
        assert annotations["summary"], name
        assert annotations["description"], name
        assert annotations["runbook_url"] == RUNBOOK + name.lower(), name
        named.add(name.lower())
    # A section for every alert, and none for an alert that is no more.
    assert sections == named
