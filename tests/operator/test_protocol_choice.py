"""Protocol feasibility and the `auto` choice."""

import pytest
from streamshift_operator.models.migration import Protocol
from streamshift_operator.protocols import (
    LONG_WINDOW_MS,
    PlanTraits,
    TargetKind,
    choose,
    refusal,
)

WINDOWED = PlanTraits(windowed=True, window_ms=10_000, unbounded_state=False)
ROWS = PlanTraits(windowed=True, window_ms=None, unbounded_state=False)
UNBOUNDED = PlanTraits(windowed=False, window_ms=None, unbounded_state=True)
LONG = PlanTraits(windowed=True, window_ms=LONG_WINDOW_MS * 2, unbounded_state=False)


@pytest.mark.parametrize("protocol", [Protocol.UNIMICO, Protocol.PARALLEL_TRACK])
def test_boundary_protocols_refuse_a_plan_without_window(protocol: Protocol) -> None:
    message = refusal(protocol, UNBOUNDED, TargetKind.RESCALE)
    assert message is not None
    assert "use state-transfer, savepoint-restart or auto" in message
    assert refusal(protocol, WINDOWED, TargetKind.RESCALE) is None


def test_only_parallel_track_and_moving_state_change_the_plan() -> None:
    for protocol in (Protocol.UNIMICO, Protocol.STATE_TRANSFER, Protocol.SAVEPOINT_RESTART):
        message = str(refusal(protocol, WINDOWED, TargetKind.PLAN))
        assert f"protocol {protocol} cannot change the plan" in message
        assert "use parallel-track, moving-state or auto" in message
    for protocol in (Protocol.PARALLEL_TRACK, Protocol.MOVING_STATE):
        assert refusal(protocol, WINDOWED, TargetKind.PLAN) is None


@pytest.mark.parametrize(
    ("traits", "target", "state", "expected"),
    [
        (WINDOWED, TargetKind.RESCALE, 10**9, Protocol.UNIMICO),
        (WINDOWED, TargetKind.MOVE, 0, Protocol.UNIMICO),
        (ROWS, TargetKind.MOVE, 0, Protocol.UNIMICO),
        (WINDOWED, TargetKind.PLAN, 0, Protocol.PARALLEL_TRACK),
        (UNBOUNDED, TargetKind.RESCALE, 0, Protocol.STATE_TRANSFER),
        (UNBOUNDED, TargetKind.PLAN, 0, Protocol.MOVING_STATE),
        (LONG, TargetKind.MOVE, 1024, Protocol.STATE_TRANSFER),
        (LONG, TargetKind.MOVE, 10**9, Protocol.UNIMICO),
        (LONG, TargetKind.PLAN, 1024, Protocol.MOVING_STATE),
        (LONG, TargetKind.PLAN, 10**9, Protocol.PARALLEL_TRACK),
    ],
)
def test_auto_choice(
    traits: PlanTraits, target: TargetKind, state: int, expected: Protocol
) -> None:
    choice = choose(traits, target, state)
    assert choice.protocol is expected
    assert refusal(choice.protocol, traits, target) is None
    assert choice.reason
