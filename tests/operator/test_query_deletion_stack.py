"""Deleting queries on the local stack (operator in-process, real API server, worker pods, Kafka,
MinIO): a query whose snapshot store is unreachable is deleted after bounded retries with a
Warning Event saying what was left behind (before, its finalizer held it and its namespace for
good); a namespace deleted while the operator was down goes once the operator is back; a
Migration of a query being deleted is refused at admission, and a running one whose query is
deleted ends Failed at once instead of starting target pods and rolling back for minutes."""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from kubernetes.client.exceptions import ApiException
from operator_stack import (
    GROUP,
    MIG,
    SQ,
    VERSION,
    Cluster,
    Stack,
    migration,
    namespace_gone,
    operator,
    stream_query,
    wait_for,
)

pytestmark = pytest.mark.stack
HOLD = "streamshift.io/test-hold"  # a finalizer of the test's own: keeps a query in deletion


@pytest.fixture
def namespace(cluster: Cluster, stack: Stack) -> Iterator[str]:
    name = f"op-{uuid.uuid4().hex[:8]}"
    cluster.core.create_namespace({"metadata": {"name": name}})
    cluster.secrets(name, stack)
    yield name
    for query in cluster.list(SQ, name):
        if HOLD in (query["metadata"].get("finalizers") or []):
            release(cluster, name, query["metadata"]["name"])
    try:
        cluster.core.delete_namespace(name)
    except ApiException as error:
        if error.status != 404:
            raise


def running(cluster: Cluster, namespace: str, name: str) -> dict[str, Any] | None:
    status = cluster.status(SQ, namespace, name)
    return status if status.get("phase") == "Running" else None


def gone(cluster: Cluster, plural: str, namespace: str, name: str) -> bool:
    return all(q["metadata"]["name"] != name for q in cluster.list(plural, namespace))


def delete(cluster: Cluster, plural: str, namespace: str, name: str) -> None:
    cluster.custom.delete_namespaced_custom_object(GROUP, VERSION, namespace, plural, name)


def hold(cluster: Cluster, namespace: str, name: str) -> None:
    body = cluster.get(SQ, namespace, name)
    finalizers = [*(body["metadata"].get("finalizers") or []), HOLD]
    patch = {"metadata": {"finalizers": finalizers}}
    cluster.custom.patch_namespaced_custom_object(GROUP, VERSION, namespace, SQ, name, patch)


def release(cluster: Cluster, namespace: str, name: str) -> None:
    body = cluster.get(SQ, namespace, name)
    finalizers = [f for f in body["metadata"].get("finalizers") or [] if f != HOLD]
    patch = {"metadata": {"finalizers": finalizers}}
    cluster.custom.patch_namespaced_custom_object(GROUP, VERSION, namespace, SQ, name, patch)


def warnings(cluster: Cluster, namespace: str, name: str) -> list[str]:
    found = cluster.core.list_namespaced_event(namespace).items
    return [
        f"{e.reason}: {e.message}"
        for e in found
        if e.type == "Warning" and e.involved_object.name == name
    ]


def targets(cluster: Cluster, namespace: str) -> set[tuple[str, str]]:
    """The target pods (epoch 1) not being deleted, by name and uid."""
    return {
        (name, pod.metadata.uid)
        for name, pod in cluster.pods(namespace).items()
        if name.startswith("q-e1-") and not pod.metadata.deletion_timestamp
    }


def purging(name: str, namespace: str, stack: Stack, endpoint: str | None = None) -> dict[str, Any]:
    body = stream_query(name, "nexmark-q5", f"{namespace}-{name}", stack)
    body["spec"]["snapshot"]["retention"] = {"onDelete": "Delete"}
    if endpoint is not None:
        body["spec"]["snapshot"]["endpoint"] = endpoint
    return body


def test_a_namespace_deleted_while_the_operator_was_down_goes_when_it_is_back(
    cluster: Cluster, namespace: str, stack: Stack
) -> None:
    with operator(namespace, stack):
        cluster.create(SQ, namespace, purging("purge", namespace, stack))
        wait_for("purge Running", lambda: running(cluster, namespace, "purge"), 60)
    cluster.core.delete_namespace(namespace)
    time.sleep(5)  # the namespace controller deletes what it can: pods, Secrets; the query waits
    assert not namespace_gone(cluster, namespace)
    with operator(namespace, stack):
        wait_for(f"namespace {namespace} gone", lambda: namespace_gone(cluster, namespace), 90, 1)


def test_a_query_whose_snapshot_store_is_unreachable_is_deleted_after_bounded_retries(
    cluster: Cluster, namespace: str, stack: Stack
) -> None:
    with operator(namespace, stack):
        cluster.create(SQ, namespace, purging("lost", namespace, stack, "http://127.0.0.1:9"))
        wait_for("lost placed", lambda: cluster.status(SQ, namespace, "lost").get("epoch") == 0, 60)
        began = time.monotonic()
        delete(cluster, SQ, namespace, "lost")
        wait_for("lost deleted", lambda: gone(cluster, SQ, namespace, "lost"), 90, 1)
        took = time.monotonic() - began
        said = warnings(cluster, namespace, "lost")
        assert any("left behind" in w and "127.0.0.1:9" in w for w in said), said
    print(f"deleted {took:.0f} s after the delete call")  # outside KopfRunner's capture


def test_a_migration_of_a_query_being_deleted_is_refused(
    cluster: Cluster, namespace: str, stack: Stack
) -> None:
    with operator(namespace, stack):
        cluster.create(SQ, namespace, stream_query("q", "nexmark-q5", namespace, stack))
        wait_for("q Running", lambda: running(cluster, namespace, "q"), 60)
        hold(cluster, namespace, "q")
        delete(cluster, SQ, namespace, "q")
        cluster.create(MIG, namespace, migration("late", "q", "unimico", {"moveInstances": [0]}))
        status = wait_for(
            "late Failed",
            lambda: (s := cluster.status(MIG, namespace, "late")).get("phase") == "Failed" and s,
            30,
        )
        assert [p["phase"] for p in status["phaseHistory"]] == ["Queued", "Failed"]
        assert status["message"] == "StreamQuery 'q' is being deleted", status
        assert not [p for p in cluster.pods(namespace) if p.startswith("q-e1-")]
        release(cluster, namespace, "q")


def test_a_running_migration_whose_query_is_deleted_ends_failed_at_once(
    cluster: Cluster, namespace: str, stack: Stack
) -> None:
    with operator(namespace, stack):
        cluster.create(SQ, namespace, stream_query("q", "nexmark-q5", namespace, stack))
        wait_for("q Running", lambda: running(cluster, namespace, "q"), 60)
        hold(cluster, namespace, "q")  # the query stays, being deleted, while the test looks
        cluster.create(MIG, namespace, migration("grow", "q", "unimico", {"moveInstances": [0]}))
        wait_for(
            "grow past Preparing",
            lambda: (
                cluster.status(MIG, namespace, "grow").get("phase")
                not in (None, "Queued", "Preparing")
            ),
            60,
            every=0.1,
        )
        deleted = time.monotonic()
        delete(cluster, SQ, namespace, "q")
        status = wait_for(
            "grow Failed",
            lambda: (s := cluster.status(MIG, namespace, "grow")).get("phase") == "Failed" and s,
            30,
        )
        ended = time.monotonic() - deleted
        assert ended < 10
        phases = [p["phase"] for p in status["phaseHistory"]]
        assert "RollingBack" not in phases, phases
        assert status["message"].endswith("StreamQuery 'q' is being deleted"), status
        started = targets(cluster, namespace)
        time.sleep(3)  # no target pod is started (again) meanwhile
        assert targets(cluster, namespace) <= started
        release(cluster, namespace, "q")
    print(f"grow ended {ended:.1f} s after the query's deletion")  # outside KopfRunner
