"""The Migration phase machine: a pure `transition(state, observation) -> Decision`.

Phases run Queued → Preparing → the protocol's steps → HandingOver → Finalizing → Succeeded.
Each decision carries the actions of the phase it lands in; the act layer performs them
idempotently (keyed by migration id) and repeats them on every tick until the observation says
the phase's step is done, so an operator restarted at any point resumes where status stands.
Before the hand-off a failure or a timeout rolls back to the origin (RollingBack → RolledBack);
after it, the origin pods no longer own the partitions, so a failure ends in Failed. A migration
whose query is deleted (`Observation.abandoned`) ends Failed from any phase at once: the query's
pods go with it, so there is nothing to roll back to, and no pod is started for it any more.
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


# The protocol steps between Preparing and HandingOver, in order.
STEPS: dict[Protocol, tuple[Phase, ...]] = {
    Protocol.UNIMICO: (Phase.AWAITING_START_TIMESTAMP, Phase.DRAINING_ORIGIN),
    Protocol.PARALLEL_TRACK: (Phase.TRACKING_IN_PARALLEL, Phase.DRAINING_ORIGIN),
    Protocol.MOVING_STATE: (Phase.PAUSING_ORIGIN, Phase.MOVING_STATE, Phase.RECOMPUTING),
    Protocol.STATE_TRANSFER: (Phase.PAUSING_AT_MARKER, Phase.TRANSFERRING_STATE),
    Protocol.SAVEPOINT_RESTART: (
        Phase.STOPPING_WITH_SNAPSHOT,
        Phase.STARTING_TARGET,
        Phase.RESTORING,
    ),
}

_ACTIONS: dict[Phase, tuple[Action, ...]] = {
    Phase.AWAITING_START_TIMESTAMP: (Action.BEGIN_ROLES, Action.COLLECT_START_TIMESTAMP),
    Phase.TRACKING_IN_PARALLEL: (Action.BEGIN_ROLES, Action.RUN_TARGET_FROM_SPLIT),
    Phase.DRAINING_ORIGIN: (Action.DRAIN_ORIGIN,),
    Phase.PAUSING_ORIGIN: (Action.BEGIN_ROLES, Action.PAUSE_ORIGIN),
    Phase.MOVING_STATE: (Action.MOVE_MATCHED_STATE,),
    Phase.RECOMPUTING: (Action.RECOMPUTE_UNMATCHED,),
    Phase.PAUSING_AT_MARKER: (Action.BEGIN_ROLES, Action.PAUSE_AT_MARKER),
    Phase.TRANSFERRING_STATE: (Action.SNAPSHOT_ORIGIN, Action.RESTORE_TARGET),
    Phase.STOPPING_WITH_SNAPSHOT: (Action.SNAPSHOT_ORIGIN, Action.STOP_ORIGIN),
    Phase.STARTING_TARGET: (Action.START_TARGET_PODS,),
    Phase.RESTORING: (Action.RESTORE_TARGET,),
    Phase.HANDING_OVER: (Action.HAND_OVER,),
    Phase.ROLLING_BACK: (Action.DELETE_TARGET_PODS, Action.RESUME_ORIGIN),
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
    abandoned: str | None = None  # the query is gone or being deleted: nothing to roll back to
    note: str | None = None  # what the step did that users must hear of (a pod created again)


@dataclass(frozen=True)
class Decision:
    phase: Phase
    actions: tuple[Action, ...]
    message: str | None = None


def actions_of(phase: Phase, protocol: Protocol | None, verify: bool) -> tuple[Action, ...]:
    """What the act layer must ensure while the migration stands in `phase`."""
    if phase is Phase.PREPARING:
        # savepoint-restart is the baseline: its target starts only after the origin stopped.
        return () if protocol is Protocol.SAVEPOINT_RESTART else (Action.START_TARGET_PODS,)
    if phase is Phase.FINALIZING:
        tail = (Action.VERIFY_OUTPUT, Action.RECORD_COST) if verify else (Action.RECORD_COST,)
        return (Action.DELETE_ORIGIN_PODS, *tail)
    return _ACTIONS.get(phase, ())


def timeout_seconds(phase: Phase, timeouts: Timeouts) -> int | None:
    """The phase's time limit from spec.timeouts; Queued and terminal phases have none."""
    if phase is Phase.QUEUED or phase in TERMINAL:
        return None
    if phase is Phase.PREPARING:
        return timeouts.preparing_seconds
    if phase in (Phase.FINALIZING, Phase.ROLLING_BACK):
        return timeouts.finalizing_seconds
    return timeouts.protocol_step_seconds


def transition(state: MachineState, obs: Observation, timeouts: Timeouts) -> Decision:
    """The next phase and its actions; staying put repeats the current phase's actions."""
    phase = state.phase
    if phase in TERMINAL:
        return Decision(phase, ())
    if phase is Phase.QUEUED:
        return _from_queued(state, obs)
    if obs.abandoned is not None:  # its pods go with the query: no rollback, no more pods
        return _enter(Phase.FAILED, state, f"{phase}: {obs.abandoned}")
    timeout = _timed_out(state, obs, timeouts)
    if phase is Phase.ROLLING_BACK:
        if obs.done:
            return _enter(Phase.ROLLED_BACK, state, "rolled back: the origin runs as before")
        if timeout is not None:
            return _enter(Phase.FAILED, state, f"rollback did not finish: {timeout}")
        return _enter(phase, state, obs.failure)  # a failing rollback step is retried
    failure = obs.failure or timeout
    if phase is Phase.FINALIZING:
        if failure is not None:
            return _enter(Phase.FAILED, state, f"after hand-off: {failure}")
        return _enter(Phase.SUCCEEDED if obs.done else phase, state, obs.note)
    if failure is not None:
        return _enter(Phase.ROLLING_BACK, state, f"{phase}: {failure}")
    return _enter(_next(state) if obs.done else phase, state, obs.note)


def _from_queued(state: MachineState, obs: Observation) -> Decision:
    if obs.failure is not None:
        return _enter(Phase.FAILED, state, obs.failure)
    if not obs.admitted:
        return Decision(Phase.QUEUED, (), "waiting for the query's active migration to finish")
    if state.protocol is None or state.protocol is Protocol.AUTO:
        raise ValueError("a migration is admitted only with its protocol resolved")
    return _enter(Phase.PREPARING, state, None)


def _next(state: MachineState) -> Phase:
    if state.protocol is None or state.protocol is Protocol.AUTO:
        raise ValueError(f"phase {state.phase} needs a resolved protocol")
    order = (Phase.PREPARING, *STEPS[state.protocol], Phase.HANDING_OVER, Phase.FINALIZING)
    return order[order.index(state.phase) + 1]


def _timed_out(state: MachineState, obs: Observation, timeouts: Timeouts) -> str | None:
    limit = timeout_seconds(state.phase, timeouts)
    if limit is None or (obs.now - state.entered_at).total_seconds() <= limit:
        return None
    return f"phase {state.phase} exceeded its timeout of {limit} s (spec.timeouts)"


def _enter(phase: Phase, state: MachineState, message: str | None) -> Decision:
    return Decision(phase, actions_of(phase, state.protocol, state.verify), message)
