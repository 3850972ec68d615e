"""deploy/service.yaml, the reference service stack: its tasks' environment is made of the
settings the code reads and holds what production needs; its roles are deploy/iam's; its
health checks ask the right endpoint for the right question; its drain fits the settings;
its fan-out broker is reached over TLS with a token, by the tasks alone, through a
FANOUT_URL the settings take, and its alarms watch each of its nodes."""

from __future__ import annotations

import copy
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
    "FANOUT_URL",
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
    assert secrets == {"JWT_SECRET", "AUTHOR_ID_KEY", "JWT_PREVIOUS_SECRET", "FANOUT_URL"}
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
        FANOUT_URL=_fanout_url(template, token="t" * 64, host="master.x.cache.amazonaws.com"),
    )
    settings = Settings.model_validate({name.lower(): value for name, value in filled.items()})
    assert settings.production
    assert not settings.creates_table
    assert settings.fanout_url is not None
    assert settings.fanout_url.startswith("rediss://")
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


# The fan-out broker.

BROKER_METRICS = {
    "EngineCPUUtilization",
    "DatabaseMemoryUsagePercentage",
    "CurrConnections",
    "ReplicationLag",
}
NO_VALUE = {"Ref": "AWS::NoValue"}
TOKEN_REFERENCE = "{{resolve:secretsmanager:${BrokerAuthToken}:SecretString}}"


def _fanout_url(template: dict[str, Any], *, token: str, host: str) -> str:
    """FANOUT_URL as a task gets it: the stack's secret, its references filled in."""
    secret: str = template["Resources"]["FanoutUrl"]["Properties"]["SecretString"]["Fn::Sub"]
    return (
        secret.replace(TOKEN_REFERENCE, token)
        .replace("${Broker.PrimaryEndPoint.Address}", host)
        .replace("${Broker.PrimaryEndPoint.Port}", "6379")
    )


def resolved(value: Any, conditions: dict[str, bool]) -> Any:
    """A part of the template as CloudFormation makes it under ``conditions``: each
    ``Fn::If`` replaced by its branch, ``AWS::NoValue`` left out."""
    if isinstance(value, dict):
        if "Fn::If" in value:
            name, yes, no = value["Fn::If"]
            return resolved(yes if conditions[name] else no, conditions)
        made = {k: resolved(v, conditions) for k, v in value.items()}
        return {k: v for k, v in made.items() if v != NO_VALUE}
    if isinstance(value, list):
        return [v for v in (resolved(v, conditions) for v in value) if v != NO_VALUE]
    return value


def test_the_tasks_reach_the_broker_over_tls_with_its_token(template: dict[str, Any]) -> None:
    resources = template["Resources"]
    broker = resources["Broker"]["Properties"]
    assert broker["TransitEncryptionEnabled"] is True
    assert broker["AtRestEncryptionEnabled"] is True
    assert broker["AuthToken"] == {"Fn::Sub": TOKEN_REFERENCE}
    # The token is made by Secrets Manager, and goes into a URL as it is.
    generated = resources["BrokerAuthToken"]["Properties"]["GenerateSecretString"]
    assert generated["ExcludePunctuation"] is True
    assert 16 <= generated["PasswordLength"] <= 128  # what ElastiCache takes
    # The URL is the primary's, over TLS, with that token, and a secret of its own.
    url = _fanout_url(template, token="t" * 64, host="master.x.cache.amazonaws.com")
    assert url == f"rediss://:{'t' * 64}@master.x.cache.amazonaws.com:6379/0"
    api = _container(template, "TaskDefinition")
    assert {"Name": "FANOUT_URL", "ValueFrom": {"Ref": "FanoutUrl"}} in api["Secrets"]
    # A broker made again changes the secret's value, not its ARN: the broker's address is
    # in the task definition too, so that its change rolls the tasks onto the new one.
    address = "${Broker.PrimaryEndPoint.Address}:${Broker.PrimaryEndPoint.Port}"
    assert api["DockerLabels"]["comments.fanout-broker"] == {"Fn::Sub": address}
    assert address in template["Resources"]["FanoutUrl"]["Properties"]["SecretString"]["Fn::Sub"]
    # The migration task fans nothing out.
    assert "FANOUT_URL" not in _variables(_container(template, "MigrationTaskDefinition"))


def test_the_execution_role_reads_every_secret_a_task_takes(template: dict[str, Any]) -> None:
    (policy,) = template["Resources"]["ExecutionRole"]["Properties"]["Policies"]
    (statement,) = policy["PolicyDocument"]["Statement"]
    assert statement["Action"] == "secretsmanager:GetSecretValue"
    for rotating in (True, False):
        readable = resolved(statement["Resource"], {"Rotating": rotating})
        api = resolved(_container(template, "TaskDefinition"), {"Rotating": rotating})
        taken = [s["ValueFrom"] for s in api["Secrets"]]
        assert sorted(map(str, taken)) == sorted(map(str, readable))


def test_only_the_tasks_reach_the_broker_on_the_private_subnets(
    template: dict[str, Any],
) -> None:
    resources = template["Resources"]
    group = resources["BrokerSecurityGroup"]["Properties"]
    assert group["SecurityGroupIngress"] == [
        {
            "IpProtocol": "tcp",
            "FromPort": 6379,
            "ToPort": 6379,
            "SourceSecurityGroupId": {"Ref": "TaskSecurityGroup"},
        }
    ]
    broker = resources["Broker"]["Properties"]
    assert broker["Port"] == 6379
    assert broker["SecurityGroupIds"] == [{"Fn::GetAtt": ["BrokerSecurityGroup", "GroupId"]}]
    assert broker["CacheSubnetGroupName"] == {"Ref": "BrokerSubnetGroup"}
    subnets = resources["BrokerSubnetGroup"]["Properties"]["SubnetIds"]
    assert subnets == {"Ref": "PrivateSubnetIds"}


@pytest.mark.parametrize("replicated", [True, False], ids=["replica", "one-node"])
def test_the_replica_is_an_option_with_failover_across_zones(
    template: dict[str, Any], replicated: bool
) -> None:
    parameter = template["Parameters"]["BrokerReplica"]
    assert parameter["AllowedValues"] == ["true", "false"]
    assert template["Conditions"]["BrokerReplicated"] == {
        "Fn::Equals": [{"Ref": "BrokerReplica"}, "true"]
    }
    broker = resolved(
        template["Resources"]["Broker"]["Properties"],
        {"BrokerReplicated": replicated, "HasAlarmTopic": False},
    )
    assert broker["NumCacheClusters"] == (2 if replicated else 1)
    assert broker["AutomaticFailoverEnabled"] is replicated
    assert broker["MultiAZEnabled"] is replicated
    assert template["Parameters"]["BrokerNodeType"]["Default"] == "cache.t4g.small"


def _broker_alarms(template: dict[str, Any], replicated: bool) -> dict[str, dict[str, Any]]:
    """The alarms on the broker's metrics that exist with or without the replica."""
    found = {}
    for name, resource in template["Resources"].items():
        if resource["Type"] != "AWS::CloudWatch::Alarm":
            continue
        if resource.get("Condition") == "BrokerReplicated" and not replicated:
            continue
        conditions = {"BrokerReplicated": replicated, "HasAlarmTopic": True}
        properties = resolved(resource["Properties"], conditions)
        if any(
            q.get("MetricStat", {}).get("Metric", {}).get("Namespace") == "AWS/ElastiCache"
            for q in properties.get("Metrics", [])
        ):
            found[name] = properties
    return found


@pytest.mark.parametrize("replicated", [True, False], ids=["replica", "one-node"])
def test_each_broker_alarm_reads_every_node_and_tells_the_topic(
    template: dict[str, Any], replicated: bool
) -> None:
    alarms = _broker_alarms(template, replicated)
    nodes = {"${Broker}-001", "${Broker}-002"} if replicated else {"${Broker}-001"}
    watched = set()
    for name, alarm in alarms.items():
        queries = alarm["Metrics"]
        stats = [q for q in queries if "MetricStat" in q]
        (metric,) = {q["MetricStat"]["Metric"]["MetricName"] for q in stats}
        watched.add(metric)
        read = set()
        for query in stats:
            dimensions = {
                d["Name"]: d["Value"] for d in query["MetricStat"]["Metric"]["Dimensions"]
            }
            assert dimensions["CacheNodeId"] == "0001", name
            read.add(dimensions["CacheClusterId"]["Fn::Sub"])
        # Every node, since a failover swaps primary and replica.
        assert read == nodes, name
        (returned,) = [q for q in queries if q.get("ReturnData")]
        used = set(re.findall(r"\b[a-z]\w*", returned["Expression"]))
        assert used == {q["Id"] for q in stats}, name
        assert alarm["AlarmActions"] == alarm["OKActions"] == [{"Ref": "AlarmTopicArn"}], name
        assert alarm["TreatMissingData"] == "notBreaching", name
    # Engine CPU, memory, connections; the replica's lag only where there is one.
    expected = BROKER_METRICS if replicated else BROKER_METRICS - {"ReplicationLag"}
    assert watched == expected
    assert len(alarms) == len(expected)


def test_a_broker_alarm_missing_a_node_would_be_found(template: dict[str, Any]) -> None:
    """The check above can fail: an alarm that reads the first node only is named."""
    changed = copy.deepcopy(template)
    cpu = changed["Resources"]["BrokerCpuAlarm"]["Properties"]
    cpu["Metrics"] = [q for q in cpu["Metrics"] if "Fn::If" not in q]
    with pytest.raises(AssertionError, match="BrokerCpuAlarm"):
        test_each_broker_alarm_reads_every_node_and_tells_the_topic(changed, True)
