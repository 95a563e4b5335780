"""Build a StreamQuery's other children: the plan's ConfigMap and the workers' Service."""

from typing import Any

import yaml

from streamshift_operator.resources.names import (
    MANAGED_BY,
    configmap_name,
    owner_reference,
    selector_labels,
    service_name,
)
from streamshift_operator.resources.pods import CONTROL_PORT, PLAN_FILE, QueryIdentity


def build_configmap(query: QueryIdentity, plan: dict[str, Any]) -> dict[str, Any]:
    """The compiled plan document, named by its content hash and never changed afterwards."""
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": configmap_name(query.name, plan),
            "namespace": query.namespace,
            "labels": {**MANAGED_BY, **selector_labels(query.name)},
            "ownerReferences": [owner_reference("StreamQuery", query.name, query.uid)],
        },
        "immutable": True,
        "data": {PLAN_FILE: yaml.safe_dump(plan, sort_keys=True)},
    }


def build_service(query: QueryIdentity) -> dict[str, Any]:
    """A headless Service: one DNS record per worker pod, for the control API."""
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {
            "name": service_name(query.name),
            "namespace": query.namespace,
            "labels": {**MANAGED_BY, **selector_labels(query.name)},
            "ownerReferences": [owner_reference("StreamQuery", query.name, query.uid)],
        },
        "spec": {
            "clusterIP": "None",
            "publishNotReadyAddresses": True,
            "selector": selector_labels(query.name),
            "ports": [
                {
                    "name": "control",
                    "port": CONTROL_PORT,
                    "targetPort": "control",
                    "protocol": "TCP",
                }
            ],
        },
    }
