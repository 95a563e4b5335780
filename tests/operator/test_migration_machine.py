"""The Migration phase machine: every protocol's path, timeouts, rollback, restart safety; the
status it writes: stale fields cleared, conditions."""

from datetime import UTC, datetime, timedelta

import pytest
from streamshift_operator.migration.phase_machine import (
    STEPS,
    Action,
    Decision,
    MachineState,
    Observation,
    actions_of,
    transition,
)
from streamshift_operator.migration.status import migration_conditions, status_patch
from streamshift_operator.models.common import Condition
from streamshift_operator.models.migration import (
    TERMINAL,
    Cost,
    MigrationStatus,
    Phase,
    Protocol,
    Timeouts,
    Verification,
)

T0 = datetime(2026, 11, 22, 12, 0, tzinfo=UTC)
TIMEOUTS = Timeouts(preparing_seconds=60, protocol_step_seconds=30, finalizing_seconds=20)
RESOLVED = [p for p in Protocol if p is not Protocol.AUTO]


def state(
    phase: Phase, protocol: Protocol = Protocol.UNIMICO, verify: bool = False
) -> MachineState:
    return MachineState(phase=phase, entered_at=T0, protocol=protocol, verify=verify)


def step(
    phase: Phase,
    protocol: Protocol = Protocol.UNIMICO,
    *,
    done: bool = False,
    failure: str | None = None,
    admitted: bool = False,
) -> Decision:
    seen = Observation(T0 + timedelta(seconds=1), done=done, failure=failure, admitted=admitted)
    return transition(state(phase, protocol), seen, TIMEOUTS)


def run_to_end(protocol: Protocol) -> list[Phase]:
    phases = [Phase.QUEUED]
    decision = step(Phase.QUEUED, protocol, admitted=True)
    while decision.phase not in TERMINAL:
        phases.append(decision.phase)
        decision = step(decision.phase, protocol, done=True)
    return [*phases, decision.phase]


@pytest.mark.parametrize("protocol", RESOLVED)
def test_every_protocol_runs_its_steps_to_succeeded(protocol: Protocol) -> None:
    assert run_to_end(protocol) == [
        Phase.QUEUED,
        Phase.PREPARING,
        *STEPS[protocol],
        Phase.HANDING_OVER,
        Phase.FINALIZING,
        Phase.SUCCEEDED,
    ]


def test_unimico_path_and_actions() -> None:
    assert STEPS[Protocol.UNIMICO] == (Phase.AWAITING_START_TIMESTAMP, Phase.DRAINING_ORIGIN)
    decision = step(Phase.PREPARING, done=True)
    assert decision == Decision(
        Phase.AWAITING_START_TIMESTAMP, (Action.BEGIN_ROLES, Action.COLLECT_START_TIMESTAMP)
    )


def test_a_phase_not_done_stays_and_repeats_its_actions() -> None:
    assert step(Phase.DRAINING_ORIGIN) == Decision(Phase.DRAINING_ORIGIN, (Action.DRAIN_ORIGIN,))
    assert step(Phase.PREPARING) == Decision(Phase.PREPARING, (Action.START_TARGET_PODS,))


def test_queued_waits_until_admitted_and_fails_on_a_missing_query() -> None:
    assert step(Phase.QUEUED).phase is Phase.QUEUED
    assert step(Phase.QUEUED).actions == ()
    gone = step(Phase.QUEUED, failure="StreamQuery q5 not found: fix spec.queryRef.name")
    assert gone == Decision(Phase.FAILED, (), "StreamQuery q5 not found: fix spec.queryRef.name")


def test_admission_needs_a_resolved_protocol() -> None:
    with pytest.raises(ValueError, match="resolved"):
        step(Phase.QUEUED, Protocol.AUTO, admitted=True)


@pytest.mark.parametrize("phase", [Phase.PREPARING, Phase.DRAINING_ORIGIN, Phase.HANDING_OVER])
def test_failure_before_hand_off_rolls_back(phase: Phase) -> None:
    decision = step(phase, failure="target pod q5-e1-0 deleted")
    assert decision.phase is Phase.ROLLING_BACK
    assert decision.actions == (Action.DELETE_TARGET_PODS, Action.RESUME_ORIGIN)
    assert decision.message == f"{phase}: target pod q5-e1-0 deleted"
    assert step(Phase.ROLLING_BACK, done=True).phase is Phase.ROLLED_BACK


@pytest.mark.parametrize(
    ("phase", "limit"),
    [(Phase.PREPARING, 60), (Phase.TRANSFERRING_STATE, 30), (Phase.HANDING_OVER, 30)],
)
def test_each_phase_times_out_after_its_own_limit(phase: Phase, limit: int) -> None:
    at_limit = Observation(now=T0 + timedelta(seconds=limit))
    late = Observation(now=T0 + timedelta(seconds=limit + 1))
    protocol = Protocol.STATE_TRANSFER
    assert transition(state(phase, protocol), at_limit, TIMEOUTS).phase is phase
    decision = transition(state(phase, protocol), late, TIMEOUTS)
    assert decision.phase is Phase.ROLLING_BACK
    assert (
        decision.message
        == f"{phase}: phase {phase} exceeded its timeout of {limit} s (spec.timeouts)"
    )


def test_failure_after_hand_off_fails_without_rollback() -> None:
    decision = step(Phase.FINALIZING, failure="verification: 3 missing results")
    assert decision == Decision(Phase.FAILED, (), "after hand-off: verification: 3 missing results")


def test_a_pod_created_again_after_the_hand_off_is_said_and_the_migration_goes_on() -> None:
    note = "target pod q-e1-0 lost after the hand-over: created again"
    at = T0 + timedelta(seconds=1)
    staying = transition(state(Phase.FINALIZING), Observation(at, note=note), TIMEOUTS)
    assert (staying.phase, staying.message) == (Phase.FINALIZING, note)
    ending = transition(state(Phase.FINALIZING), Observation(at, done=True, note=note), TIMEOUTS)
    assert (ending.phase, ending.message) == (Phase.SUCCEEDED, note)


def test_a_failing_rollback_is_retried_until_its_timeout() -> None:
    retry = step(Phase.ROLLING_BACK, failure="origin unreachable")
    assert retry.phase is Phase.ROLLING_BACK
    assert retry.message == "origin unreachable"
    late = Observation(now=T0 + timedelta(seconds=21), failure="origin unreachable")
    assert transition(state(Phase.ROLLING_BACK), late, TIMEOUTS).phase is Phase.FAILED


def test_terminal_phases_never_move() -> None:
    for phase in TERMINAL:
        assert step(phase, done=True, failure="x") == Decision(phase, ())


def test_savepoint_restart_starts_its_target_only_after_the_origin_stopped() -> None:
    assert actions_of(Phase.PREPARING, Protocol.SAVEPOINT_RESTART, False) == ()
    steps = STEPS[Protocol.SAVEPOINT_RESTART]
    assert steps.index(Phase.STOPPING_WITH_SNAPSHOT) < steps.index(Phase.STARTING_TARGET)


def test_finalizing_verifies_only_when_asked() -> None:
    assert actions_of(Phase.FINALIZING, Protocol.UNIMICO, True) == (
        Action.DELETE_ORIGIN_PODS,
        Action.VERIFY_OUTPUT,
        Action.RECORD_COST,
    )
    assert Action.VERIFY_OUTPUT not in actions_of(Phase.FINALIZING, Protocol.UNIMICO, False)


def test_a_queued_migration_that_succeeds_no_longer_says_it_is_waiting() -> None:
    """A merge patch that omits a None field leaves it standing: the patch nulls it."""
    queued = MigrationStatus(phase=Phase.QUEUED, message=step(Phase.QUEUED).message)
    assert queued.message == "waiting for the query's active migration to finish"
    done = queued.model_copy(update={"phase": Phase.SUCCEEDED, "message": None})
    done.cost = Cost(duration_seconds=3.5)
    patch = status_patch(done, queued)
    assert patch["message"] is None and patch["phase"] == "Succeeded"
    assert patch["cost"] == {"durationSeconds": 3.5}
    again = status_patch(done.model_copy(update={"cost": Cost()}), done)
    assert again["cost"] == {"durationSeconds": None}  # nested fields are cleared too
    assert "message" not in status_patch(done, done)  # unset before and after: not written


def _conditions(status: MigrationStatus, verify: bool = True) -> dict[str, tuple[str, str]]:
    found = migration_conditions(status, verify, T0)
    return {c["type"]: (c["status"], c["reason"]) for c in found}


def test_migration_conditions_follow_the_phase_and_the_verification() -> None:
    running = MigrationStatus(phase=Phase.DRAINING_ORIGIN)
    assert _conditions(running) == {
        "Progressing": ("True", "DrainingOrigin"),
        "Ready": ("False", "DrainingOrigin"),
        "Verified": ("Unknown", "Pending"),
    }
    assert "Verified" not in _conditions(running, verify=False)
    exact = Verification(exact=True, compared=10, message="10 compared: exact")
    done = MigrationStatus(phase=Phase.SUCCEEDED, verification=exact)
    assert _conditions(done) == {
        "Progressing": ("False", "Succeeded"),
        "Ready": ("True", "Succeeded"),
        "Verified": ("True", "Exact"),
    }
    wrong = done.model_copy(update={"verification": Verification(exact=False, missing=2)})
    assert _conditions(wrong)["Verified"] == ("False", "NotExact")
    rolled = MigrationStatus(phase=Phase.ROLLED_BACK, message="rolled back")
    assert _conditions(rolled)["Verified"] == ("Unknown", "NotRun")
    assert _conditions(rolled)["Ready"] == ("False", "RolledBack")


def test_a_condition_keeps_its_transition_time_while_its_status_holds() -> None:
    status = MigrationStatus(phase=Phase.PREPARING)
    status.conditions = [
        Condition.model_validate(c) for c in migration_conditions(status, False, T0)
    ]
    later = T0 + timedelta(seconds=5)
    moved = status.model_copy(update={"phase": Phase.HANDING_OVER})
    times = {c["type"]: c["lastTransitionTime"] for c in migration_conditions(moved, False, later)}
    assert times["Progressing"] == T0.isoformat().replace("+00:00", "Z")
