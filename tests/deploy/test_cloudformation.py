"""deploy/cloudformation.yaml declares the table that create-table makes, and alarms on it."""

from __future__ import annotations

import copy
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from storage.model.indexes import TTL_ATTR, Index, table_definition
from tests.deploy.templates import load_template

TEMPLATE = Path(__file__).resolve().parents[2] / "deploy" / "cloudformation.yaml"
THROTTLE_EVENTS = {"ReadThrottleEvents", "WriteThrottleEvents"}
PER_OPERATION = {"ThrottledRequests", "SystemErrors"}
Sides = tuple[dict[str, Any], dict[str, Any]]  # (the template's table, create-table's request)


@pytest.fixture(scope="module")
def template() -> dict[str, Any]:
    loaded: dict[str, Any] = load_template(TEMPLATE)
    return loaded


def _resources(template: dict[str, Any], kind: str) -> dict[str, dict[str, Any]]:
    return {k: r for k, r in template["Resources"].items() if r["Type"] == kind}


def _table(template: dict[str, Any]) -> dict[str, Any]:
    tables = _resources(template, "AWS::DynamoDB::Table")
    assert list(tables) == ["Table"]
    properties: dict[str, Any] = tables["Table"]["Properties"]
    return properties


def table_differences(declared: dict[str, Any], created: dict[str, Any]) -> list[str]:
    """What the template's table declares otherwise than the CreateTable request (none: [])."""
    found = []

    def attributes(table: dict[str, Any]) -> list[tuple[str, str]]:
        return sorted(
            (a["AttributeName"], a["AttributeType"]) for a in table["AttributeDefinitions"]
        )

    if attributes(declared) != attributes(created):
        found.append(f"attributes: {attributes(declared)} != {attributes(created)}")
    for key in ("KeySchema", "BillingMode"):
        if declared.get(key) != created.get(key):
            found.append(f"{key}: {declared.get(key)} != {created.get(key)}")
    names = [g["IndexName"] for g in declared["GlobalSecondaryIndexes"]]
    if len(set(names)) != len(names):
        found.append(f"an index is declared twice: {names}")
    ours = {g["IndexName"]: g for g in declared["GlobalSecondaryIndexes"]}
    theirs = {g["IndexName"]: g for g in created["GlobalSecondaryIndexes"]}
    if missing := sorted(theirs.keys() - ours.keys()):
        found.append(f"indexes create-table makes and the template lacks: {missing}")
    if extra := sorted(ours.keys() - theirs.keys()):
        found.append(f"indexes the template declares and create-table does not make: {extra}")
    for name in sorted(ours.keys() & theirs.keys()):
        if ours[name].keys() != theirs[name].keys():
            found.append(f"{name} declares {sorted(ours[name])}, not {sorted(theirs[name])}")
        for key in ("KeySchema", "Projection"):
            if ours[name][key] != theirs[name][key]:
                found.append(f"{name} {key}: {ours[name][key]} != {theirs[name][key]}")
    return found


def test_the_template_declares_the_table_create_table_makes(template: dict[str, Any]) -> None:
    assert table_differences(_table(template), table_definition("comments")) == []
    assert {g["IndexName"] for g in _table(template)["GlobalSecondaryIndexes"]} == {
        i.value for i in Index
    }


def _with_index(definition: dict[str, Any], name: str) -> dict[str, Any]:
    changed = copy.deepcopy(definition)
    index = copy.deepcopy(changed["GlobalSecondaryIndexes"][0])
    index["IndexName"] = name
    changed["GlobalSecondaryIndexes"].append(index)
    return changed


def _with_projection(definition: dict[str, Any], projection: str) -> dict[str, Any]:
    changed = copy.deepcopy(definition)
    changed["GlobalSecondaryIndexes"][-1]["Projection"] = {"ProjectionType": projection}
    return changed


def _with_throughput(definition: dict[str, Any]) -> dict[str, Any]:
    changed = copy.deepcopy(definition)
    changed["GlobalSecondaryIndexes"][0]["OnDemandThroughput"] = {"MaxReadRequestUnits": 100}
    return changed


def _with_sort_key(definition: dict[str, Any], attr: str) -> dict[str, Any]:
    changed = copy.deepcopy(definition)
    changed["GlobalSecondaryIndexes"][0]["KeySchema"][1]["AttributeName"] = attr
    changed["AttributeDefinitions"].append({"AttributeName": attr, "AttributeType": "S"})
    return changed


@pytest.mark.parametrize(
    ("change", "said"),
    [
        (lambda t, c: (t, _with_index(c, "notAnIndex")), "the template lacks: ['notAnIndex']"),
        (lambda t, c: (_with_index(t, "notAnIndex"), c), "does not make: ['notAnIndex']"),
        (lambda t, c: (_with_index(t, "all"), c), "declared twice"),
        (lambda t, c: (_with_projection(t, "KEYS_ONLY"), c), "Projection"),
        (lambda t, c: (_with_throughput(t), c), "'OnDemandThroughput', 'Projection'], not"),
        (lambda t, c: (t, _with_sort_key(c, "MSK")), "attributes"),
        (lambda t, c: (t, _with_sort_key(c, "MSK")), "byLangAndRating KeySchema"),
    ],
    ids=["only-in-storage", "only-in-template", "twice", "projection", "more", "attrs", "keys"],
)
def test_a_difference_fails_the_comparison(
    template: dict[str, Any], change: Callable[[dict[str, Any], dict[str, Any]], Sides], said: str
) -> None:
    """The comparison above can fail: a change on one side alone is named."""
    declared, created = change(copy.deepcopy(_table(template)), table_definition("comments"))
    assert any(said in line for line in table_differences(declared, created))


def test_ttl_backups_billing_stream_and_protection(template: dict[str, Any]) -> None:
    table = _table(template)
    assert table["TimeToLiveSpecification"] == {"AttributeName": TTL_ATTR, "Enabled": True}
    assert table["BillingMode"] == "PAY_PER_REQUEST"
    assert "ProvisionedThroughput" not in table
    assert table["PointInTimeRecoverySpecification"] == {"PointInTimeRecoveryEnabled": True}
    assert table["DeletionProtectionEnabled"] is True
    assert table["SSESpecification"]["SSEEnabled"] is True
    assert table["TableName"] == {"Ref": "TableName"}
    resource = template["Resources"]["Table"]
    assert resource["DeletionPolicy"] == resource["UpdateReplacePolicy"] == "Retain"
    # The processes read old and new images: the template gives the view create-table does.
    view = table["StreamSpecification"]["StreamViewType"]
    assert view == "NEW_AND_OLD_IMAGES"
    assert table_definition("comments")["StreamSpecification"] == {
        "StreamEnabled": True,
        "StreamViewType": view,
    }


def _watched(alarm: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """(metric name, dimensions) of every metric an alarm reads."""
    properties = alarm["Properties"]
    if "MetricName" in properties:
        metrics = [properties]
    else:
        metrics = [q["MetricStat"]["Metric"] for q in properties["Metrics"] if "MetricStat" in q]
    return [(m["MetricName"], {d["Name"]: d["Value"] for d in m["Dimensions"]}) for m in metrics]


def _alarms(template: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return _resources(template, "AWS::CloudWatch::Alarm")


def test_a_throttle_alarm_for_the_table_and_every_index(template: dict[str, Any]) -> None:
    """Each alarm watches read and write throttle events of one target: the table or an index."""
    covered: dict[str | None, str] = {}
    for name, alarm in _alarms(template).items():
        watched = _watched(alarm)
        if not {metric for metric, _ in watched} & THROTTLE_EVENTS:
            continue
        assert {metric for metric, _ in watched} == THROTTLE_EVENTS, name
        targets = {dims.get("GlobalSecondaryIndexName") for _, dims in watched}
        assert len(targets) == 1, name
        assert all(dims["TableName"] == {"Ref": "Table"} for _, dims in watched), name
        assert all(set(dims) <= {"TableName", "GlobalSecondaryIndexName"} for _, dims in watched)
        (target,) = targets
        assert target not in covered, f"{name} and {covered.get(target)} watch {target}"
        covered[target] = name
    assert set(covered) == {None, *(i.value for i in Index)}


@pytest.mark.parametrize("metric", sorted(PER_OPERATION))
def test_per_operation_alarms_add_up_the_operations(template: dict[str, Any], metric: str) -> None:
    """CloudWatch keeps ThrottledRequests and SystemErrors per operation; one alarm adds them."""
    (alarm,) = [a for a in _alarms(template).values() if metric in dict(_watched(a))]
    watched = _watched(alarm)
    assert {m for m, _ in watched} == {metric}
    operations = {dims["Operation"] for _, dims in watched}
    assert {"Query", "GetItem", "BatchGetItem", "TransactWriteItems", "PutItem"} <= operations
    assert len(operations) == len(watched) <= 10  # an alarm may add at most ten metrics


def test_each_alarm_sees_all_it_reads_and_tells_the_topic(template: dict[str, Any]) -> None:
    notify = {"Fn::If": ["HasAlarmTopic", [{"Ref": "AlarmTopicArn"}], {"Ref": "AWS::NoValue"}]}
    for name, alarm in _alarms(template).items():
        properties = alarm["Properties"]
        assert properties["AlarmActions"] == properties["OKActions"] == notify, name
        assert properties["TreatMissingData"] == "notBreaching", name
        queries = properties["Metrics"]
        (returned,) = [q for q in queries if q.get("ReturnData")]
        used = set(re.findall(r"\b[a-z]\w*", returned["Expression"]))
        assert used == {q["Id"] for q in queries if "MetricStat" in q}, name


def test_outputs_name_the_table_its_arn_and_its_stream(template: dict[str, Any]) -> None:
    assert {k: v["Value"] for k, v in template["Outputs"].items()} == {
        "TableName": {"Ref": "Table"},
        "TableArn": {"Fn::GetAtt": ["Table", "Arn"]},
        "StreamArn": {"Fn::GetAtt": ["Table", "StreamArn"]},
    }
