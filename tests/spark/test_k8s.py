"""Spark on Kubernetes artefacts: the checked-in SparkApplication is generated, the spark-submit
line runs the same job in cluster mode, and (on the stack) the API server accepts both."""

from __future__ import annotations

import os
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyspark
import pytest
import yaml
from kubernetes import client, config
from streamshift_engine.spark.k8s import (
    APP_FILE,
    CPU_REQUEST,
    DEFAULT_ARGS,
    IMAGE,
    manifest_path,
    render_application,
    submit_command,
)
from streamshift_engine.spark.kafka import stack_env
from streamshift_engine.spark.session import connector_jars

REPO = Path(__file__).resolve().parents[2]
JARS = [j.name for j in connector_jars()]
CRD = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {
        "name": "sparkapplications.sparkoperator.k8s.io",
        "annotations": {"api-approved.kubernetes.io": "unapproved, experimental-only"},
    },
    "spec": {
        "group": "sparkoperator.k8s.io",
        "names": {
            "kind": "SparkApplication",
            "plural": "sparkapplications",
            "singular": "sparkapplication",
        },
        "scope": "Namespaced",
        "versions": [
            {
                "name": "v1beta2",
                "served": True,
                "storage": True,
                "schema": {
                    "openAPIV3Schema": {
                        "type": "object",
                        "x-kubernetes-preserve-unknown-fields": True,
                    }
                },
            }
        ],
    },
}
"""The smallest SparkApplication CRD (the spark-operator's own is not on a package registry)."""


def test_checked_in_manifest_is_generated() -> None:
    assert manifest_path(REPO).read_text() == render_application(JARS)
    document = yaml.safe_load(manifest_path(REPO).read_text())
    assert document["spec"]["mainApplicationFile"] == APP_FILE
    assert document["spec"]["arguments"] == list(DEFAULT_ARGS)
    assert any("spark-sql-kafka-0-10" in jar for jar in document["spec"]["deps"]["jars"])
    for role in ("driver", "executor"):
        assert document["spec"][role]["coreRequest"] == CPU_REQUEST


def test_submit_runs_the_job_in_cluster_mode() -> None:
    argv = submit_command("https://127.0.0.1:6443", "ns", ["verify", "--query", "q"], JARS)
    head = ["spark-submit", "--master", "k8s://https://127.0.0.1:6443", "--deploy-mode"]
    assert argv[:6] == [*head, "cluster", "--name"]
    confs = dict(argv[i + 1].split("=", 1) for i, a in enumerate(argv) if a == "--conf")
    assert confs["spark.kubernetes.container.image"] == IMAGE
    assert confs["spark.kubernetes.namespace"] == "ns"
    assert all(j.startswith("local:///") for j in confs["spark.jars"].split(","))
    assert argv[-4:] == [APP_FILE, "verify", "--query", "q"]
    for role in ("driver", "executor"):  # not Spark's default of a whole core per pod
        assert confs[f"spark.kubernetes.{role}.request.cores"] == CPU_REQUEST


def test_the_kind_run_submits_with_the_same_settings() -> None:
    """`make e2e-kind` builds its spark-submit line with `submit_command`, setting no pod
    request of its own."""
    script = (REPO / "e2e/kind/run.sh").read_text()
    assert "submit_command(" in script
    assert "request.cores" not in script


@pytest.fixture
def kube() -> Iterator[tuple[dict[str, str], str]]:
    try:
        env = stack_env()
    except FileNotFoundError:
        pytest.fail("the local stack is not running (no stack.env): start it with `make up`")
    api: Any = config.new_client_from_config(config_file=env["KUBECONFIG"])  # type: ignore[no-untyped-call]
    namespace = f"spark-{uuid.uuid4().hex[:8]}"
    core: Any = client.CoreV1Api(api)
    core.create_namespace({"metadata": {"name": namespace}})
    crds: Any = client.ApiextensionsV1Api(api)
    try:
        crds.create_custom_resource_definition(CRD)
    except client.ApiException as error:
        if error.status != 409:
            raise
    yield env, namespace
    core.delete_namespace(namespace)


def _kubectl(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    command = [env["KUBECTL"], "--kubeconfig", env["KUBECONFIG"], *args]
    return subprocess.run(command, capture_output=True, text=True, timeout=60, check=False)


@pytest.mark.stack
def test_manifests_pass_server_side_dry_run(kube: tuple[dict[str, str], str]) -> None:
    env, namespace = kube
    for _ in range(20):
        ready = _kubectl(env, "get", "crd", "sparkapplications.sparkoperator.k8s.io")
        if ready.returncode == 0:
            break
    for manifest in (REPO / "deploy/spark/rbac.yaml", manifest_path(REPO)):
        text = manifest.read_text().replace("namespace: streamshift", f"namespace: {namespace}")
        tmp = REPO / "out" / f"{namespace}-{manifest.name}"
        tmp.parent.mkdir(exist_ok=True)
        tmp.write_text(text)
        done = _kubectl(env, "apply", "--dry-run=server", "-f", str(tmp))
        tmp.unlink()
        assert done.returncode == 0, done.stderr
        assert "(server dry run)" in done.stdout


@pytest.mark.stack
def test_spark_submit_creates_the_driver_pod(kube: tuple[dict[str, str], str]) -> None:
    env, namespace = kube
    server = yaml.safe_load(Path(env["KUBECONFIG"]).read_text())["clusters"][0]["cluster"]
    spark_home = Path(pyspark.__file__).parent
    argv = submit_command(server["server"], namespace, DEFAULT_ARGS, JARS)
    argv[0] = str(spark_home / "bin" / "spark-submit")
    argv[1:1] = [
        "--conf",
        f"spark.kubernetes.authenticate.submission.caCertFile={server['certificate-authority']}",
    ]
    run = subprocess.run(
        argv,
        capture_output=True,
        text=True,
        timeout=240,
        check=False,
        env={**os.environ, "KUBECONFIG": env["KUBECONFIG"], "SPARK_HOME": str(spark_home)},
    )
    assert run.returncode == 0, run.stderr[-3000:]
    pods = _kubectl(env, "get", "pods", "-n", namespace, "-l", "spark-role=driver", "-o", "yaml")
    items = yaml.safe_load(pods.stdout)["items"]
    assert len(items) == 1
    container = items[0]["spec"]["containers"][0]
    assert container["image"] == IMAGE
    assert APP_FILE in container["args"] or any(APP_FILE in a for a in container["args"])
