"""Finalizers on the real local API server: only a query whose snapshots go with it (retention
`Delete`) carries kopf's finalizer; every other query and every Migration is deleted without the
operator, so a namespace whose operator has stopped can still be deleted."""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from operator_stack import (
    GROUP,
    MIG,
    SQ,
    VERSION,
    Cluster,
    migration,
    namespace_gone,
    operator,
    read_stack,
    stream_query,
)
from support.waiting import wait_for

pytestmark = pytest.mark.stack

KOPF_FINALIZER = "kopf.zalando.org/KopfFinalizerMarker"


def finalizers(cluster: Cluster, plural: str, namespace: str, name: str) -> list[str]:
    return list(cluster.get(plural, namespace, name)["metadata"].get("finalizers") or [])


def running(cluster: Cluster, namespace: str, name: str) -> dict[str, Any] | None:
    status = cluster.status(SQ, namespace, name)
    return status if status.get("phase") == "Running" else None


def test_namespace_is_deleted_after_the_operator_stopped() -> None:
    stack = read_stack()
    cluster = Cluster(stack.kubeconfig)
    cluster.install_crds()
    namespace = f"op-{uuid.uuid4().hex[:8]}"
    cluster.core.create_namespace({"metadata": {"name": namespace}})
    cluster.secrets(namespace, stack)
    purge = stream_query("purge", "nexmark-q5", f"{namespace}-purge", stack)
    purge["spec"]["snapshot"]["retention"] = {"onDelete": "Delete"}
    with operator(namespace, stack):
        cluster.create(SQ, namespace, stream_query("keep", "nexmark-q5", namespace, stack))
        cluster.create(SQ, namespace, purge)
        wait_for("keep Running", lambda: running(cluster, namespace, "keep"), 60)
        wait_for("purge Running", lambda: running(cluster, namespace, "purge"), 60)
        body = migration("grow", "keep", "unimico", {"parallelism": 2})
        cluster.create(MIG, namespace, body)
        wait_for(
            "grow past Queued",
            lambda: cluster.status(MIG, namespace, "grow").get("phase") not in {None, "Queued"},
            30,
        )
        assert finalizers(cluster, SQ, namespace, "keep") == []
        assert finalizers(cluster, MIG, namespace, "grow") == []
        assert finalizers(cluster, SQ, namespace, "purge") == [KOPF_FINALIZER]
        cluster.custom.delete_namespaced_custom_object(GROUP, VERSION, namespace, SQ, "purge")
        wait_for(
            "purge deleted",
            lambda: (
                [q for q in cluster.list(SQ, namespace) if q["metadata"]["name"] == "purge"] == []
            ),
            60,
        )
    cluster.core.delete_namespace(namespace)
    assert wait_for(
        f"namespace {namespace} gone", lambda: namespace_gone(cluster, namespace), 120, 1
    )
