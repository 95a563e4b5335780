"""`make chaos`'s printed lines: one per scenario, and the final line the issue fixes
(`chaos scenarios=N/M exact detection-max-s=S recovery-max-s=S`), where N counts the scenarios
exact or refused with a clear status and the maxima skip scenarios that measured nothing."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, cast

from streamshift_dev.chaos.catalog import chosen, scenarios
from streamshift_dev.chaos.migrations import judged, lost_pod_phases, phases
from streamshift_dev.chaos.results import Outcome, Verdict, line, summary
from streamshift_dev.chaos.watch import Fault, MigrationWatch
from streamshift_dev.runtime_run import Observed
from streamshift_dev.stack_driver import Kube


def test_the_final_line_counts_exact_and_refused_and_takes_the_largest_seconds() -> None:
    outcomes = [
        Outcome("lost-target-unimico", Verdict.EXACT, 2.41, 11.0, "RolledBack"),
        Outcome("kafka-unreachable-at-create", Verdict.REFUSED, 7.9, None, "Degraded"),
        Outcome("operator-killed-unimico-Preparing", Verdict.EXACT, None, 31.26, "Succeeded"),
        Outcome("lost-origin-moving-state", Verdict.FAILED, None, None, "2 results missing"),
        Outcome("lost-target-unimico-HandingOver", Verdict.MISSED, None, None, "phase missed"),
    ]
    assert summary(outcomes) == "chaos scenarios=3/5 exact detection-max-s=7.9 recovery-max-s=31.3"


def test_the_final_line_says_dash_when_nothing_was_measured() -> None:
    outcomes = [Outcome("poison-records", Verdict.EXACT, None, None, "exact")]
    assert summary(outcomes) == "chaos scenarios=1/1 exact detection-max-s=- recovery-max-s=-"
    assert summary([]) == "chaos scenarios=0/0 exact detection-max-s=- recovery-max-s=-"


def test_a_scenario_line_names_it_its_verdict_its_seconds_and_why() -> None:
    outcome = Outcome("lost-origin-unimico", Verdict.FAILED, 1.04, None, "3 results missing", 52.4)
    assert line(outcome) == (
        "lost-origin-unimico FAILED detection-s=1.0 recovery-s=- (run 52 s): 3 results missing"
    )


def test_patterns_choose_scenarios_in_running_order() -> None:
    every = list(scenarios())
    assert len(every) == len(set(every))
    assert list(chosen(["lost-*-unimico"])) == ["lost-origin-unimico", "lost-target-unimico"]
    assert list(chosen(["*unreachable*", "poison-records"])) == [
        "poison-records",
        "kafka-unreachable-at-create",
        "s3-unreachable-at-create",
    ]
    assert list(chosen(None)) == every
    assert not chosen(["no-such-scenario"])


def test_every_phase_of_every_protocol_has_its_faults() -> None:
    every = scenarios()
    assert phases("savepoint-restart") == (
        "Preparing",
        "StoppingWithSnapshot",
        "StartingTarget",
        "Restoring",
        "HandingOver",
        "Finalizing",
    )
    assert lost_pod_phases("savepoint-restart", "origin") == ("Preparing", "StoppingWithSnapshot")
    assert lost_pod_phases("savepoint-restart", "target")[0] == "StartingTarget"
    assert lost_pod_phases("state-transfer", "origin") == ("Preparing", "PausingAtMarker")
    assert lost_pod_phases("unimico", "origin")[-1] == "DrainingOrigin"
    assert lost_pod_phases("unimico", "target")[-1] == "Finalizing"
    for protocol in ("unimico", "parallel-track", "moving-state"):
        for phase in phases(protocol):
            assert f"operator-killed-{protocol}-{phase}" in every
    assert "lost-target-moving-state-Recomputing" in every
    assert "lost-target-moving-state-MovingState" not in every  # that is lost-target-moving-state


def test_a_phase_the_watch_never_saw_is_missed_when_the_migration_passed_through_it() -> None:
    def inject(status: dict[str, Any], mark: Callable[[], None]) -> None:
        return None

    fault = Fault("PausingAtMarker", inject)
    watch = MigrationWatch(cast(Kube, None), "ns", fault)
    watch.phases = ["", "Preparing", "TransferringState", "Succeeded"]
    passed = Observed(phase="Succeeded")
    passed.timeline = "Queued=0.0 Preparing=3.1 PausingAtMarker=0.0 TransferringState=1.2 Succeeded"
    outcome = judged("operator-killed-state-transfer-PausingAtMarker", passed, watch, fault, 0.0)
    assert outcome.verdict is Verdict.MISSED and not outcome.passed
    rolled = Observed(phase="RolledBack", timeline="Queued=0.0 Preparing=9.0 RollingBack=1.0")
    outcome = judged("lost-origin-state-transfer", rolled, watch, fault, 0.0)
    assert outcome.verdict is Verdict.FAILED and "not reached" in outcome.reason
