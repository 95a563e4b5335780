"""The Migration phase machine: a pure `transition(state, observation) -> Decision`.

Phases run Queued → Preparing → the protocol's steps → HandingOver → Finalizing → Succeeded.
Each decision carries the actions of the phase it lands in; the act layer performs them
idempotently (keyed by migration id) and repeats them on every tick until the observation says
the phase's step is done, so an operator restarted at any point resumes where status stands.
Before the hand-off a failure or a timeout rolls back to the origin (RollingBack → RolledBack);
after it, the origin pods no longer own the partitions, so a failure ends in Failed.
"""

from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum

from streamshift_operator.models.migration import TERMINAL, Phase, Protocol, Timeouts


class Action(StrEnum):
    START_TARGET_PODS = "StartTargetPods"
    BEGIN_ROLES = "BeginRoles"
    COLLECT_START_TIMESTAMP = "CollectStartTimestamp"
    DRAIN_ORIGIN = "DrainOrigin"
    RUN_TARGET_FROM_SPLIT = "RunTargetFromSplit"
    PAUSE_ORIGIN = "PauseOrigin"
    MOVE_MATCHED_STATE = "MoveMatchedState"
    RECOMPUTE_UNMATCHED = "RecomputeUnmatched"
    PAUSE_AT_MARKER = "PauseAtMarker"
    SNAPSHOT_ORIGIN = "SnapshotOrigin"
    STOP_ORIGIN = "StopOrigin"
    RESTORE_TARGET = "RestoreTarget"
    HAND_OVER = "HandOver"
    DELETE_ORIGIN_PODS = "DeleteOriginPods"
    VERIFY_OUTPUT = "VerifyOutput"
    RECORD_COST = "RecordCost"
    DELETE_TARGET_PODS = "DeleteTargetPods"
    RESUME_ORIGIN = "ResumeOrigin"


P = Phase
A = Action

# The protocol steps between Preparing and HandingOver, in order.
STEPS: dict[Protocol, tuple[Phase, ...]] = {
    Protocol.UNIMICO: (P.AWAITING_START_TIMESTAMP, P.DRAINING_ORIGIN),
    Protocol.PARALLEL_TRACK: (P.TRACKING_IN_PARALLEL, P.DRAINING_ORIGIN),
    Protocol.MOVING_STATE: (P.PAUSING_ORIGIN, P.MOVING_STATE, P.RECOMPUTING),
    Protocol.STATE_TRANSFER: (P.PAUSING_AT_MARKER, P.TRANSFERRING_STATE),
    Protocol.SAVEPOINT_RESTART: (P.STOPPING_WITH_SNAPSHOT, P.STARTING_TARGET, P.RESTORING),
}

_ACTIONS: dict[Phase, tuple[Action, ...]] = {
    P.AWAITING_START_TIMESTAMP: (A.BEGIN_ROLES, A.COLLECT_START_TIMESTAMP),
    P.TRACKING_IN_PARALLEL: (A.BEGIN_ROLES, A.RUN_TARGET_FROM_SPLIT),
    P.DRAINING_ORIGIN: (A.DRAIN_ORIGIN,),
    P.PAUSING_ORIGIN: (A.BEGIN_ROLES, A.PAUSE_ORIGIN),
    P.MOVING_STATE: (A.MOVE_MATCHED_STATE,),
    P.RECOMPUTING: (A.RECOMPUTE_UNMATCHED,),
    P.PAUSING_AT_MARKER: (A.BEGIN_ROLES, A.PAUSE_AT_MARKER),
    P.TRANSFERRING_STATE: (A.SNAPSHOT_ORIGIN, A.RESTORE_TARGET),
    P.STOPPING_WITH_SNAPSHOT: (A.SNAPSHOT_ORIGIN, A.STOP_ORIGIN),
    P.STARTING_TARGET: (A.START_TARGET_PODS,),
    P.RESTORING: (A.RESTORE_TARGET,),
    P.HANDING_OVER: (A.HAND_OVER,),
    P.ROLLING_BACK: (A.DELETE_TARGET_PODS, A.RESUME_ORIGIN),
}


@dataclass(frozen=True)
class MachineState:
    phase: Phase
    entered_at: datetime
    protocol: Protocol | None  # resolved (never `auto`) once admitted
    verify: bool


@dataclass(frozen=True)
class Observation:
    """What the operator saw this tick; `done` means the current phase's step completed."""

    now: datetime
    done: bool = False
    failure: str | None = None
    admitted: bool = False


@dataclass(frozen=True)
class Decision:
    phase: Phase
    actions: tuple[Action, ...]
    message: str | None = None


def actions_of(phase: Phase, protocol: Protocol | None, verify: bool) -> tuple[Action, ...]:
    """What the act layer must ensure while the migration stands in `phase`."""
    if phase is P.PREPARING:
        # savepoint-restart is the baseline: its target starts only after the origin stopped.
        return () if protocol is Protocol.SAVEPOINT_RESTART else (A.START_TARGET_PODS,)
    if phase is P.FINALIZING:
        tail = (A.VERIFY_OUTPUT, A.RECORD_COST) if verify else (A.RECORD_COST,)
        return (A.DELETE_ORIGIN_PODS, *tail)
    return _ACTIONS.get(phase, ())


def timeout_seconds(phase: Phase, timeouts: Timeouts) -> int | None:
    """The phase's time limit from spec.timeouts; Queued and terminal phases have none."""
    if phase is P.QUEUED or phase in TERMINAL:
        return None
    if phase is P.PREPARING:
        return timeouts.preparing_seconds
    if phase in (P.FINALIZING, P.ROLLING_BACK):
        return timeouts.finalizing_seconds
    return timeouts.protocol_step_seconds


def transition(state: MachineState, obs: Observation, timeouts: Timeouts) -> Decision:
    """The next phase and its actions; staying put repeats the current phase's actions."""
    phase = state.phase
    if phase in TERMINAL:
        return Decision(phase, ())
    if phase is P.QUEUED:
        return _from_queued(state, obs)
    timeout = _timed_out(state, obs, timeouts)
    if phase is P.ROLLING_BACK:
        if obs.done:
            return _enter(P.ROLLED_BACK, state, "rolled back: the origin runs as before")
        if timeout is not None:
            return _enter(P.FAILED, state, f"rollback did not finish: {timeout}")
        return _enter(phase, state, obs.failure)  # a failing rollback step is retried
    failure = obs.failure or timeout
    if phase is P.FINALIZING:
        if failure is not None:
            return _enter(P.FAILED, state, f"after hand-off: {failure}")
        return _enter(P.SUCCEEDED, state, None) if obs.done else _enter(phase, state, None)
    if failure is not None:
        return _enter(P.ROLLING_BACK, state, f"{phase}: {failure}")
    return _enter(_next(state), state, None) if obs.done else _enter(phase, state, None)


def _from_queued(state: MachineState, obs: Observation) -> Decision:
    if obs.failure is not None:
        return _enter(P.FAILED, state, obs.failure)
    if not obs.admitted:
        return Decision(P.QUEUED, (), "waiting for the query's active migration to finish")
    if state.protocol is None or state.protocol is Protocol.AUTO:
        raise ValueError("a migration is admitted only with its protocol resolved")
    return _enter(P.PREPARING, state, None)


def _next(state: MachineState) -> Phase:
    if state.protocol is None or state.protocol is Protocol.AUTO:
        raise ValueError(f"phase {state.phase} needs a resolved protocol")
    order = (P.PREPARING, *STEPS[state.protocol], P.HANDING_OVER, P.FINALIZING)
    return order[order.index(state.phase) + 1]


def _timed_out(state: MachineState, obs: Observation, timeouts: Timeouts) -> str | None:
    limit = timeout_seconds(state.phase, timeouts)
    if limit is None or (obs.now - state.entered_at).total_seconds() <= limit:
        return None
    return f"phase {state.phase} exceeded its timeout of {limit} s (spec.timeouts)"


def _enter(phase: Phase, state: MachineState, message: str | None) -> Decision:
    return Decision(phase, actions_of(phase, state.protocol, state.verify), message)
