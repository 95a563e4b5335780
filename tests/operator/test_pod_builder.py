"""Pod, ConfigMap and Service building; partition assignment; names and labels."""

from typing import Any

import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st
from operator_specs import q5_spec
from streamshift_operator.resources.names import configmap_name, plan_digest, selector
from streamshift_operator.resources.partition_assignment import assign
from streamshift_operator.resources.pods import QueryIdentity, build_pod
from streamshift_operator.streamquery.children import build_configmap, build_service

QUERY = QueryIdentity(name="q5", namespace="team-a", uid="0b1c-uid")
PLAN: dict[str, Any] = {"name": "nexmark-q5", "inputs": [], "output": "x"}
SPEC = q5_spec()


def pod() -> dict[str, Any]:
    return build_pod(QUERY, SPEC, PLAN, epoch=3, instance=1, partitions=[2, 3], default_image="w:1")


def env_of(manifest: dict[str, Any]) -> dict[str, Any]:
    container = manifest["spec"]["containers"][0]
    return {e["name"]: e.get("value", e.get("valueFrom")) for e in container["env"]}


def test_pod_identity_labels_and_owner() -> None:
    meta = pod()["metadata"]
    assert meta["name"] == "q5-e3-1"
    assert meta["namespace"] == "team-a"
    assert meta["labels"] == {
        "app.kubernetes.io/managed-by": "streamshift-operator",
        "app.kubernetes.io/component": "worker",
        "streamshift.io/query": "q5",
        "streamshift.io/epoch": "3",
        "streamshift.io/instance": "1",
    }
    assert meta["ownerReferences"] == [
        {
            "apiVersion": "streamshift.io/v1alpha1",
            "kind": "StreamQuery",
            "name": "q5",
            "uid": "0b1c-uid",
            "controller": True,
            "blockOwnerDeletion": True,
        }
    ]
    assert pod() == pod()


def test_pod_env_carries_assignment_pod_ip_and_secrets_by_reference() -> None:
    env = env_of(pod())
    assert env["STREAMSHIFT_PARTITIONS"] == "2,3"
    assert env["STREAMSHIFT_INSTANCE"] == "1"
    assert env["STREAMSHIFT_PLAN"] == {
        "configMapKeyRef": {"name": configmap_name("q5", PLAN), "key": "plan.yaml"}
    }
    assert env["STREAMSHIFT_START"] == "run"
    assert env["STREAMSHIFT_KAFKA_BOOTSTRAP"] == "127.0.0.1:9092"
    assert env["STREAMSHIFT_S3_PREFIX"] == "team-a/q5/"
    assert env["STREAMSHIFT_SOURCES"] == '[{"name": "bids", "partitions": 4, "topic": "bids"}]'
    assert env["POD_IP"] == {"fieldRef": {"fieldPath": "status.podIP"}}
    assert env["STREAMSHIFT_S3_SECRET_KEY"] == {"secretKeyRef": {"name": "s3", "key": "secret"}}
    assert env["STREAMSHIFT_CONTROL_TOKEN"] == {"secretKeyRef": {"name": "control", "key": "token"}}


def test_target_pod_holds_until_begin() -> None:
    held = build_pod(QUERY, SPEC, PLAN, 4, 0, [0, 1], default_image="w:1", hold=True)
    assert env_of(held)["STREAMSHIFT_START"] == "hold"


def test_pod_probes_resources_image_and_no_volumes() -> None:
    spec = pod()["spec"]
    container = spec["containers"][0]
    assert container["image"] == "w:1"
    assert container["command"] == ["streamshift", "worker"]
    assert container["readinessProbe"]["httpGet"] == {
        "path": "/readyz",
        "port": "control",
        "scheme": "HTTP",
    }
    assert container["readinessProbe"]["periodSeconds"] == 1  # the seconds a migration waits
    assert container["livenessProbe"]["httpGet"]["path"] == "/healthz"
    assert container["ports"] == [{"name": "control", "containerPort": 8080, "protocol": "TCP"}]
    assert container["resources"] == {
        "requests": {"cpu": "250m", "memory": "256Mi"},
        "limits": {"memory": "1Gi"},
    }
    assert spec["securityContext"]["runAsNonRoot"] is True
    assert "volumes" not in spec and "volumeMounts" not in container
    custom = SPEC.model_copy(update={"image": "worker:2"})
    other = build_pod(QUERY, custom, PLAN, 0, 0, [0], default_image="w:1")
    assert other["spec"]["containers"][0]["image"] == "worker:2"


def test_configmap_holds_the_plan_under_a_content_name() -> None:
    configmap = build_configmap(QUERY, PLAN)
    assert configmap["metadata"]["name"] == f"q5-plan-{plan_digest(PLAN)}"
    assert yaml.safe_load(configmap["data"]["plan.yaml"]) == PLAN
    assert configmap["immutable"] is True
    reordered = dict(reversed(list(PLAN.items())))
    assert configmap_name("q5", reordered) == configmap["metadata"]["name"]
    assert configmap_name("q5", {**PLAN, "name": "other"}) != configmap["metadata"]["name"]


def test_service_selects_every_worker_of_the_query() -> None:
    service = build_service(QUERY)
    assert service["metadata"]["name"] == "q5-workers"
    assert service["spec"]["clusterIP"] == "None"
    assert service["spec"]["selector"] == {
        "streamshift.io/query": "q5",
        "app.kubernetes.io/component": "worker",
    }
    pod_labels = pod()["metadata"]["labels"]
    assert service["spec"]["selector"].items() <= pod_labels.items()
    assert selector("q5") == "app.kubernetes.io/component=worker,streamshift.io/query=q5"


def test_assignment_examples() -> None:
    assert assign(4, 2) == [[0, 1], [2, 3]]
    assert assign(5, 3) == [[0, 1], [2, 3], [4]]
    assert assign(3, 3) == [[0], [1], [2]]
    with pytest.raises(ValueError, match="between 1 and the partition count"):
        assign(2, 3)


@given(st.integers(1, 64).flatmap(lambda p: st.tuples(st.just(p), st.integers(1, p))))
def test_assignment_covers_every_partition_once_evenly(case: tuple[int, int]) -> None:
    partitions, parallelism = case
    groups = assign(partitions, parallelism)
    assert len(groups) == parallelism
    assert sorted(p for group in groups for p in group) == list(range(partitions))
    sizes = [len(group) for group in groups]
    assert max(sizes) - min(sizes) <= 1
    assert min(sizes) >= 1
