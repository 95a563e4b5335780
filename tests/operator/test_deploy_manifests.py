"""The plain-manifest install (deploy/operator/streamshift.yaml, for `kubectl apply`): rendered
from the Helm chart by deploy/render.sh, so it cannot drift from the chart, and least privilege."""

import subprocess
from pathlib import Path
from typing import Any

import yaml

REPO = Path(__file__).resolve().parents[2]
MANIFEST = REPO / "deploy/operator/streamshift.yaml"


def objects() -> dict[str, dict[str, Any]]:
    return {o["kind"]: o for o in yaml.safe_load_all(MANIFEST.read_text()) if o}


def test_manifest_is_the_chart_rendered() -> None:
    done = subprocess.run(
        [str(REPO / "deploy/render.sh")], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == MANIFEST.read_text(), "deploy/operator drifted: run `make manifests`"


def test_manifest_installs_the_namespace_and_no_secret() -> None:
    found = objects()
    assert found["Namespace"]["metadata"]["name"] == "streamshift-system"
    assert "CustomResourceDefinition" not in found  # applied from crds/
    assert "Secret" not in found  # the control token is the user's to create


def test_operator_runs_one_non_root_replica_as_its_bound_account() -> None:
    found = objects()
    deployment = found["Deployment"]
    assert deployment["metadata"]["namespace"] == "streamshift-system"
    assert deployment["spec"]["replicas"] == 1
    pod = deployment["spec"]["template"]["spec"]
    account = found["ServiceAccount"]["metadata"]
    assert pod["serviceAccountName"] == account["name"]
    assert found["ClusterRoleBinding"]["subjects"] == [
        {"kind": "ServiceAccount", "name": account["name"], "namespace": account["namespace"]}
    ]
    assert (
        found["ClusterRoleBinding"]["roleRef"]["name"] == found["ClusterRole"]["metadata"]["name"]
    )
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert "--standalone" in pod["containers"][0]["command"]
