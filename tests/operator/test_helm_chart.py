"""The Helm chart (helm/streamshift) rendered by the real helm binary: lint, the CRDs it
ships equal the generated ones, least-privilege RBAC per watch mode, the operator Deployment, the
Secrets, the ServiceMonitor matching the Services the operator makes, and install notes whose
sample StreamQuery and Migration the operator's models accept."""

from __future__ import annotations

import base64
import re
import tomllib
from pathlib import Path
from typing import Any

import pytest
import yaml
from helm_chart import CHART, container, helm, of_kind, render
from streamshift_operator.models.migration import MigrationSpec
from streamshift_operator.models.streamquery import StreamQuerySpec
from streamshift_operator.resources.pods import QueryIdentity
from streamshift_operator.streamquery.children import build_service
from streamshift_operator.streamquery.plan_check import check_plan

REPO = Path(__file__).resolve().parents[2]


def granted(rules: list[dict[str, Any]]) -> set[tuple[str, str, str]]:
    return {
        (group, resource, verb)
        for rule in rules
        for group in rule["apiGroups"]
        for resource in rule["resources"]
        for verb in rule["verbs"]
    }


def test_chart_lints_and_pins_the_package_version() -> None:
    done = helm("lint", "--strict", str(CHART))
    assert done.returncode == 0, done.stdout + done.stderr
    chart = yaml.safe_load((CHART / "Chart.yaml").read_text())
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    assert chart["appVersion"] == project["version"]
    objects = render()
    assert container(objects)["image"] == f"streamshift/operator:{project['version']}"
    env = {e["name"]: e.get("value") for e in container(objects)["env"]}
    assert env["STREAMSHIFT_WORKER_IMAGE"] == f"streamshift/engine:{project['version']}"


def test_chart_crds_are_the_generated_ones() -> None:
    shipped = sorted((CHART / "crds").iterdir())
    assert [p.resolve() for p in shipped] == sorted((REPO / "crds").glob("*.yaml"))
    done = helm("template", "rel", str(CHART), "--include-crds")
    assert done.returncode == 0, done.stderr
    crds = [d for d in yaml.safe_load_all(done.stdout) if d and d["kind"].startswith("CustomRes")]
    generated = [yaml.safe_load(p.read_text()) for p in sorted((REPO / "crds").glob("*.yaml"))]
    assert len(generated) == 2 and crds == generated


def test_all_namespaces_mode_runs_one_non_root_operator_with_a_cluster_role() -> None:
    objects = render()
    assert sorted(o["kind"] for o in objects) == [
        "ClusterRole",
        "ClusterRoleBinding",
        "Deployment",
        "Secret",
        "ServiceAccount",
    ]
    [deployment] = of_kind(objects, "Deployment")
    assert deployment["spec"]["replicas"] == 1
    assert deployment["spec"]["strategy"] == {"type": "Recreate"}
    pod = deployment["spec"]["template"]["spec"]
    assert pod["serviceAccountName"] == "rel-streamshift"
    assert pod["securityContext"]["runAsNonRoot"] is True and pod["securityContext"]["runAsUser"]
    main = container(objects)
    assert main["securityContext"]["readOnlyRootFilesystem"] is True
    assert main["securityContext"]["allowPrivilegeEscalation"] is False
    assert main["command"] == [
        "kopf",
        "run",
        "--standalone",
        "--all-namespaces",
        "--liveness=http://$(POD_IP):8080/healthz",
        "-m",
        "streamshift_operator.handlers",
    ]
    assert main["livenessProbe"]["httpGet"] == {"path": "/healthz", "port": "health"}
    assert main["ports"][0] == {"name": "health", "containerPort": 8080, "protocol": "TCP"}
    [role] = of_kind(objects, "ClusterRole")
    rules = granted(role["rules"])
    assert ("", "pods", "create") in rules and (
        "streamshift.io",
        "migrations/status",
        "patch",
    ) in rules
    [binding] = of_kind(objects, "ClusterRoleBinding")
    assert binding["subjects"] == [
        {"kind": "ServiceAccount", "name": "rel-streamshift", "namespace": "ops"}
    ]


def test_listed_namespaces_get_roles_and_a_cluster_role_to_follow_them_and_let_go_of_queries() -> (
    None
):
    """Cluster-wide, the operator reads the CRDs and the namespaces, and lists and patches
    StreamQueries: a served namespace's deletion removes its Role before its queries let go of
    kopf's finalizer (`stranded`); it serves only the namespaces named in its environment."""
    objects = render("watchNamespaces={team-a,team-b}", "logLevel=debug", "healthPort=9090")
    [cluster_role] = of_kind(objects, "ClusterRole")
    assert granted(cluster_role["rules"]) == {
        ("apiextensions.k8s.io", "customresourcedefinitions", verb)
        for verb in ("get", "list", "watch")
    } | {("", "namespaces", verb) for verb in ("get", "list", "watch")} | {
        ("streamshift.io", "streamqueries", verb) for verb in ("list", "patch")
    }
    env = {e["name"]: e.get("value") for e in container(objects)["env"]}
    assert env["STREAMSHIFT_WATCH_NAMESPACES"] == "team-a,team-b"
    assert "STREAMSHIFT_WATCH_NAMESPACES" not in {e["name"] for e in container(render())["env"]}
    roles = {r["metadata"]["namespace"]: r for r in of_kind(objects, "Role")}
    bindings = {b["metadata"]["namespace"]: b for b in of_kind(objects, "RoleBinding")}
    assert sorted(roles) == sorted(bindings) == ["team-a", "team-b"]
    assert ("", "services", "create") in granted(roles["team-a"]["rules"])
    assert bindings["team-b"]["subjects"][0]["namespace"] == "ops"
    command = container(objects)["command"]
    assert "--all-namespaces" not in command
    assert [a for a in command if a.startswith("--namespace")] == [
        "--namespace=team-a",
        "--namespace=team-b",
    ]
    assert "--verbose" in command and "--liveness=http://$(POD_IP):9090/healthz" in command
    secrets = {
        (s["metadata"]["namespace"], s["metadata"]["name"]) for s in of_kind(objects, "Secret")
    }
    assert secrets == {("team-a", "streamshift-control"), ("team-b", "streamshift-control")}


@pytest.mark.parametrize("mode", [(), ("watchNamespaces={team-a}",)])
def test_rbac_has_no_wildcards_and_reads_secrets_only_by_name(mode: tuple[str, ...]) -> None:
    objects = render(*mode)
    rules = [r for o in objects if o["kind"] in ("ClusterRole", "Role") for r in o["rules"]]
    for rule in rules:
        assert "*" not in rule["verbs"] + rule["resources"] + rule["apiGroups"]
    all_granted = granted(rules)
    assert {verb for _, resource, verb in all_granted if resource == "secrets"} == {"get"}
    forbidden = ("leases", "nodes", "kopfpeerings", "clusterkopfpeerings")
    assert not any(resource in forbidden for _, resource, _ in all_granted)
    assert {verb for _, resource, verb in all_granted if resource == "namespaces"} <= {
        "get",
        "list",
        "watch",
    }


def test_secrets_control_token_is_random_and_s3_credentials_come_from_values() -> None:
    tokens = {
        base64.b64decode(of_kind(render(), "Secret")[0]["data"]["token"]).decode() for _ in range(2)
    }
    assert len(tokens) == 2 and all(re.fullmatch(r"[A-Za-z0-9]{40}", t) for t in tokens)
    objects = render(
        "controlToken.create=false",
        "s3.credentials.create=true",
        "s3.credentials.accessKey=AK",
        "s3.credentials.secretKey=SK",
    )
    [s3] = of_kind(objects, "Secret")
    assert s3["metadata"]["name"] == "streamshift-s3"
    decoded = {k: base64.b64decode(v).decode() for k, v in s3["data"].items()}
    assert decoded == {"access": "AK", "secret": "SK"}


@pytest.mark.parametrize(
    ("setting", "message"),
    [
        ("healthPort=notaport", "at '/healthPort': got string, want integer"),
        ("healthPort=70000", "at '/healthPort': maximum: got 70,000, want 65,535"),
        ("resources.requests.memory=lots", "'/resources/requests/memory': 'lots' does not match"),
        ("resources.limits.cpu=fast", "at '/resources/limits/cpu': 'fast' does not match"),
        ("replicaCount=2", "at '': additional properties 'replicaCount' not allowed"),
        ("image.pulPolicy=Never", "at '/image': additional properties 'pulPolicy' not allowed"),
        ("logLevel=verbose", "at '/logLevel': value must be one of 'warning', 'info', 'debug'"),
        ("watchNamespaces=team-a", "at '/watchNamespaces': got string, want array"),
        ("watchNamespaces={Team_A}", "at '/watchNamespaces/0': 'Team_A' does not match"),
        ("image.pullPolicy=Sometimes", "at '/image/pullPolicy': value must be one of"),
        ("s3.endpoint=minio:9000", "at '/s3/endpoint': 'minio:9000' does not match"),
        ("kafka.bootstrapServers=kafka", "at '/kafka/bootstrapServers': 'kafka' does not match"),
    ],
)
def test_schema_refuses_bad_values_in_lint_and_template_naming_the_key(
    setting: str, message: str
) -> None:
    """values.schema.json: types, enums, patterns and no unknown keys, checked by both commands
    before any template runs (so a string watchNamespaces no longer fails inside `range`)."""
    linted = helm("lint", "--strict", str(CHART), "--set", setting)
    assert linted.returncode != 0
    assert message in linted.stdout + linted.stderr
    rendered = helm("template", "rel", str(CHART), "--set", setting)
    assert rendered.returncode != 0
    assert message in rendered.stderr and "range can't iterate" not in rendered.stderr


@pytest.mark.parametrize(
    "setting",
    [
        "resources.requests.memory=1Gi",
        "resources.requests.cpu=1",
        "resources.limits.cpu=250m",
        "watchNamespaces={team-a,team-b}",
        "image.tag=0.2.0-rc.1",
        "kafka.bootstrapServers=kafka-0:9092\\,kafka-1:9092",
        "s3.endpoint=https://s3.example.com",
        "metrics.serviceMonitor.interval=1m30s",
    ],
)
def test_schema_admits_good_values(setting: str) -> None:
    done = helm("lint", "--strict", str(CHART), "--set", setting)
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        (["s3.credentials.create=true"], "s3.credentials.accessKey is required"),
        (["serviceAccount.create=false"], "serviceAccount.name is required"),
    ],
)
def test_bad_values_are_refused_with_what_to_fix(settings: list[str], message: str) -> None:
    sets = [arg for setting in settings for arg in ("--set", setting)]
    done = helm("template", "rel", str(CHART), *sets)
    assert done.returncode != 0
    assert message in done.stderr


def test_service_monitor_selects_the_services_the_operator_makes() -> None:
    assert not of_kind(render(), "ServiceMonitor")
    [monitor] = of_kind(render("metrics.serviceMonitor.enabled=true"), "ServiceMonitor")
    service = build_service(QueryIdentity("q5", "ops", "uid-1"))
    labels = service["metadata"]["labels"]
    assert monitor["spec"]["selector"]["matchLabels"].items() <= labels.items()
    [endpoint] = monitor["spec"]["endpoints"]
    assert endpoint["port"] in {p["name"] for p in service["spec"]["ports"]}
    assert endpoint["path"] == "/metrics"
    assert monitor["spec"]["namespaceSelector"] == {"any": True}
    scoped = of_kind(
        render("metrics.serviceMonitor.enabled=true", "watchNamespaces={team-a}"), "ServiceMonitor"
    )
    assert scoped[0]["spec"]["namespaceSelector"] == {"matchNames": ["team-a"]}


def test_install_notes_samples_are_valid_resources() -> None:
    done = helm(
        "install",
        "rel",
        str(CHART),
        "--dry-run=client",
        "--namespace",
        "ops",
        "--set",
        "kafka.bootstrapServers=kafka:9092",
        "--set",
        "s3.endpoint=http://minio:9000",
    )
    assert done.returncode == 0, done.stderr
    notes = done.stdout.split("NOTES:", 1)[1]
    samples = re.findall(r"apply -f - <<'YAML'\n(.*?)\n  YAML", notes, re.S)
    streamquery, migration = (yaml.safe_load(s) for s in samples)
    spec = StreamQuerySpec.model_validate(streamquery["spec"])
    assert spec.kafka.bootstrap_servers == "kafka:9092"
    assert spec.snapshot.endpoint == "http://minio:9000"
    assert spec.control_token.name == "streamshift-control"
    assert check_plan(spec).problems == ()
    assert migration["spec"]["queryRef"]["name"] == streamquery["metadata"]["name"]
    assert MigrationSpec.model_validate(migration["spec"]).verify is True
