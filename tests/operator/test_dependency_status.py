"""The StreamQuery status with its dependencies, pure: each finding its own condition, a failing
one makes the query Degraded with its reason and message (a migration keeps its phase), all
holding keep it Healthy; the snapshot age read from the workers' reports."""

from datetime import UTC, datetime, timedelta
from typing import Any

from operator_specs import q5_spec
from streamshift_operator.clients.control_api import Snapshot, WorkerReport
from streamshift_operator.streamquery.decide import initial_status
from streamshift_operator.streamquery.dependencies import (
    KAFKA,
    SNAPSHOTS,
    STORE,
    Finding,
    snapshot_age,
)
from streamshift_operator.streamquery.observe import PodView, QueryView
from streamshift_operator.streamquery.status import degraded, observed

NOW = datetime(2026, 11, 24, 19, 0, tzinfo=UTC)
SPEC = q5_spec(sources=[{"name": "bid", "topic": "bids", "partitions": 4}])
KAFKA_OK = Finding(KAFKA, True, "TopicsReady", "Kafka has every topic as specified")
S3_DOWN = Finding(STORE, False, "SnapshotStoreUnreachable", "the snapshot store is unreachable")


def running_view(snapshot_age_s: float | None = None) -> QueryView:
    pods = {
        n: PodView(n, 0, int(n[-1]), "Running", True, "127.0.1.1", 0, False)
        for n in ("q-e0-0", "q-e0-1")
    }
    last = None
    if snapshot_age_s is not None:
        last = Snapshot("k", 100, NOW - timedelta(seconds=snapshot_age_s))
    report = WorkerReport("running", (0,), {}, 1000, 1.0, 0, 10, {}, last, {})
    return QueryView(pods, {n: report for n in pods})


def by_type(patch: dict[str, Any]) -> dict[str, tuple[str, str, str]]:
    return {c["type"]: (c["status"], c["reason"], c["message"]) for c in patch["conditions"]}


def test_every_dependency_holding_is_healthy_with_its_conditions() -> None:
    patch = observed(initial_status(SPEC), running_view(), "q", NOW, [], [KAFKA_OK])
    assert patch["phase"] == "Running"
    conditions = by_type(patch)
    assert conditions["Degraded"] == ("False", "Healthy", "no problem found")
    assert conditions[KAFKA] == ("True", "TopicsReady", "Kafka has every topic as specified")


def test_a_failing_dependency_makes_the_query_degraded_with_its_reason() -> None:
    patch = observed(initial_status(SPEC), running_view(), "q", NOW, [], [KAFKA_OK, S3_DOWN])
    assert (patch["phase"], patch["message"]) == ("Degraded", "the snapshot store is unreachable")
    conditions = by_type(patch)
    assert conditions["Degraded"] == (
        "True",
        "SnapshotStoreUnreachable",
        "the snapshot store is unreachable",
    )
    assert conditions[STORE][:2] == ("False", "SnapshotStoreUnreachable")
    assert conditions[KAFKA][0] == "True"


def test_a_migration_keeps_its_phase_while_a_dependency_fails() -> None:
    placed = initial_status(SPEC).model_copy(update={"active_migration": "grow"})
    patch = observed(placed, running_view(), "q", NOW, [], [S3_DOWN])
    assert patch["phase"] == "Migrating"
    assert by_type(patch)["Degraded"][0] == "True"


def test_a_kafka_problem_before_placement_is_recorded_with_the_conditions() -> None:
    down = Finding(KAFKA, False, "KafkaUnreachable", "Kafka at 127.0.0.1:9 is unreachable")
    patch = degraded([], NOW, down.reason, down.message, [down])
    assert (patch["phase"], patch["message"]) == ("Degraded", "Kafka at 127.0.0.1:9 is unreachable")
    assert by_type(patch)[KAFKA][:2] == ("False", "KafkaUnreachable")
    assert by_type(patch)["Degraded"][:2] == ("True", "KafkaUnreachable")


def test_the_snapshot_age_comes_from_the_workers_reports() -> None:
    ready = [{"type": "Ready", "status": "True", "lastTransitionTime": "2026-11-24T18:50:00Z"}]
    assert snapshot_age(SPEC, running_view(20), ready, NOW).ok
    stale = snapshot_age(SPEC, running_view(200), ready, NOW)
    assert (stale.condition, stale.ok, stale.reason) == (SNAPSHOTS, False, "SnapshotsStale")
    none_yet = snapshot_age(SPEC, running_view(), ready, NOW)  # Ready for 600 s, no snapshot
    assert (none_yet.ok, none_yet.message) == (
        False,
        f"no snapshot for 600 s (spec.snapshot.intervalSeconds is "
        f"{SPEC.snapshot.interval_seconds})",
    )
