"""StreamQuery decisions and the status recorder: placement, missing pods, follow-up
Migrations, conditions and aggregates from observed pods and worker reports."""

from datetime import UTC, datetime, timedelta
from typing import Any

from operator_specs import q5_spec
from streamshift_operator.clients.control_api import Snapshot, WorkerReport
from streamshift_operator.models.common import ConditionStatus
from streamshift_operator.models.streamquery import StreamQueryStatus
from streamshift_operator.streamquery.decide import follow_ups, initial_status, missing_pods
from streamshift_operator.streamquery.observe import PodView, QueryView
from streamshift_operator.streamquery.spec_diff import DiffType
from streamshift_operator.streamquery.status import conditions, degraded, observed

T, F = ConditionStatus.TRUE, ConditionStatus.FALSE
NOW = datetime(2026, 11, 22, 12, 0, tzinfo=UTC)
SPEC = q5_spec(sources=[{"name": "bid", "topic": "bids", "partitions": 4}])


def pod(name: str, ready: bool = True, deleting: bool = False) -> PodView:
    epoch, instance = (int(x) for x in name.split("-e")[1].split("-"))
    return PodView(name, epoch, instance, "Running", ready, "127.0.1.1", 0, deleting)


def report(throughput: float, lag: int, watermark: int | None, snap: int = 0) -> WorkerReport:
    last = Snapshot(f"k{snap}", 100 * snap, NOW + timedelta(seconds=snap)) if snap else None
    return WorkerReport("running", (0,), {}, watermark, throughput, lag, 10, {}, last, {})


def test_initial_placement_spreads_partitions_at_epoch_zero() -> None:
    placed = initial_status(SPEC)
    assert placed.epoch == 0
    assert [i.partitions for i in placed.instances] == [[0, 1], [2, 3]]
    assert placed.plan is not None and placed.plan.builtin == "nexmark-q5"


def test_missing_pods_are_the_absent_and_the_deleting() -> None:
    placed = initial_status(SPEC)
    view = QueryView({"q-e0-1": pod("q-e0-1", deleting=True), "q-e1-0": pod("q-e1-0")}, {})
    assert missing_pods("q", placed, view) == [0, 1]
    view = QueryView({"q-e0-0": pod("q-e0-0"), "q-e0-1": pod("q-e0-1")}, {})
    assert missing_pods("q", placed, view) == []


def test_observed_status_aggregates_and_is_ready_when_all_report() -> None:
    placed = initial_status(SPEC)
    view = QueryView(
        {"q-e0-0": pod("q-e0-0"), "q-e0-1": pod("q-e0-1")},
        {"q-e0-0": report(100.0, 5, 2000, snap=1), "q-e0-1": report(50.5, 7, 1500, snap=2)},
    )
    patch = observed(placed, view, "q", NOW, [])
    assert patch["phase"] == "Running"
    assert (patch["throughput"], patch["lag"], patch["watermark"]) == (150.5, 12, 1500)
    assert patch["lastSnapshot"]["key"] == "k2"
    assert patch["replicas"] == 2
    assert [i["pod"] for i in patch["instances"]] == ["q-e0-0", "q-e0-1"]
    kinds = {c["type"]: c["status"] for c in patch["conditions"]}
    assert kinds == {"Ready": "True", "Progressing": "False", "Degraded": "False"}


def test_observed_status_waits_for_an_unreporting_pod_and_names_it() -> None:
    placed = initial_status(SPEC)
    view = QueryView(
        {"q-e0-0": pod("q-e0-0"), "q-e0-1": pod("q-e0-1", ready=False)},
        {"q-e0-0": report(1.0, 0, 10)},
    )
    patch = observed(placed, view, "q", NOW, [])
    assert patch["phase"] == "Deploying" and "q-e0-1" in patch["message"]
    assert patch["watermark"] is None  # not every instance reports one


def test_a_worker_answering_before_its_ready_condition_runs_but_a_going_pod_does_not() -> None:
    view = QueryView(
        {"q-e1-0": pod("q-e1-0", ready=False), "q-e0-0": pod("q-e0-0", deleting=True)},
        {"q-e1-0": report(0.0, 0, None), "q-e0-0": report(1.0, 0, 10)},
    )
    assert view.running("q-e1-0")
    assert not view.running("q-e0-0")
    assert not view.running("q-e9-0")


def test_a_migrating_query_is_progressing() -> None:
    placed = initial_status(SPEC).model_copy(update={"active_migration": "m1"})
    patch = observed(placed, QueryView({}, {}), "q", NOW, [])
    assert patch["phase"] == "Migrating"
    assert {c["type"]: c["status"] for c in patch["conditions"]}["Progressing"] == "True"


def test_condition_time_moves_only_when_status_flips() -> None:
    first = conditions([], NOW, [("Ready", F, "A", "a")])
    later = NOW + timedelta(minutes=1)
    same = conditions(first, later, [("Ready", F, "B", "b")])
    flipped = conditions(first, later, [("Ready", T, "C", "c")])
    assert same[0]["lastTransitionTime"] == first[0]["lastTransitionTime"]
    assert same[0]["reason"] == "B"
    assert flipped[0]["lastTransitionTime"] != first[0]["lastTransitionTime"]


def test_degraded_status_carries_the_fixing_message() -> None:
    patch = degraded([], NOW, "InvalidPlan", "spec.plan.builtin: no query 'q99'")
    assert patch["phase"] == "Degraded" and "q99" in patch["message"]
    assert {c["type"]: c["status"] for c in patch["conditions"]}["Degraded"] == "True"


def migration(name: str, query: str, phase: str | None) -> dict[str, Any]:
    status = {} if phase is None else {"phase": phase}
    return {"metadata": {"name": name}, "spec": {"queryRef": {"name": query}}, "status": status}


def test_scale_and_plan_changes_become_auto_migrations_named_by_generation() -> None:
    placed = initial_status(SPEC)
    scaled = SPEC.model_copy(update={"parallelism": 3})
    made = follow_ups("q", 7, DiffType.RESCALE, scaled, placed, [])
    assert [m["metadata"]["name"] for m in made] == ["q-g7-scale"]
    assert made[0]["spec"] == {
        "queryRef": {"name": "q"},
        "protocol": "auto",
        "target": {"parallelism": 3},
    }
    replanned = scaled.model_copy(
        update={"plan": SPEC.plan.model_copy(update={"builtin": "nexmark-q8"})}
    )
    names = [
        m["metadata"]["name"]
        for m in follow_ups("q", 8, DiffType.PLAN_CHANGE, replanned, placed, [])
    ]
    assert names == ["q-g8-plan", "q-g8-scale"]


def test_no_follow_up_while_a_migration_is_live_or_when_spec_matches() -> None:
    placed = initial_status(SPEC)
    scaled = SPEC.model_copy(update={"parallelism": 3})
    assert (
        follow_ups("q", 2, DiffType.RESCALE, scaled, placed, [migration("mine", "q", "Queued")])
        == []
    )
    done = [migration("old", "q", "Succeeded"), migration("other", "p", None)]
    assert len(follow_ups("q", 2, DiffType.RESCALE, scaled, placed, done)) == 1
    assert follow_ups("q", 2, DiffType.IGNORE, SPEC, placed, []) == []


def test_restart_moves_every_instance_by_savepoint_restart() -> None:
    placed = initial_status(SPEC)
    made = follow_ups("q", 3, DiffType.RESTART, SPEC, placed, [])
    assert made[0]["spec"]["protocol"] == "savepoint-restart"
    assert made[0]["spec"]["target"] == {"moveInstances": [0, 1]}


def test_a_status_without_placement_needs_no_follow_up() -> None:
    scaled = SPEC.model_copy(update={"parallelism": 3})
    assert follow_ups("q", 2, DiffType.RESCALE, scaled, StreamQueryStatus(), []) == []
