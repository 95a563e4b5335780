"""The Helm chart installed for real on the local stack: its objects pass the API server's
dry run; `helm install` runs the operator as a pod of the process node agent, with the chart's
least-privilege Role (the operator authenticates as the chart's service account through a token
kubeconfig), serving only the test's namespace (so it never meets the other tests' operators); it
runs a StreamQuery whose workers report; `helm uninstall` removes the operator and its RBAC, and
the query's children go with it through owner references."""

from __future__ import annotations

import subprocess
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from helm_chart import CHART, helm
from kubernetes import client
from operator_stack import (
    GROUP,
    PARTITIONS,
    SQ,
    VERSION,
    Cluster,
    Stack,
    namespace_gone,
    nexmark,
    produce_inputs,
    stream_query,
)
from streamshift_operator.clients.kafka_topics import ensure_topics
from streamshift_operator.streamquery.stranded import KOPF_FINALIZER
from support.waiting import wait_for

pytestmark = pytest.mark.stack

ACCOUNT = "operator"
DRY_RUN = ("--force-conflicts", "--dry-run=server", "-f", "-")


@pytest.fixture
def namespace(cluster: Cluster) -> Iterator[str]:
    """A namespace of its own, without the Secrets (the chart makes them)."""
    name = f"helm-{uuid.uuid4().hex[:8]}"
    cluster.core.create_namespace({"metadata": {"name": name}})
    yield name
    cluster.core.delete_namespace(name)


def server_dry_run(stack: Stack, manifests: str) -> str:
    """`kubectl apply --server-side --dry-run=server` of MANIFESTS: the API server validates and
    admits every object without storing it."""
    kubectl = Path(stack.kubeconfig).parents[1] / "bin" / "kubectl"
    done = subprocess.run(
        [str(kubectl), "--kubeconfig", stack.kubeconfig, "apply", "--server-side", *DRY_RUN],
        input=manifests,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.mark.parametrize("scoped", [False, True])
def test_rendered_chart_passes_server_dry_run(stack: Stack, namespace: str, scoped: bool) -> None:
    watch = [f"watchNamespaces={{{namespace}}}"] if scoped else []
    sets = [
        arg
        for setting in [*watch, "metrics.serviceMonitor.enabled=false"]
        for arg in ("--set", setting)
    ]
    rendered = helm(
        "template", namespace, str(CHART), "--namespace", namespace, "--include-crds", *sets
    )
    assert rendered.returncode == 0, rendered.stderr
    out = server_dry_run(stack, rendered.stdout)
    expected = ["clusterrole", "clusterrolebinding", "deployment", "secret", "serviceaccount"]
    expected += ["customresourcedefinition"] + (["role", "rolebinding"] if scoped else [])
    applied = {line.split("/")[0].split(".")[0] for line in out.splitlines()}
    assert applied == set(expected), out


def token_kubeconfig(cluster: Cluster, stack: Stack, namespace: str, path: Path) -> Path:
    """A kubeconfig that authenticates as the ServiceAccount ACCOUNT of NAMESPACE (a bound token
    from the TokenRequest API), so the operator has exactly the chart's permissions."""
    request = {"spec": {"expirationSeconds": 3600}}
    token = cluster.core.create_namespaced_service_account_token(ACCOUNT, namespace, request)
    admin = yaml.safe_load(Path(stack.kubeconfig).read_text())
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": admin["clusters"],
        "users": [{"name": ACCOUNT, "user": {"token": token.status.token}}],
        "contexts": [
            {
                "name": ACCOUNT,
                "context": {"cluster": admin["clusters"][0]["name"], "user": ACCOUNT},
            }
        ],
        "current-context": ACCOUNT,
    }
    path.write_text(yaml.safe_dump(config))
    return path


def values(stack: Stack, namespace: str, kubeconfig: Path) -> dict[str, Any]:
    return {
        "watchNamespaces": [namespace],
        "serviceAccount": {"create": False, "name": ACCOUNT},
        "kafka": {"bootstrapServers": stack.kafka},
        "s3": {
            "endpoint": stack.s3_endpoint,
            "bucket": "operator-tests",
            "credentials": {
                "create": True,
                "accessKey": stack.s3_access_key,
                "secretKey": stack.s3_secret_key,
            },
        },
        # the node agent would give the pod the admin kubeconfig: the chart's account instead
        "extraEnv": [{"name": "KUBECONFIG", "value": str(kubeconfig)}],
    }


def install_chart(
    cluster: Cluster, stack: Stack, namespace: str, served: str, tmp_path: Path
) -> subprocess.CompletedProcess[str]:
    """`helm install` into `namespace`, serving `served`, the operator authenticating as the
    chart's ServiceAccount (made here, with a token kubeconfig)."""
    cluster.core.create_namespaced_service_account(namespace, {"metadata": {"name": ACCOUNT}})
    kubeconfig = token_kubeconfig(cluster, stack, namespace, tmp_path / "operator.kubeconfig")
    (tmp_path / "values.yaml").write_text(yaml.safe_dump(values(stack, served, kubeconfig)))
    install = helm(
        "install",
        namespace,
        "--kubeconfig",
        stack.kubeconfig,
        str(CHART),
        "--namespace",
        namespace,
        "-f",
        str(tmp_path / "values.yaml"),
    )
    assert install.returncode == 0, install.stderr
    return install


def chart_query(body: dict[str, Any]) -> dict[str, Any]:
    """The query `body` referring to the Secrets the chart makes in each namespace it serves."""
    body["spec"]["controlToken"] = {"name": "streamshift-control", "key": "token"}
    refs = {"name": "streamshift-s3", "key": "access"}, {"name": "streamshift-s3", "key": "secret"}
    body["spec"]["snapshot"]["credentials"] = {"accessKey": refs[0], "secretKey": refs[1]}
    return body


def running(cluster: Cluster, namespace: str, selector: str, count: int) -> list[Any] | None:
    pods = cluster.core.list_namespaced_pod(namespace, label_selector=selector).items
    up = [p for p in pods if p.status.phase == "Running" and not p.metadata.deletion_timestamp]
    return up if len(up) == count else None


def test_helm_install_runs_the_operator_pod_and_its_query_and_uninstall_cleans_up(
    cluster: Cluster, stack: Stack, namespace: str, tmp_path: Path
) -> None:
    begin = time.monotonic()
    install = install_chart(cluster, stack, namespace, namespace, tmp_path)
    assert f"serving namespaces {namespace}." in install.stdout  # the notes
    operator = f"app.kubernetes.io/instance={namespace}"
    wait_for("the operator pod Running", lambda: running(cluster, namespace, operator, 1), 30)
    installed = time.monotonic()

    body = chart_query(stream_query("q1", "nexmark-q1", namespace, stack, parallelism=2))
    ensure_topics(stack.kafka, [(f"{namespace}-bid", PARTITIONS)])
    produce_inputs(stack, namespace, nexmark("nexmark-q1", 2_000))  # read from the start
    cluster.create(SQ, namespace, body)
    workers = "streamshift.io/query=q1"
    wait_for("2 worker pods Running", lambda: running(cluster, namespace, workers, 2), 30)

    def reporting() -> dict[str, Any] | None:
        status = cluster.status(SQ, namespace, "q1")
        instances = status.get("instances") or []
        reported = len(instances) == 2 and all(i["ready"] for i in instances)
        return status if reported and status.get("watermark") else None

    status = wait_for("both workers reporting a watermark", reporting, 30)
    assert status["phase"] == "Running" and status["replicas"] == 2
    reported = time.monotonic()

    uninstall = helm("uninstall", namespace, "--kubeconfig", stack.kubeconfig, "-n", namespace)
    assert uninstall.returncode == 0, uninstall.stderr
    assert not cluster.core.list_namespaced_secret(namespace, label_selector=operator).items
    rbac: Any = client.RbacAuthorizationV1Api(cluster.api)
    assert not rbac.list_namespaced_role(namespace, label_selector=operator).items
    assert not rbac.list_cluster_role(label_selector=operator).items
    cluster.custom.delete_namespaced_custom_object(GROUP, VERSION, namespace, SQ, "q1")

    def all_gone() -> bool:
        pods = cluster.core.list_namespaced_pod(namespace).items
        services = cluster.core.list_namespaced_service(namespace).items
        return not pods and not services

    wait_for("the operator, the workers and their Service gone", all_gone, 30)
    print(
        f"helm install to operator Running: {installed - begin:.1f} s; "
        f"StreamQuery to workers reporting: {reported - installed:.1f} s; "
        f"uninstall and cleanup: {time.monotonic() - reported:.1f} s"
    )


def test_a_served_namespace_deleted_while_the_operator_was_down_goes_when_it_is_back(
    cluster: Cluster, stack: Stack, namespace: str, tmp_path: Path
) -> None:
    """The chart serving a listed namespace, the operator in its own: a query whose snapshots go
    with it carries kopf's finalizer; with the operator scaled to 0 its namespace is deleted,
    which removes the Role there at once and leaves the query (and so the namespace) waiting;
    scaled back, the operator lets go of the query through its ClusterRole and the namespace
    goes."""
    team = f"team-{uuid.uuid4().hex[:8]}"
    cluster.core.create_namespace({"metadata": {"name": team}})
    install_chart(cluster, stack, namespace, team, tmp_path)
    operator = f"app.kubernetes.io/instance={namespace}"
    deployment = cluster.apps.list_namespaced_deployment(namespace, label_selector=operator)
    [name] = [d.metadata.name for d in deployment.items]
    try:
        wait_for("the operator pod Running", lambda: running(cluster, namespace, operator, 1), 30)
        body = chart_query(stream_query("purge", "nexmark-q5", team, stack))
        body["spec"]["snapshot"]["retention"] = {"onDelete": "Delete"}
        ensure_topics(stack.kafka, [(f"{team}-bid", PARTITIONS)])
        cluster.create(SQ, team, body)

        def finalized() -> bool:
            meta = cluster.get(SQ, team, "purge")["metadata"]
            running_query = cluster.status(SQ, team, "purge").get("phase") == "Running"
            return running_query and KOPF_FINALIZER in (meta.get("finalizers") or [])

        wait_for("purge Running with kopf's finalizer", finalized, 60)
        cluster.apps.patch_namespaced_deployment_scale(name, namespace, {"spec": {"replicas": 0}})
        wait_for(
            "the operator pod gone",
            lambda: not cluster.core.list_namespaced_pod(namespace, label_selector=operator).items,
            60,
        )
        cluster.core.delete_namespace(team)
        rbac: Any = client.RbacAuthorizationV1Api(cluster.api)
        wait_for(  # the namespace controller removes what it can: the Role, the pods
            "the Role in the served namespace gone",
            lambda: not rbac.list_namespaced_role(team).items,
            60,
        )
        wait_for(  # the namespace controller deletes the kinds in no set order
            "purge marked for deletion",
            lambda: cluster.get(SQ, team, "purge")["metadata"].get("deletionTimestamp"),
            60,
        )
        cluster.apps.patch_namespaced_deployment_scale(name, namespace, {"spec": {"replicas": 1}})
        back = time.monotonic()
        wait_for(f"namespace {team} gone", lambda: namespace_gone(cluster, team), 90, 1)
        print(f"served namespace gone {time.monotonic() - back:.1f} s after the operator's return")
    finally:
        helm("uninstall", namespace, "--kubeconfig", stack.kubeconfig, "-n", namespace)
        if not namespace_gone(cluster, team):
            cluster.core.delete_namespace(team)
