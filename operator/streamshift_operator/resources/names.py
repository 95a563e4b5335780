"""Deterministic names, labels and owner references of a StreamQuery's child objects.

A StreamQuery's name is a DNS-1035 label of at most 40 characters (the CRD enforces it), so every
child name below fits the 63-character limit of pod host names and Service names. Pods carry the
placement epoch (incremented by each migration) so origin and target pods of one instance can
exist side by side: `q5-e0-1` is instance 1 of epoch 0.
"""

import hashlib
import json
from typing import Any

from streamshift_operator.models.common import API_VERSION

QUERY_NAME_MAX = 40
QUERY_NAME_PATTERN = r"^[a-z]([-a-z0-9]*[a-z0-9])?$"

LABEL_QUERY = "streamshift.io/query"
LABEL_EPOCH = "streamshift.io/epoch"
LABEL_INSTANCE = "streamshift.io/instance"
LABEL_COMPONENT = "app.kubernetes.io/component"
MANAGED_BY = {"app.kubernetes.io/managed-by": "streamshift-operator"}


def pod_name(query: str, epoch: int, instance: int) -> str:
    return f"{query}-e{epoch}-{instance}"


def service_name(query: str) -> str:
    return f"{query}-workers"


def plan_digest(plan: dict[str, Any]) -> str:
    """A short content hash of a plan document (key order does not matter)."""
    canonical = json.dumps(plan, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(canonical.encode()).hexdigest()[:10]


def configmap_name(query: str, plan: dict[str, Any]) -> str:
    """One ConfigMap per plan version, so a plan change's target pods get the new plan."""
    return f"{query}-plan-{plan_digest(plan)}"


def selector_labels(query: str) -> dict[str, str]:
    """The labels every worker pod of the query carries (the Service's and scale's selector)."""
    return {LABEL_QUERY: query, LABEL_COMPONENT: "worker"}


def selector(query: str) -> str:
    """`status.selector` for the scale subresource, in label-selector string form."""
    return ",".join(f"{key}={value}" for key, value in sorted(selector_labels(query).items()))


def pod_labels(query: str, epoch: int, instance: int) -> dict[str, str]:
    return {
        **MANAGED_BY,
        **selector_labels(query),
        LABEL_EPOCH: str(epoch),
        LABEL_INSTANCE: str(instance),
    }


def owner_reference(kind: str, name: str, uid: str) -> dict[str, Any]:
    """The controller reference that lets garbage collection delete the children."""
    return {
        "apiVersion": API_VERSION,
        "kind": kind,
        "name": name,
        "uid": uid,
        "controller": True,
        "blockOwnerDeletion": True,
    }
