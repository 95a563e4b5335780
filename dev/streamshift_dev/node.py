"""The process node agent's Node object and its heartbeat (a Lease and the Ready condition)."""

from __future__ import annotations

import os
import platform
from datetime import UTC, datetime
from typing import Any

from kubernetes import client

from streamshift_dev.ipam import NODE_IP
from streamshift_dev.kube import MERGE_PATCH, is_not_found
from streamshift_dev.process import now_iso

LEASE_NAMESPACE = "kube-node-lease"
LEASE_SECONDS = 40


def _capacity() -> dict[str, str]:
    mem_kib = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") // 1024
    return {
        "cpu": str(os.cpu_count() or 1),
        "memory": f"{mem_kib}Ki",
        "pods": "110",
        "ephemeral-storage": "100Gi",
    }


def node_status() -> dict[str, Any]:
    """The node's status: always Ready while the agent beats."""
    now = now_iso()
    ready = {
        "type": "Ready",
        "status": "True",
        "reason": "KubeletReady",
        "message": "streamshift process node agent is posting ready status",
        "lastHeartbeatTime": now,
        "lastTransitionTime": now,
    }
    return {
        "addresses": [
            {"type": "InternalIP", "address": NODE_IP},
            {"type": "Hostname", "address": platform.node()},
        ],
        "capacity": _capacity(),
        "allocatable": _capacity(),
        "conditions": [ready],
        "nodeInfo": {
            "architecture": "amd64",
            "operatingSystem": "linux",
            "osImage": "process",
            "kernelVersion": platform.release(),
            "kubeletVersion": "streamshift-dev",
            "kubeProxyVersion": "",
            "containerRuntimeVersion": "process://local",
            "machineID": "",
            "systemUUID": "",
            "bootID": "",
        },
    }


def register(core: Any, name: str) -> None:
    """Create the Node NAME (or keep it) and report it Ready."""
    labels = {
        "kubernetes.io/hostname": name,
        "kubernetes.io/os": "linux",
        "kubernetes.io/arch": "amd64",
        "streamshift.dev/process-node": "true",
    }
    body = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": labels}}
    try:
        core.create_node(body)
    except client.ApiException as exc:
        if exc.status != 409:
            raise
        core.patch_node(name, {"metadata": {"labels": labels}}, _content_type=MERGE_PATCH)
    heartbeat(core, None, name)


def heartbeat(core: Any, coordination: Any, name: str) -> None:
    """Renew the node's Lease (if COORDINATION is given) and its Ready condition."""
    core.patch_node_status(name, {"status": node_status()}, _content_type=MERGE_PATCH)
    if coordination is None:
        return
    now = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    spec = {"holderIdentity": name, "leaseDurationSeconds": LEASE_SECONDS, "renewTime": now}
    try:
        coordination.patch_namespaced_lease(
            name, LEASE_NAMESPACE, {"spec": spec}, _content_type=MERGE_PATCH
        )
    except client.ApiException as exc:
        if not is_not_found(exc):
            raise
        body = {"metadata": {"name": name, "namespace": LEASE_NAMESPACE}, "spec": spec}
        coordination.create_namespaced_lease(LEASE_NAMESPACE, body)
