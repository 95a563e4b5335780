"""The operator's deployment manifests: least privilege, one non-root replica."""

from pathlib import Path
from typing import Any

import yaml

DEPLOY = Path(__file__).resolve().parents[2] / "deploy/operator"


def load(name: str) -> dict[str, dict[str, Any]]:
    documents = yaml.safe_load_all((DEPLOY / name).read_text())
    return {document["kind"]: document for document in documents}


def test_cluster_role_has_no_wildcards_and_no_write_on_secrets() -> None:
    rules = load("rbac.yaml")["ClusterRole"]["rules"]
    for rule in rules:
        assert "*" not in rule["verbs"] + rule["resources"] + rule["apiGroups"]
    granted = {
        (group, resource, verb)
        for rule in rules
        for group in rule["apiGroups"]
        for resource in rule["resources"]
        for verb in rule["verbs"]
    }
    assert {verb for group, resource, verb in granted if resource == "secrets"} == {"get"}
    assert ("streamshift.io", "migrations/status", "patch") in granted
    assert ("", "pods", "create") in granted
    assert not any(resource.endswith("kopfpeerings") for _, resource, _ in granted)
    assert not any(resource in ("leases", "namespaces", "nodes") for _, resource, _ in granted)


def test_binding_names_the_operator_service_account() -> None:
    rbac = load("rbac.yaml")
    account = rbac["ServiceAccount"]["metadata"]
    assert rbac["ClusterRoleBinding"]["subjects"] == [
        {"kind": "ServiceAccount", "name": account["name"], "namespace": account["namespace"]}
    ]
    assert rbac["ClusterRoleBinding"]["roleRef"]["name"] == rbac["ClusterRole"]["metadata"]["name"]


def test_deployment_runs_one_non_root_replica_standalone() -> None:
    deployment = load("deployment.yaml")["Deployment"]
    assert deployment["spec"]["replicas"] == 1
    assert deployment["spec"]["strategy"] == {"type": "Recreate"}
    pod = deployment["spec"]["template"]["spec"]
    assert pod["serviceAccountName"] == load("rbac.yaml")["ServiceAccount"]["metadata"]["name"]
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert pod["securityContext"]["runAsUser"] != 0
    container = pod["containers"][0]
    assert "--standalone" in container["command"]
    assert container["securityContext"]["allowPrivilegeEscalation"] is False
    assert container["securityContext"]["readOnlyRootFilesystem"] is True
