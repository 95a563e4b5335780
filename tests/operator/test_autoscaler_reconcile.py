"""The autoscaler's reconcile step: the metric window, the status it writes, the Migration it
creates in `act` mode (and only then), and waiting while a Migration of the query is live.

The API server is a recorder (unit tests; the stack test runs the real one); time and the end
offsets are given, so each pass sees a known load.
"""

import asyncio
from collections.abc import Iterable
from dataclasses import replace
from typing import Any

import pytest
from operator_specs import q5_spec
from streamshift_operator import metrics
from streamshift_operator.autoscaler import reconcile
from streamshift_operator.autoscaler.decision import Action, Decision
from streamshift_operator.autoscaler.reconcile import WINDOWS, autoscale
from streamshift_operator.autoscaler.record import REASON_ANNOTATION, migration_body, protocol_of
from streamshift_operator.autoscaler.window import Reading, Window
from streamshift_operator.clients.kube import MIGRATIONS
from streamshift_operator.models.protocol import Protocol
from streamshift_operator.models.streamquery import StreamQuerySpec, StreamQueryStatus
from streamshift_operator.streamquery.plan_check import check_plan

QUERY = {
    "apiVersion": "streamshift.io/v1alpha1",
    "kind": "StreamQuery",
    "metadata": {"name": "q5", "namespace": "ns", "uid": "uid-q5"},
}
PODS = ["q5-e0-0", "q5-e0-1"]


class Recorder:
    """The API calls the step makes: Migrations listed and created, status patches."""

    def __init__(self, migrations: list[dict[str, Any]] | None = None) -> None:
        self.migrations = migrations or []
        self.created: list[dict[str, Any]] = []
        self.patches: list[dict[str, Any]] = []

    async def list(self, plural: str, namespace: str) -> list[dict[str, Any]]:
        assert (plural, namespace) == (MIGRATIONS, "ns")
        return self.migrations

    async def create(self, plural: str, namespace: str, body: dict[str, Any]) -> bool:
        self.created.append(body)
        return True

    async def patch_status(
        self, plural: str, namespace: str, name: str, status: dict[str, Any]
    ) -> bool:
        self.patches.append(status["autoscaler"])
        return True


class Load:
    """Two workers and four partitions: `rate` records/s arrive, each worker processes half of
    them at `capacity` records per busy second."""

    def __init__(self, rate: float, capacity: float) -> None:
        self.rate, self.capacity, self.now = rate, capacity, 1_000_000.0
        self.busy, self.processed = 0.0, 0

    def advance(self, seconds: float) -> None:
        self.now += seconds
        share = self.rate * seconds / len(PODS)
        self.processed += int(share)
        self.busy += share / self.capacity

    def loads(self) -> dict[str, dict[str, Any]]:
        load = {"busy_seconds": self.busy, "processed": self.processed, "lag_records": {"b:0": 0}}
        return {pod: load for pod in PODS}

    def ends(self, bootstrap: str, topics: Iterable[tuple[str, int]]) -> dict[str, int]:
        per_partition = int(self.rate * (self.now - 1_000_000.0) / 4)
        return {f"{topic}:{p}": per_partition for topic, count in topics for p in range(count)}


def spec(plan: str = "nexmark-q2", **autoscaler: Any) -> StreamQuerySpec:
    """A keyed plan (q2: it can run on several instances) unless `plan` says otherwise."""
    settings = {
        "enabled": True,
        "metricWindowSeconds": 10,
        "stabilizationSeconds": 0,
        "scaleDownDelaySeconds": 0,
        "targetUtilization": 0.5,
        **autoscaler,
    }
    source = {"name": "bid", "topic": "bids", "partitions": 4}
    return q5_spec(plan={"builtin": plan}, sources=[source], autoscaler=settings)


def status(autoscaler: dict[str, Any] | None = None) -> StreamQueryStatus:
    instances = [
        {"id": i, "pod": pod, "partitions": [2 * i, 2 * i + 1]} for i, pod in enumerate(PODS)
    ]
    return StreamQueryStatus.model_validate(
        {"epoch": 0, "instances": instances, "autoscaler": autoscaler}
    )


@pytest.fixture(autouse=True)
def fresh_windows(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, str]]:
    WINDOWS.clear()
    announced: list[tuple[str, str]] = []
    monkeypatch.setattr(
        reconcile.events,
        "normal",
        lambda body, reason, message: announced.append((reason, message)),
    )
    return announced


def passes(
    kube: Recorder, load: Load, the_spec: StreamQuerySpec, count: int, every: float = 2.0
) -> None:
    for _ in range(count):
        load.advance(every)
        asyncio.run(
            autoscale(
                kube,  # type: ignore[arg-type]
                QUERY,
                the_spec,
                status(kube.patches[-1] if kube.patches else None),
                load.loads(),
                ends_of=load.ends,
                clock=lambda: load.now,
            )
        )


def test_an_overloaded_query_gets_one_owned_migration_with_its_reason(
    fresh_windows: list[tuple[str, str]],
) -> None:
    kube, load = Recorder(), Load(rate=3000.0, capacity=1000.0)  # needs 6 at 50%
    passes(kube, load, spec(maxParallelism=4), 5)
    assert [p["action"] for p in kube.patches[:5]] == ["hold"] * 5
    assert kube.patches[0]["reason"] == "collecting a 10s metric window"
    passes(kube, load, spec(maxParallelism=4), 1)
    [migration] = kube.created
    assert migration["metadata"]["name"] == "q5-autoscale-e0-p4"
    assert migration["metadata"]["ownerReferences"][0]["uid"] == "uid-q5"
    assert migration["spec"] == {  # 3000/s over 2 x 1000: falling behind, so the backlog moves
        "queryRef": {"name": "q5"},
        "protocol": "moving-state",
        "target": {"parallelism": 4},
        "verify": True,
    }
    annotated = migration["metadata"]["annotations"][REASON_ANNOTATION]
    reason, why = annotated.split("; moving-state: ")
    assert "input 3000/s" in reason and "need 6 instances" in reason
    assert why.startswith("the instances are behind their input")
    last = kube.patches[-1]
    assert (last["action"], last["recommendedParallelism"]) == ("scale-up", 4)
    assert last["inputRate"] == 3000.0 and last["trueRate"] == 1000.0
    assert last["history"] == [
        {
            "time": last["lastDecisionTime"],
            "action": "scale-up",
            "fromParallelism": 2,
            "toParallelism": 4,
            "reason": reason,
            "migration": "q5-autoscale-e0-p4",
        }
    ]
    assert [r for r, _ in fresh_windows] == ["AutoscalerRescale"]


def test_a_global_plan_is_never_scaled_above_one_instance() -> None:
    kube, load = Recorder(), Load(rate=3000.0, capacity=1000.0)  # would need 6 if keyed
    passes(kube, load, spec("nexmark-q5", maxParallelism=4, mode="recommend"), 8)
    assert kube.created == []
    assert {p["recommendedParallelism"] for p in kube.patches[5:]} == {1}


def test_recommend_mode_writes_the_recommendation_and_creates_nothing() -> None:
    kube, load = Recorder(), Load(rate=3000.0, capacity=1000.0)
    passes(kube, load, spec(mode="recommend"), 12)
    assert kube.created == []
    last = kube.patches[-1]
    assert (last["action"], last["recommendedParallelism"]) == ("scale-up", 4)  # 4 partitions
    assert len(last["history"]) == 1  # the recommendation did not change after its first pass
    assert last["history"][0].get("migration") is None


def test_a_live_migration_of_the_query_holds_and_restarts_the_window() -> None:
    live = {"metadata": {"name": "m1"}, "spec": {"queryRef": {"name": "q5"}}, "status": {}}
    kube, load = Recorder([live]), Load(rate=3000.0, capacity=1000.0)
    passes(kube, load, spec(), 8)
    assert kube.created == []
    assert {p["reason"] for p in kube.patches} == {"waiting for Migration m1"}
    assert "uid-q5" not in WINDOWS
    live["status"] = {"phase": "Succeeded"}
    passes(kube, load, spec(), 1)
    assert kube.patches[-1]["reason"] == "collecting a 10s metric window"


def test_a_retry_after_a_rolled_back_migration_gets_a_name_of_its_own() -> None:
    rolled_back = {
        "metadata": {"name": "q5-autoscale-e0-p4"},
        "spec": {"queryRef": {"name": "q5"}},
        "status": {"phase": "RolledBack"},
    }
    kube, load = Recorder([rolled_back]), Load(rate=3000.0, capacity=1000.0)
    passes(kube, load, spec(maxParallelism=4), 6)
    assert [m["metadata"]["name"] for m in kube.created] == ["q5-autoscale-e0-p4-2"]
    assert kube.patches[-1]["history"][-1]["migration"] == "q5-autoscale-e0-p4-2"


def test_an_instance_without_a_load_report_holds() -> None:
    kube, load = Recorder(), Load(rate=3000.0, capacity=1000.0)
    load.advance(2.0)
    asyncio.run(
        autoscale(
            kube,  # type: ignore[arg-type]
            QUERY,
            spec(),
            status(),
            {PODS[0]: load.loads()[PODS[0]]},
            ends_of=load.ends,
            clock=lambda: load.now,
        )
    )
    assert kube.patches[-1]["reason"] == "waiting for every instance to report its load"


def test_a_disabled_autoscaler_does_nothing() -> None:
    kube, load = Recorder(), Load(rate=3000.0, capacity=1000.0)
    passes(kube, load, spec(enabled=False), 3)
    assert kube.patches == [] and kube.created == []


def test_the_window_needs_the_same_pods_for_a_whole_window() -> None:
    window = Window()
    window.add(Reading(0.0, {"a": (0.0, 0)}, {"t:0": 0}, 0), 10)
    window.add(Reading(10.0, {"a": (5.0, 1000)}, {"t:0": 2000}, 100), 10)
    obs = window.observation(10, 4, None)
    assert obs is not None
    assert (obs.input_rate, obs.lag_records, obs.lag_seconds) == (200.0, 100, 0.5)
    assert obs.instances[0].busy_ratio == 0.5
    window.add(Reading(20.0, {"b": (1.0, 10)}, {"t:0": 3000}, 0), 10)
    assert window.observation(10, 4, None) is None
    window.add(Reading(30.0, {"b": (6.0, 510)}, {"t:0": 4000}, 0), 10)
    assert window.observation(10, 4, None) is not None
    window.add(Reading(40.0, {"b": (0.5, 20)}, {"t:0": 5000}, 0), 10)  # b restarted
    assert window.observation(10, 4, None) is None


def test_the_autoscaler_step_records_its_decision_and_what_it_saw() -> None:
    before = metric(
        "streamshift_autoscaler_decisions_total",
        namespace="ns", query="q5", action="scale-up", acted="true",
    )  # fmt: skip
    kube, load = Recorder(), Load(rate=3000.0, capacity=1000.0)  # needs 6 at 50%
    passes(kube, load, spec(maxParallelism=4), 6)
    labels = {"namespace": "ns", "query": "q5"}
    assert metric("streamshift_autoscaler_recommended_parallelism", **labels) == 4
    assert metric("streamshift_autoscaler_input_rate_records", **labels) == 3000.0
    assert metric("streamshift_autoscaler_true_rate_records", **labels) == 1000.0
    assert metric("streamshift_autoscaler_lag_seconds", **labels) == 0.0
    acted = metric(
        "streamshift_autoscaler_decisions_total", **labels, action="scale-up", acted="true"
    )
    assert acted == (before or 0.0) + 1
    metrics.forget_query("ns", "q5")
    assert metric("streamshift_autoscaler_recommended_parallelism", **labels) is None


def metric(name: str, **labels: str) -> float | None:
    return metrics.REGISTRY.get_sample_value(name, labels)


def test_a_scale_up_of_instances_behind_their_input_moves_state_unless_a_protocol_is_named() -> (
    None
):
    q8 = spec("nexmark-q8")
    plan = check_plan(q8).plan
    assert q8.autoscaler is not None and plan is not None
    behind = Decision(
        Action.SCALE_UP, 3, "the backlog grows", True, None, 1e3, 1e3, 1e3, behind=True
    )
    keeping_up = replace(behind, behind=False)
    assert protocol_of(q8.autoscaler, keeping_up, plan) == ("auto", "")
    protocol, why = protocol_of(q8.autoscaler, behind, plan)
    assert protocol == "moving-state" and "behind their input" in why
    named = q8.autoscaler.model_copy(update={"protocol": Protocol.UNIMICO})
    assert protocol_of(named, behind, plan) == ("unimico", "")
    body = migration_body(QUERY, 0, behind, q8.autoscaler, plan=plan)
    assert body["spec"]["protocol"] == "moving-state"
    assert body["metadata"]["annotations"][REASON_ANNOTATION] == f"the backlog grows; {why}"
