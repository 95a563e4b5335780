"""Build one worker Pod of a StreamQuery instance (a plain manifest dict, nothing sent).

The env below is the contract with the worker runtime (`streamshift worker`): the
instance's identity and partitions, the plan document from the plan's ConfigMap (env
`STREAMSHIFT_PLAN` by `configMapKeyRef`: the local node agent runs no volumes), the topics,
the snapshot store with its credentials and the control-API token taken from Secrets
(`valueFrom`, never copied into the pod spec), and `POD_IP` from the downward API for the control
API to bind to. Readiness and liveness probes call the control API's `/readyz` and `/healthz`;
readiness every second, since a query's readiness and a migration's target start wait on it.
A migration's target pod starts with `STREAMSHIFT_START=hold`: it waits for the migration's
`begin` instead of adopting its partitions at once.
"""

import json
from dataclasses import dataclass
from typing import Any

from streamshift_operator.models.common import SecretKeyRef
from streamshift_operator.models.streamquery import StreamQuerySpec
from streamshift_operator.resources.names import (
    configmap_name,
    owner_reference,
    pod_labels,
    pod_name,
)

CONTROL_PORT = 8080
PLAN_FILE = "plan.yaml"
WORKER_COMMAND = ("streamshift", "worker")


@dataclass(frozen=True)
class QueryIdentity:
    """What a child object needs of its StreamQuery besides the spec."""

    name: str
    namespace: str
    uid: str


def build_pod(
    query: QueryIdentity,
    spec: StreamQuerySpec,
    plan: dict[str, Any],
    epoch: int,
    instance: int,
    partitions: list[int],
    default_image: str,
    hold: bool = False,
) -> dict[str, Any]:
    """The Pod of one instance; the same inputs always give the same manifest."""
    name = pod_name(query.name, epoch, instance)
    container = {
        "name": "worker",
        "image": spec.image or default_image,
        "command": list(WORKER_COMMAND),
        "ports": [{"name": "control", "containerPort": CONTROL_PORT, "protocol": "TCP"}],
        "env": [
            *_env(query, spec, epoch, instance, partitions, hold),
            _plan(configmap_name(query.name, plan)),
        ],
        "resources": spec.resources.wire(),
        "readinessProbe": _probe("/readyz", period=1, failures=3),
        "livenessProbe": _probe("/healthz", period=10, failures=6),
        "securityContext": {
            "allowPrivilegeEscalation": False,
            "capabilities": {"drop": ["ALL"]},
        },
    }
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": query.namespace,
            "labels": pod_labels(query.name, epoch, instance),
            "ownerReferences": [owner_reference("StreamQuery", query.name, query.uid)],
        },
        "spec": {
            "restartPolicy": "Always",
            "terminationGracePeriodSeconds": 30,
            "hostname": name,
            "securityContext": {"runAsNonRoot": True, "seccompProfile": {"type": "RuntimeDefault"}},
            "containers": [container],
        },
    }


def _env(
    query: QueryIdentity,
    spec: StreamQuerySpec,
    epoch: int,
    instance: int,
    partitions: list[int],
    hold: bool,
) -> list[dict[str, Any]]:
    snapshot = spec.snapshot
    values = {
        "STREAMSHIFT_QUERY": query.name,
        "STREAMSHIFT_NAMESPACE": query.namespace,
        "STREAMSHIFT_INSTANCE": str(instance),
        "STREAMSHIFT_EPOCH": str(epoch),
        "STREAMSHIFT_PARTITIONS": ",".join(str(p) for p in partitions),
        "STREAMSHIFT_START": "hold" if hold else "run",
        "STREAMSHIFT_SOURCES": json.dumps([s.wire() for s in spec.sources], sort_keys=True),
        "STREAMSHIFT_SINKS": json.dumps([s.wire() for s in spec.sinks], sort_keys=True),
        "STREAMSHIFT_KAFKA_BOOTSTRAP": spec.kafka.bootstrap_servers,
        "STREAMSHIFT_S3_ENDPOINT": snapshot.endpoint,
        "STREAMSHIFT_S3_BUCKET": snapshot.bucket,
        "STREAMSHIFT_S3_PREFIX": f"{query.namespace}/{query.name}/",
        "STREAMSHIFT_SNAPSHOT_INTERVAL_S": str(snapshot.interval_seconds),
        "STREAMSHIFT_SNAPSHOT_KEEP": str(snapshot.retention.keep_last),
        "STREAMSHIFT_CONTROL_PORT": str(CONTROL_PORT),
    }
    env: list[dict[str, Any]] = [{"name": key, "value": value} for key, value in values.items()]
    env += [
        _field("POD_IP", "status.podIP"),
        _field("POD_NAME", "metadata.name"),
        _secret("STREAMSHIFT_S3_ACCESS_KEY", snapshot.credentials.access_key),
        _secret("STREAMSHIFT_S3_SECRET_KEY", snapshot.credentials.secret_key),
        _secret("STREAMSHIFT_CONTROL_TOKEN", spec.control_token),
    ]
    return env


def _field(name: str, path: str) -> dict[str, Any]:
    return {"name": name, "valueFrom": {"fieldRef": {"fieldPath": path}}}


def _plan(configmap: str) -> dict[str, Any]:
    return {
        "name": "STREAMSHIFT_PLAN",
        "valueFrom": {"configMapKeyRef": {"name": configmap, "key": PLAN_FILE}},
    }


def _secret(name: str, ref: SecretKeyRef) -> dict[str, Any]:
    return {"name": name, "valueFrom": {"secretKeyRef": {"name": ref.name, "key": ref.key}}}


def _probe(path: str, period: int, failures: int) -> dict[str, Any]:
    return {
        "httpGet": {"path": path, "port": "control", "scheme": "HTTP"},
        "periodSeconds": period,
        "timeoutSeconds": 2,
        "failureThreshold": failures,
    }
