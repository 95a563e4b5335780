"""The operator in-process (KopfRunner) against the real local API server, with the node agent
running real worker pods on real Kafka and MinIO: queries run and report, bad resources are
refused or reported with what to fix, migrations move queries with exact output, an operator
restarted mid-migration finishes it, `kubectl scale` rescales exactly."""

from __future__ import annotations

import re
import threading
import time
from typing import Any

import pytest
from kubernetes.client.exceptions import ApiException
from operator_stack import (
    GROUP,
    MIG,
    PARTITIONS,
    SQ,
    VERSION,
    Cluster,
    Stack,
    feed_steadily,
    finished,
    migration,
    nexmark,
    operator,
    produce_inputs,
    ready,
    snapshots,
    stream_query,
)
from support.kafka import read_committed
from support.reference import reference
from support.waiting import wait_for

pytestmark = pytest.mark.stack


def staying(cluster: Cluster, namespace: str) -> list[str]:
    """The query's pods whose deletion is not asked for (the node agent ends the others)."""
    return sorted(
        n for n, p in cluster.pods(namespace).items() if not p.metadata.deletion_timestamp
    )


def test_query_runs_reports_and_outputs_exactly(
    cluster: Cluster, namespace: str, stack: Stack
) -> None:
    body = stream_query("q5", "nexmark-q5", namespace, stack)
    body["spec"]["snapshot"]["retention"] = {"onDelete": "Delete"}
    with operator(namespace, stack):
        begin = time.monotonic()
        cluster.create(SQ, namespace, body)
        status = wait_for("q5 Running", lambda: ready(cluster, namespace, "q5"), 60)
        print(f"StreamQuery applied to Running and reporting: {time.monotonic() - begin:.1f} s")
        [instance] = status["instances"]
        assert (instance["id"], instance["pod"], instance["ready"]) == (0, "q5-e0-0", True)
        assert instance["partitions"] == [0, 1, 2, 3] and status["replicas"] == 1
        conditions = {c["type"]: c["status"] for c in status["conditions"]}
        assert conditions == {
            "Ready": "True",
            "Progressing": "False",
            "Degraded": "False",
            "KafkaReady": "True",
            "SnapshotStoreReady": "True",
            "SnapshotsRecent": "True",
        }
        assert cluster.pods(namespace)["q5-e0-0"].status.phase == "Running"
        inputs = nexmark("nexmark-q5", 20_000)
        produce_inputs(stack, namespace, inputs)
        expected = reference("nexmark-q5", inputs, PARTITIONS)
        assert len(expected) > 10
        assert read_committed(stack.kafka, f"{namespace}-out", len(expected), 60) == expected
        reported = wait_for(
            "a watermark in status",
            lambda: (s := cluster.status(SQ, namespace, "q5")).get("watermark") and s,
            20,
        )
        assert reported["throughput"] > 0 and reported["lag"] == 0
        assert snapshots(stack, f"{namespace}/q5/")  # the worker snapshots every 2 s
        cluster.custom.delete_namespaced_custom_object(GROUP, VERSION, namespace, SQ, "q5")
        wait_for("q5 gone", lambda: not cluster.list(SQ, namespace), 30)
        assert snapshots(stack, f"{namespace}/q5/") == []  # retention policy Delete


def refused(cluster: Cluster, plural: str, namespace: str, body: dict[str, Any]) -> str:
    with pytest.raises(ApiException) as caught:
        cluster.create(plural, namespace, body)
    assert caught.value.status == 422
    return str(caught.value.body)


def reported(cluster: Cluster, plural: str, namespace: str, name: str, phase: str) -> str:
    status = wait_for(
        f"{name} {phase}",
        lambda: (s := cluster.status(plural, namespace, name)).get("phase") == phase and s,
        30,
    )
    return str(status["message"])


def test_invalid_resources_are_refused_or_reported_and_the_operator_keeps_running(
    cluster: Cluster, namespace: str, stack: Stack
) -> None:
    def sq(name: str, plan: str = "nexmark-q5", **extra: Any) -> dict[str, Any]:
        return stream_query(name, plan, f"{namespace}-{name}", stack, **extra)

    with operator(namespace, stack):
        # Refused by the API server (schema and CEL rules), with what to fix.
        assert "parallelism" in refused(cluster, SQ, namespace, sq("zero", parallelism=0))
        assert "lower spec.parallelism" in refused(
            cluster, SQ, namespace, sq("wide", parallelism=5)
        )
        assert "at most 40" in refused(cluster, SQ, namespace, sq("q" * 41))
        bad_protocol = migration("m-proto", "q5", "teleport", {"parallelism": 2})
        assert "teleport" in refused(cluster, MIG, namespace, bad_protocol)
        both = migration("m-both", "q5", "auto", {"parallelism": 2, "moveInstances": [0]})
        assert "set exactly one of target.parallelism" in refused(cluster, MIG, namespace, both)
        unimico_plan = migration("m-up", "q5", "unimico", {"plan": {"builtin": "nexmark-q2"}})
        assert "cannot change the plan" in refused(cluster, MIG, namespace, unimico_plan)
        # Reported in status by the operator, with what to fix.
        cluster.create(SQ, namespace, sq("unknown", plan="nexmark-q99"))
        assert "spec.plan.builtin" in reported(cluster, SQ, namespace, "unknown", "Degraded")
        inline = sq("inline")
        inline["spec"]["plan"] = {"inline": {"name": "x", "inputs": [], "operators": []}}
        cluster.create(SQ, namespace, inline)
        assert "spec.plan.inline" in reported(cluster, SQ, namespace, "inline", "Degraded")
        cluster.create(SQ, namespace, sq("global", parallelism=2))
        assert "set spec.parallelism to 1" in reported(cluster, SQ, namespace, "global", "Degraded")
        renamed = sq("renamed")
        renamed["spec"]["sources"][0]["name"] = "bids"
        cluster.create(SQ, namespace, renamed)
        assert "add a source with name bid" in reported(
            cluster, SQ, namespace, "renamed", "Degraded"
        )
        unsecret = sq("unsecret")
        unsecret["spec"]["controlToken"] = {"name": "nope", "key": "token"}
        cluster.create(SQ, namespace, unsecret)
        assert "kubectl create secret" in reported(cluster, SQ, namespace, "unsecret", "Degraded")
        cluster.create(MIG, namespace, migration("m-ghost", "ghost", "auto", {"parallelism": 2}))
        assert "create it or fix spec.queryRef.name" in reported(
            cluster, MIG, namespace, "m-ghost", "Failed"
        )
        # A valid query still runs; then migrations the operator cannot run fail with why.
        cluster.create(SQ, namespace, sq("q5"))
        wait_for("q5 Running", lambda: ready(cluster, namespace, "q5"), 60)
        new_plan = {"plan": {"builtin": "nexmark-q7"}}
        cluster.create(MIG, namespace, migration("m-ms", "q5", "moving-state", new_plan))
        assert "has no match and cannot be recomputed" in reported(
            cluster, MIG, namespace, "m-ms", "Failed"
        )
        cluster.create(MIG, namespace, migration("m-wide", "q5", "auto", {"parallelism": 2}))
        assert "runs on one instance" in reported(cluster, MIG, namespace, "m-wide", "Failed")
        assert ready(cluster, namespace, "q5") is not None  # still served after every refusal


def run_and_migrate(
    cluster: Cluster,
    namespace: str,
    stack: Stack,
    plan: str,
    parallelism: int,
    start: Any,
    restart_operator_in: str | None = None,
    outcome: str = "Succeeded",
) -> dict[str, Any]:
    """Run `plan` with input flowing steadily (200 s of event time over about 30 s, the rest at
    once when the migration finished), migrate with `start()` a few seconds in, with the
    operator restarted once (in the phase given, or right after the start); the output must
    equal the in-process reference whatever the `outcome`. Returns the migration's final
    status."""
    inputs = nexmark(plan, 40_000)
    expected = reference(plan, inputs, PARTITIONS)
    with operator(namespace, stack):
        cluster.create(SQ, namespace, stream_query("q", plan, namespace, stack, parallelism))
        wait_for("q Running", lambda: ready(cluster, namespace, "q"), 60)
        hurry = threading.Event()
        flow = (stack, namespace, inputs, 40, 0.75, hurry)
        feeder = threading.Thread(target=feed_steadily, args=flow)
        feeder.start()
        time.sleep(3)
        name = start()
        if restart_operator_in is not None:
            wait_for(
                f"{name} in {restart_operator_in}",
                lambda: cluster.status(MIG, namespace, name).get("phase") == restart_operator_in,
                60,
                every=0.05,
            )
    with operator(namespace, stack):
        status: dict[str, Any] = wait_for(
            f"{name} finished", lambda: finished(cluster, namespace, name), 180
        )
        hurry.set()
        assert status["phase"] == outcome, status
        feeder.join(60)
        wait_for("q Running again", lambda: ready(cluster, namespace, "q"), 60)
        assert read_committed(stack.kafka, f"{namespace}-out", len(expected), 90) == expected
    return status


def migrate_verified(
    cluster: Cluster,
    namespace: str,
    stack: Stack,
    plan: str,
    parallelism: int,
    protocol: str,
    target: dict[str, Any],
    steps: list[str],
) -> dict[str, Any]:
    """Run `plan` on `parallelism` instances and migrate it by `protocol` to `target` with
    `verify: true` (`run_and_migrate`); the migration must pass through the protocol's `steps`
    and succeed, verified exact. Returns its final status."""

    def start() -> str:
        body = migration("move", "q", protocol, target, verify=True)
        cluster.create(MIG, namespace, body)
        return "move"

    status = run_and_migrate(cluster, namespace, stack, plan, parallelism, start)
    phases = [p["phase"] for p in status["phaseHistory"]]
    assert phases == ["Queued", "Preparing", *steps, "HandingOver", "Finalizing", "Succeeded"]
    assert status["protocol"] == protocol
    assert status["verification"]["exact"] is True, status["verification"]
    return status


def test_state_transfer_rescales_with_verified_exact_output(
    cluster: Cluster, namespace: str, stack: Stack
) -> None:
    steps = ["PausingAtMarker", "TransferringState"]
    status = migrate_verified(
        cluster, namespace, stack, "nexmark-q8", 2, "state-transfer", {"parallelism": 3}, steps
    )
    assert status["cost"]["stateBytesMoved"] > 0 and status["cost"]["durationSeconds"] > 0
    query = cluster.get(SQ, namespace, "q")
    assert query["spec"]["parallelism"] == 3 and query["status"]["epoch"] == 1
    assert [i["partitions"] for i in query["status"]["instances"]] == [[0, 1], [2], [3]]
    assert staying(cluster, namespace) == ["q-e1-0", "q-e1-1", "q-e1-2"]


def test_operator_restarted_mid_savepoint_restart_finishes_exactly_and_the_queue_follows(
    cluster: Cluster, namespace: str, stack: Stack
) -> None:
    def start() -> str:
        move = migration("move", "q", "savepoint-restart", {"moveInstances": [0]})
        cluster.create(MIG, namespace, move)
        time.sleep(1.1)  # creation times have one-second resolution; ties go by name
        again = migration("again", "q", "state-transfer", {"moveInstances": [0]}, verify=True)
        cluster.create(MIG, namespace, again)
        return "move"

    status = run_and_migrate(cluster, namespace, stack, "nexmark-q5", 1, start, "StartingTarget")
    assert status["protocol"] == "savepoint-restart"
    with operator(namespace, stack):
        again = wait_for("again finished", lambda: finished(cluster, namespace, "again"), 120)
    assert again["phase"] == "Succeeded", again
    assert again["verification"]["exact"] is True, again["verification"]
    moved = {p["phase"]: p["enteredAt"] for p in status["phaseHistory"]}
    queued = {p["phase"]: p["enteredAt"] for p in again["phaseHistory"]}
    assert queued["Queued"] < moved["Succeeded"] <= queued["Preparing"]  # waited its turn
    assert (again["originEpoch"], again["targetEpoch"]) == (1, 2)
    assert staying(cluster, namespace) == ["q-e2-0"]


def test_kubectl_scale_rescales_exactly(cluster: Cluster, namespace: str, stack: Stack) -> None:
    def start() -> str:
        scale = {"spec": {"replicas": 3}}
        cluster.custom.patch_namespaced_custom_object_scale(
            "streamshift.io", "v1alpha1", namespace, SQ, "q", scale
        )
        made = wait_for(
            "a Migration made by the operator",
            lambda: [
                m
                for m in cluster.custom.list_namespaced_custom_object(
                    "streamshift.io", "v1alpha1", namespace, MIG
                )["items"]
            ],
            20,
        )
        return str(made[0]["metadata"]["name"])

    status = run_and_migrate(cluster, namespace, stack, "nexmark-q8", 2, start)
    assert status["protocol"] == "unimico"  # auto's choice for a windowed plan
    observed = re.search(r"\(observed state: (\d+) bytes\)$", status["protocolReason"])
    assert observed is not None and int(observed[1]) > 0, status["protocolReason"]
    assert cluster.status(SQ, namespace, "q")["replicas"] == 3


def test_origin_pod_deleted_mid_migration_rolls_back_with_nothing_lost(
    cluster: Cluster, namespace: str, stack: Stack
) -> None:
    def start() -> str:
        cluster.create(MIG, namespace, migration("grow", "q", "state-transfer", {"parallelism": 3}))
        wait_for(
            "grow Preparing",
            lambda: cluster.status(MIG, namespace, "grow").get("phase") == "Preparing",
            30,
            every=0.1,
        )
        cluster.core.delete_namespaced_pod("q-e0-1", namespace)
        return "grow"

    status = run_and_migrate(
        cluster, namespace, stack, "nexmark-q8", 2, start, outcome="RolledBack"
    )
    phases = [p["phase"] for p in status["phaseHistory"]]
    assert phases[-2:] == ["RollingBack", "RolledBack"]
    message = status["phaseHistory"][-2]["message"]  # the lost pod noticed in Preparing
    assert re.fullmatch(r"Preparing: origin pod q-e0-1 (is gone|is being deleted)", message)
    query = cluster.get(SQ, namespace, "q")
    assert query["status"]["epoch"] == 0 and query["spec"]["parallelism"] == 2


def test_unimico_moves_q5_with_verified_exact_output(
    cluster: Cluster, namespace: str, stack: Stack
) -> None:
    steps = ["AwaitingStartTimestamp", "DrainingOrigin"]
    move = {"moveInstances": [0]}
    migrate_verified(cluster, namespace, stack, "nexmark-q5", 1, "unimico", move, steps)
    assert staying(cluster, namespace) == ["q-e1-0"]


def test_parallel_track_moves_q5_with_verified_exact_output(
    cluster: Cluster, namespace: str, stack: Stack
) -> None:
    steps = ["TrackingInParallel", "DrainingOrigin"]
    move = {"moveInstances": [0]}
    status = migrate_verified(
        cluster, namespace, stack, "nexmark-q5", 1, "parallel-track", move, steps
    )
    assert status["cost"]["stateBytesMoved"] == 0 and status["cost"]["eventsProcessedTwice"] > 0
    assert staying(cluster, namespace) == ["q-e1-0"]


def test_moving_state_shrinks_q8_pulling_from_two_origins_with_verified_exact_output(
    cluster: Cluster, namespace: str, stack: Stack
) -> None:
    steps = ["PausingOrigin", "MovingState", "Recomputing"]
    status = migrate_verified(
        cluster, namespace, stack, "nexmark-q8", 3, "moving-state", {"parallelism": 2}, steps
    )
    cost = status["cost"]
    assert cost["stateBytesMoved"] > 0 and cost["eventsProcessedTwice"] >= 0
    assert cost["durationSeconds"] > 0 and cost["outputGapSeconds"] > 0  # the pause may outlast
    assert cost["verificationSeconds"] > 0  # the hand-off: each is its own figure
    query = cluster.get(SQ, namespace, "q")
    assert query["spec"]["parallelism"] == 2 and query["status"]["epoch"] == 1
    assert [i["partitions"] for i in query["status"]["instances"]] == [[0, 1], [2, 3]]
    assert staying(cluster, namespace) == ["q-e1-0", "q-e1-1"]
