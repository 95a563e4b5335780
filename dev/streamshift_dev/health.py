"""Health checks that need a client library: the Kafka broker and the node agent's Node."""

from __future__ import annotations

from datetime import UTC, datetime

from confluent_kafka.admin import AdminClient

from streamshift_dev.kube import core_api, get
from streamshift_dev.node import LEASE_NAMESPACE, LEASE_SECONDS


def kafka_ok(bootstrap: str, timeout: float = 3.0) -> bool:
    """True when the broker at BOOTSTRAP answers a metadata request."""
    admin = AdminClient({"bootstrap.servers": bootstrap, "socket.timeout.ms": int(timeout * 1000)})
    try:
        meta = admin.list_topics(timeout=timeout)
    except Exception:
        return False
    return bool(meta.brokers)


def node_ok(kubeconfig: str, name: str) -> bool:
    """True when Node NAME is Ready and its Lease was renewed within the lease duration."""
    from kubernetes import client

    core = core_api(kubeconfig)
    node = core.api_client.sanitize_for_serialization(core.read_node(name))
    ready = [c for c in get(node, "status", "conditions", default=[]) if c["type"] == "Ready"]
    if not ready or ready[0]["status"] != "True":
        return False
    lease = client.CoordinationV1Api(core.api_client).read_namespaced_lease(name, LEASE_NAMESPACE)
    renewed = lease.spec.renew_time if lease.spec else None
    if renewed is None:
        return False
    return (datetime.now(UTC) - renewed).total_seconds() < LEASE_SECONDS
