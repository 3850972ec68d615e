"""deploy/service.yaml, the reference service stack: its tasks' environment is made of the
settings the code reads and holds what production needs; its roles are deploy/iam's; its
health checks ask the right endpoint for the right question; its drain fits the settings."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from server.settings import Settings
from server.settings.http import HttpSettings
from tests.deploy.templates import load_template

ROOT = Path(__file__).resolve().parents[2]
TEMPLATE = ROOT / "deploy" / "service.yaml"
# What a production task cannot start without (server/settings: the production posture),
# or would run wrongly without (its table, its region, the load balancer's addresses).
PRODUCTION_NEEDS = {
    "PRODUCTION",
    "DYNAMODB_ENDPOINT_URL",
    "AWS_REGION",
    "DYNAMODB_TABLE",
    "JWT_SECRET",
    "AUTHOR_ID_KEY",
    "HOST",
    "PORT",
    "FORWARDED_ALLOW_IPS",
}
TABLE_ARN = "arn:${AWS::Partition}:dynamodb:${AWS::Region}:${AWS::AccountId}:table/${TableName}"


@pytest.fixture(scope="module")
def template() -> dict[str, Any]:
    return load_template(TEMPLATE)


def _container(template: dict[str, Any], task: str) -> dict[str, Any]:
    definitions = template["Resources"][task]["Properties"]["ContainerDefinitions"]
    assert len(definitions) == 1
    container: dict[str, Any] = definitions[0]
    return container


def _secrets(container: dict[str, Any]) -> list[dict[str, Any]]:
    """The secrets, those a condition adds (``Fn::If``, the rotation's) included."""
    found = []
    for entry in container.get("Secrets", []):
        if "Fn::If" in entry:
            entry = entry["Fn::If"][1]
        found.append(entry)
    return found


def _variables(container: dict[str, Any]) -> set[str]:
    named = [v["Name"] for v in container.get("Environment", [])]
    named += [s["Name"] for s in _secrets(container)]
    assert len(named) == len(set(named)), "a variable is set twice"
    return set(named)


SETTINGS = {name.upper() for name in Settings.model_fields}


@pytest.mark.parametrize("task", ["TaskDefinition", "MigrationTaskDefinition"])
def test_every_variable_is_a_setting_the_code_reads(template: dict[str, Any], task: str) -> None:
    # A misspelt variable would be ignored (the settings ignore unknown ones) and its
    # default used instead, silently.
    assert _variables(_container(template, task)) - SETTINGS == set()


def test_the_serving_task_has_what_production_needs(template: dict[str, Any]) -> None:
    api = _container(template, "TaskDefinition")
    assert _variables(api) >= PRODUCTION_NEEDS
    environment = {v["Name"]: v["Value"] for v in api["Environment"]}
    assert environment["PRODUCTION"] == "true"
    # The secrets come from Secrets Manager, never as plain values in the task definition.
    secrets = {s["Name"] for s in _secrets(api)}
    assert secrets == {"JWT_SECRET", "AUTHOR_ID_KEY", "JWT_PREVIOUS_SECRET"}
    assert not secrets & set(environment)
    # The values the settings would refuse are refused here too: the environment as a
    # production task gets it (parameters and secrets filled in) makes valid settings.
    filled = {
        name: value if isinstance(value, str) else "placeholder"
        for name, value in environment.items()
    }
    filled.update(
        DYNAMODB_ENDPOINT_URL="https://dynamodb.eu-west-1.amazonaws.com",
        AWS_REGION="eu-west-1",
        DYNAMODB_TABLE="comments",
        WORKERS="2",
        WEBHOOKS="false",
        CORS_ORIGINS="https://shop.example",
        FORWARDED_ALLOW_IPS="10.0.0.0/16",
        SHUTDOWN_DELAY_SECONDS="15",
        JWT_SECRET="s" * 40,
        AUTHOR_ID_KEY="k" * 40,
        JWT_PREVIOUS_SECRET="p" * 40,
    )
    settings = Settings.model_validate({name.lower(): value for name, value in filled.items()})
    assert settings.production
    assert not settings.creates_table
    # Deliveries from production tasks never reach loopback or plain http.
    assert settings.webhook_policy.allow_loopback is False
    assert settings.webhook_policy.allow_http is False


def test_the_load_balancer_asks_readiness_and_the_container_liveness(
    template: dict[str, Any],
) -> None:
    group = template["Resources"]["TargetGroup"]["Properties"]
    assert group["HealthCheckPath"] == "/readyz"
    check = " ".join(_container(template, "TaskDefinition")["HealthCheck"]["Command"])
    assert "/livez" in check
    assert "/readyz" not in check


def test_the_drain_fits_in_the_deregistration_delay_and_the_stop_timeout(
    template: dict[str, Any],
) -> None:
    api = _container(template, "TaskDefinition")
    environment = {v["Name"]: v["Value"] for v in api["Environment"]}
    delay = int(template["Parameters"]["ShutdownDelaySeconds"]["Default"])
    timeout = int(environment["SHUTDOWN_TIMEOUT_SECONDS"])
    attributes = template["Resources"]["TargetGroup"]["Properties"]["TargetGroupAttributes"]
    deregistration = int(
        next(a["Value"] for a in attributes if a["Key"] == "deregistration_delay.timeout_seconds")
    )
    group = template["Resources"]["TargetGroup"]["Properties"]
    # The load balancer must see the 503 before the listener closes...
    noticed = group["HealthCheckIntervalSeconds"] * group["UnhealthyThresholdCount"]
    assert delay > noticed
    # ...and keep the connections open, and ECS the task alive, for the whole drain.
    assert deregistration >= delay + timeout
    assert api["StopTimeout"] > delay + timeout
    # The API keeps idle connections longer than the load balancer, which closes them first.
    idle = next(
        a["Value"]
        for a in template["Resources"]["LoadBalancer"]["Properties"]["LoadBalancerAttributes"]
        if a["Key"] == "idle_timeout.timeout_seconds"
    )
    assert float(environment["KEEP_ALIVE_TIMEOUT"]) > int(idle)
    assert HttpSettings.model_fields["keep_alive_timeout"].default < int(idle)  # why it is set


def _statements(template: dict[str, Any], role: str) -> dict[str, tuple[set[str], set[str]]]:
    """Sid -> (actions, resources with ${TableArn} for the table's ARN)."""
    (policy,) = template["Resources"][role]["Properties"]["Policies"]
    found = {}
    for statement in policy["PolicyDocument"]["Statement"]:
        assert statement["Effect"] == "Allow"
        resources = {r["Fn::Sub"].replace(TABLE_ARN, "${TableArn}") for r in statement["Resource"]}
        found[statement["Sid"]] = (set(statement["Action"]), resources)
    return found


@pytest.mark.parametrize(
    ("role", "policy"), [("RuntimeRole", "runtime"), ("OperationsRole", "operations")]
)
def test_the_roles_grant_what_deploy_iam_does(
    template: dict[str, Any], role: str, policy: str
) -> None:
    document = json.loads((ROOT / "deploy" / "iam" / f"{policy}.json").read_text())
    expected = {s["Sid"]: (set(s["Action"]), set(s["Resource"])) for s in document["Statement"]}
    assert _statements(template, role) == expected


def test_the_serving_task_runs_with_the_runtime_role_and_the_migration_with_operations(
    template: dict[str, Any],
) -> None:
    resources = template["Resources"]
    serving = resources["TaskDefinition"]["Properties"]["TaskRoleArn"]
    migrating = resources["MigrationTaskDefinition"]["Properties"]["TaskRoleArn"]
    assert serving == {"Fn::GetAtt": ["RuntimeRole", "Arn"]}
    assert migrating == {"Fn::GetAtt": ["OperationsRole", "Arn"]}
    command = _container(template, "MigrationTaskDefinition")["Command"]
    assert command[-1] == "migrate-table"
    assert re.fullmatch(r"(\.venv/bin/)?comments", command[0])
