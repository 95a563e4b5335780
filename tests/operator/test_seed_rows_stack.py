"""Seed queries with ROWS windows through the operator (`auto` and `unimico` on seed q2 and q3
must not start target pods the worker then refuses, and roll back): each migration either
Succeeds with verified-exact output or is refused before any target pod starts, with
the reason in status and a Warning Event."""

from __future__ import annotations

import threading
import time

import numpy as np
import pytest
from operator_stack import (
    MIG,
    PARTITIONS,
    SQ,
    Cluster,
    Stack,
    feed_steadily,
    finished,
    migration,
    operator,
    ready,
    stream_query,
)
from streamshift_engine.events.batch import Batch
from streamshift_engine.plan import builtin
from support.waiting import wait_for

pytestmark = pytest.mark.stack


def seed_streams(plan: str, count: int) -> dict[str, Batch]:
    """The plan's inputs in the seed schema `(ts, l, m)`: `count` records each over 120 s of
    event time, keyed and partitioned by `l`."""
    rng = np.random.default_rng(7)
    inputs = {}
    for spec in builtin(plan).inputs:
        ts = np.sort(rng.integers(0, 120_000, count)).astype(np.int64)
        keys = rng.integers(0, 8, count)
        columns = {"ts": ts, "l": keys, "m": rng.integers(0, 100, count)}
        partition = (keys % PARTITIONS).astype(np.int32)
        inputs[spec.name] = Batch(spec.name, ts, partition, np.zeros(count, np.int64), columns)
    return inputs


def target_pods(kube: Cluster, ns: str, query: str) -> list[str]:
    return sorted(n for n in kube.pods(ns) if n.startswith(f"{query}-e2-"))


@pytest.mark.parametrize(("plan", "protocol"), [("q2", "auto"), ("q3", "unimico")])
def test_a_rows_query_moves_exactly_by_unimico(
    cluster: Cluster,
    namespace: str,
    stack: Stack,
    plan: str,
    protocol: str,
) -> None:
    inputs = seed_streams(plan, 1_500)
    with operator(namespace, stack):
        cluster.create(SQ, namespace, stream_query("q", plan, namespace, stack, 1))
        wait_for("q Running", lambda: ready(cluster, namespace, "q"), 60)
        hurry = threading.Event()  # the rest of the input at once when the migration finished
        feeder = threading.Thread(
            target=feed_steadily, args=(stack, namespace, inputs, 40, 0.6, hurry)
        )
        feeder.start()
        time.sleep(4)
        move = migration("move", "q", protocol, {"moveInstances": [0]}, verify=True)
        cluster.create(MIG, namespace, move)
        status = wait_for("move finished", lambda: finished(cluster, namespace, "move"), 240)
        hurry.set()
        feeder.join(60)
    assert status["phase"] == "Succeeded", status
    assert status["protocol"] == "unimico", status
    assert status["verification"]["exact"] is True, status["verification"]
    assert status["verification"]["compared"] > 0, status["verification"]


def test_parallel_track_on_q3_is_refused_before_any_pod_starts(
    cluster: Cluster,
    namespace: str,
    stack: Stack,
) -> None:
    with operator(namespace, stack):
        cluster.create(SQ, namespace, stream_query("q", "q3", namespace, stack, 1))
        wait_for("q Running", lambda: ready(cluster, namespace, "q"), 60)
        move = migration("move", "q", "parallel-track", {"moveInstances": [0]})
        cluster.create(MIG, namespace, move)
        status = wait_for("move finished", lambda: finished(cluster, namespace, "move"), 60)
        assert target_pods(cluster, namespace, "q") == []
    assert status["phase"] == "Failed", status
    assert "parallel-track refuses q3" in status["message"], status
    assert "use moving-state, state-transfer or auto" in status["message"], status
    warnings = [
        e.message
        for e in cluster.core.list_namespaced_event(namespace).items
        if e.involved_object.name == "move" and e.type == "Warning"
    ]
    assert any("parallel-track refuses q3" in m for m in warnings), warnings
