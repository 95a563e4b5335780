"""Lost pods of a migration, the pure decision: which pods each phase needs, and a pod gone,
going, ended or not ready past the grace named as lost; the machine turns that into a rollback
before the hand-over (Failed after it) with the pod in the message, on the next tick rather
than at the phase's timeout."""

from datetime import UTC, datetime, timedelta

import pytest
from streamshift_operator.migration.lost_pods import (
    GRACE_S,
    Need,
    lost_pod,
    lost_while_starting,
    needs,
)
from streamshift_operator.migration.phase_machine import (
    STEPS,
    MachineState,
    Observation,
    transition,
)
from streamshift_operator.models.migration import Phase, Protocol, Timeouts
from streamshift_operator.streamquery.observe import PodView

NOW = datetime(2026, 11, 24, 19, 0, tzinfo=UTC)
ORIGIN, TARGETS = ["q-e0-0"], ["q-e1-0", "q-e1-1"]


def pod(
    name: str,
    *,
    phase: str = "Running",
    ready: bool = True,
    since_s: float = 60.0,
    deleting: bool = False,
) -> PodView:
    return PodView(
        name=name,
        epoch=int(name.split("-e")[1].split("-")[0]),
        instance=int(name.rsplit("-", 1)[1]),
        phase=phase,
        ready=ready,
        ip="10.0.0.1",
        restarts=0,
        deleting=deleting,
        ready_since=NOW - timedelta(seconds=since_s),
    )


def all_up() -> dict[str, PodView]:
    return {name: pod(name) for name in [*ORIGIN, *TARGETS]}


def lost(
    phase: Phase, protocol: Protocol, pods: dict[str, PodView], taken: bool = False
) -> str | None:
    return lost_pod(phase, protocol, taken, ORIGIN, TARGETS, pods, NOW)


MIDDLE = [(protocol, phase) for protocol, steps in STEPS.items() for phase in steps]


@pytest.mark.parametrize(("protocol", "phase"), MIDDLE)
def test_every_pod_up_is_no_loss(protocol: Protocol, phase: Phase) -> None:
    assert lost(phase, protocol, all_up()) is None


@pytest.mark.parametrize(
    ("protocol", "phase"),
    [
        (Protocol.UNIMICO, Phase.DRAINING_ORIGIN),
        (Protocol.UNIMICO, Phase.AWAITING_START_TIMESTAMP),
        (Protocol.STATE_TRANSFER, Phase.TRANSFERRING_STATE),
        (Protocol.MOVING_STATE, Phase.MOVING_STATE),
        (Protocol.PARALLEL_TRACK, Phase.TRACKING_IN_PARALLEL),
        (Protocol.SAVEPOINT_RESTART, Phase.RESTORING),
    ],
)
def test_a_deleted_target_in_a_protocol_step_is_lost_at_once(
    protocol: Protocol, phase: Phase
) -> None:
    pods = all_up()
    del pods["q-e1-1"]
    assert lost(phase, protocol, pods) == "target pod q-e1-1 is gone"
    pods["q-e1-1"] = pod("q-e1-1", deleting=True)
    assert lost(phase, protocol, pods) == "target pod q-e1-1 is being deleted"
    pods["q-e1-1"] = pod("q-e1-1", phase="Failed", ready=False)
    assert lost(phase, protocol, pods) == "target pod q-e1-1 has ended (phase Failed)"


@pytest.mark.parametrize(
    ("protocol", "phase"),
    [
        (Protocol.UNIMICO, Phase.DRAINING_ORIGIN),
        (Protocol.MOVING_STATE, Phase.MOVING_STATE),
        (Protocol.STATE_TRANSFER, Phase.PAUSING_AT_MARKER),
        (Protocol.SAVEPOINT_RESTART, Phase.STOPPING_WITH_SNAPSHOT),
        (Protocol.UNIMICO, Phase.PREPARING),
    ],
)
def test_a_lost_origin_before_its_snapshot_is_lost(protocol: Protocol, phase: Phase) -> None:
    pods = all_up()
    del pods["q-e0-0"]
    assert lost(phase, protocol, pods) == "origin pod q-e0-0 is gone"


def test_an_origin_that_gave_its_state_away_is_no_longer_needed() -> None:
    pods = all_up()
    del pods["q-e0-0"]
    # savepoint-restart stops its origin on purpose; state-transfer's has let its partitions go
    assert lost(Phase.STOPPING_WITH_SNAPSHOT, Protocol.SAVEPOINT_RESTART, pods, taken=True) is None
    assert lost(Phase.RESTORING, Protocol.SAVEPOINT_RESTART, pods, taken=True) is None
    assert lost(Phase.TRANSFERRING_STATE, Protocol.STATE_TRANSFER, pods, taken=True) is None
    # moving-state's origin serves the state it moves
    assert lost(Phase.MOVING_STATE, Protocol.MOVING_STATE, pods, taken=True) is not None


def test_a_pod_not_ready_is_lost_only_after_the_grace() -> None:
    pods = all_up()
    pods["q-e1-0"] = pod("q-e1-0", ready=False, since_s=GRACE_S - 1)
    assert lost(Phase.DRAINING_ORIGIN, Protocol.UNIMICO, pods) is None
    pods["q-e1-0"] = pod("q-e1-0", ready=False, since_s=GRACE_S + 2)
    assert lost(Phase.DRAINING_ORIGIN, Protocol.UNIMICO, pods) == (
        f"target pod q-e1-0 has not been ready for {GRACE_S + 2:.0f} s"
    )


def test_starting_targets_are_lost_only_when_they_ended() -> None:
    """Preparing and StartingTarget create missing targets again; a Failed one is not."""
    pods = {name: p for name, p in all_up().items() if name not in TARGETS}
    pods["q-e1-0"] = pod("q-e1-0", phase="Pending", ready=False, since_s=300)
    assert lost(Phase.PREPARING, Protocol.UNIMICO, pods) is None
    assert lost(Phase.STARTING_TARGET, Protocol.SAVEPOINT_RESTART, pods, taken=True) is None
    pods["q-e1-0"] = pod("q-e1-0", phase="Failed", ready=False)
    assert lost(Phase.PREPARING, Protocol.UNIMICO, pods) == (
        "target pod q-e1-0 has ended (phase Failed)"
    )


@pytest.mark.parametrize(
    "phase", [Phase.QUEUED, Phase.FINALIZING, Phase.ROLLING_BACK, Phase.ROLLED_BACK, Phase.FAILED]
)
def test_phases_that_watch_no_pods(phase: Phase) -> None:
    assert needs(phase, Protocol.UNIMICO, False) == (Need.NONE, Need.NONE)
    assert lost(phase, Protocol.UNIMICO, {}) is None


def test_handing_over_needs_the_targets_only() -> None:
    assert needs(Phase.HANDING_OVER, Protocol.STATE_TRANSFER, True) == (Need.NONE, Need.UP)
    assert lost(Phase.HANDING_OVER, Protocol.UNIMICO, {"q-e1-0": pod("q-e1-0")}) == (
        "target pod q-e1-1 is gone"
    )


def test_the_machine_rolls_back_on_a_lost_pod_with_its_name_long_before_the_timeout() -> None:
    pods = all_up()
    del pods["q-e1-0"]
    why = lost(Phase.TRANSFERRING_STATE, Protocol.STATE_TRANSFER, pods)
    entered = NOW - timedelta(seconds=1)
    state = MachineState(Phase.TRANSFERRING_STATE, entered, Protocol.STATE_TRANSFER, False)
    decision = transition(state, Observation(NOW, failure=why), Timeouts())
    assert decision.phase is Phase.ROLLING_BACK
    assert decision.message == "TransferringState: target pod q-e1-0 is gone"


def test_a_target_pod_gone_after_it_was_created_is_lost_while_starting() -> None:
    """The local node agent removes a deleted pod within its tick, so the operator never sees
    it going: a target the migration created before and absent now is the lost one; one not
    created yet, or still there (even deleting), is not."""
    created = ["q-e1-0"]
    assert lost_while_starting(TARGETS, created, {}) == ["q-e1-0"]
    assert lost_while_starting(TARGETS, created, {"q-e1-0": pod("q-e1-0")}) == []
    going = {"q-e1-0": pod("q-e1-0", deleting=True)}
    assert lost_while_starting(TARGETS, created, going) == []
    assert lost_while_starting(TARGETS, [], {}) == []
    assert lost_while_starting(TARGETS, TARGETS, {"q-e1-1": pod("q-e1-1")}) == ["q-e1-0"]
