"""A pod lost in the middle of a migration, on the local stack (operator in-process, real worker
pods, Kafka, MinIO): noticed within seconds, not at the phase's timeout (600 s by default, with
no message meanwhile), rolled back with a status message and a Warning Event naming the pod, and
the query's output exact afterwards."""

from __future__ import annotations

import time
from datetime import datetime

import pytest
from operator_stack import (
    MIG,
    PARTITIONS,
    SQ,
    Cluster,
    Stack,
    finished,
    migration,
    nexmark,
    operator,
    produce_inputs,
    ready,
    stream_query,
)
from support.kafka import read_committed
from support.reference import reference
from support.waiting import wait_for

pytestmark = pytest.mark.stack
DETECTION_GOAL_S = 10.0


def warnings(cluster: Cluster, namespace: str, name: str) -> list[str]:
    found = cluster.core.list_namespaced_event(namespace).items
    return [
        f"{e.reason}: {e.message}"
        for e in found
        if e.type == "Warning" and e.involved_object.name == name
    ]


def test_a_target_pod_deleted_mid_unimico_rolls_back_within_seconds_with_exact_output(
    cluster: Cluster, namespace: str, stack: Stack
) -> None:
    """With no input flowing the UniMiCo migration waits in AwaitingStartTimestamp (its targets
    probe the first event times of new input): a target pod deleted there was noticed only at
    the step's timeout; now the migration rolls back on the next ticks."""
    first, rest = nexmark("nexmark-q5", 6_000), nexmark("nexmark-q5", 6_000, start=6_000)
    expected = reference("nexmark-q5", [first, rest], PARTITIONS)
    with operator(namespace, stack):
        cluster.create(SQ, namespace, stream_query("q", "nexmark-q5", namespace, stack))
        wait_for("q Running", lambda: ready(cluster, namespace, "q"), 60)
        produce_inputs(stack, namespace, first)
        cluster.create(MIG, namespace, migration("move", "q", "unimico", {"moveInstances": [0]}))
        wait_for(
            "move in AwaitingStartTimestamp",
            lambda: cluster.status(MIG, namespace, "move").get("phase") == "AwaitingStartTimestamp",
            60,
            every=0.1,
        )
        time.sleep(2)  # waiting there: the targets have no new input to probe
        assert cluster.status(MIG, namespace, "move")["phase"] == "AwaitingStartTimestamp"
        deleted_at = time.time()
        cluster.core.delete_namespaced_pod("q-e1-0", namespace)
        status = wait_for("move finished", lambda: finished(cluster, namespace, "move"), 60)
        assert status["phase"] == "RolledBack", status
        rolling = next(p for p in status["phaseHistory"] if p["phase"] == "RollingBack")
        entered = datetime.fromisoformat(rolling["enteredAt"].replace("Z", "+00:00"))
        detection_s = entered.timestamp() - deleted_at
        assert detection_s < DETECTION_GOAL_S
        assert rolling["message"].startswith("AwaitingStartTimestamp: target pod q-e1-0 ")
        assert any("target pod q-e1-0" in w for w in warnings(cluster, namespace, "move"))
        produce_inputs(stack, namespace, rest)
        wait_for("q Running again", lambda: ready(cluster, namespace, "q"), 60)
        query = cluster.get(SQ, namespace, "q")
        assert query["status"]["epoch"] == 0 and query["spec"]["parallelism"] == 1
        assert read_committed(stack.kafka, f"{namespace}-out", len(expected), 90) == expected
    print(f"lost target detected {detection_s:.1f} s after its deletion")  # outside KopfRunner
