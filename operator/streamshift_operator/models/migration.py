"""The Migration resource (short name `mig`): move or rescale one StreamQuery by a protocol.

The spec names the query, the protocol (`auto` lets the operator choose), exactly one target
(a new parallelism, instances to move to new pods, or a new plan), whether to verify the output
against a reference run, and a timeout per phase. The spec is immutable once created. The
status is the phase machine's record: the phase, its history with times, the chosen protocol
and why, the cost, and the verification result.
"""

from datetime import datetime
from enum import StrEnum
from typing import Annotated

from pydantic import ConfigDict, Field

from streamshift_operator.models.common import DNS_SUBDOMAIN, ApiModel, Condition, cel
from streamshift_operator.models.protocol import Protocol as Protocol  # re-exported for its users
from streamshift_operator.models.streamquery import PlanSource


class Phase(StrEnum):
    """The Migration's phase: Queued, Preparing, the protocol's own phases, HandingOver,
    Finalizing, then Succeeded, or RollingBack then RolledBack, or Failed."""

    QUEUED = "Queued"
    PREPARING = "Preparing"
    AWAITING_START_TIMESTAMP = "AwaitingStartTimestamp"
    TRACKING_IN_PARALLEL = "TrackingInParallel"
    DRAINING_ORIGIN = "DrainingOrigin"
    PAUSING_ORIGIN = "PausingOrigin"
    MOVING_STATE = "MovingState"
    RECOMPUTING = "Recomputing"
    PAUSING_AT_MARKER = "PausingAtMarker"
    TRANSFERRING_STATE = "TransferringState"
    STOPPING_WITH_SNAPSHOT = "StoppingWithSnapshot"
    STARTING_TARGET = "StartingTarget"
    RESTORING = "Restoring"
    HANDING_OVER = "HandingOver"
    FINALIZING = "Finalizing"
    ROLLING_BACK = "RollingBack"
    SUCCEEDED = "Succeeded"
    FAILED = "Failed"
    ROLLED_BACK = "RolledBack"


TERMINAL = frozenset({Phase.SUCCEEDED, Phase.FAILED, Phase.ROLLED_BACK})


class QueryRef(ApiModel):
    """The StreamQuery to migrate, in the Migration's namespace."""

    name: str = Field(min_length=1, max_length=253, pattern=DNS_SUBDOMAIN)
    """The StreamQuery's name."""


class Target(ApiModel):
    """Where the query goes: exactly one of a new parallelism, instances to move to new pods,
    or a new plan."""

    model_config = ConfigDict(
        json_schema_extra={
            "x-kubernetes-validations": [
                cel(
                    "[has(self.parallelism), has(self.moveInstances), has(self.plan)]"
                    ".filter(x, x).size() == 1",
                    "set exactly one of target.parallelism (rescale), target.moveInstances "
                    "(move instances to new pods) or target.plan (change the plan)",
                )
            ]
        }
    )

    parallelism: int | None = Field(default=None, ge=1, le=1024)
    """Rescale: the new number of instances (at most the sources' partition count)."""
    move_instances: list[Annotated[int, Field(ge=0, le=1023)]] | None = Field(
        default=None,
        min_length=1,
        max_length=1024,
        json_schema_extra={"x-kubernetes-list-type": "set"},
    )
    """Move: the ids of running instances to move to new pods, keeping their partitions."""
    plan: PlanSource | None = None
    """Change the plan: the plan the query runs afterwards (same inputs and output)."""


class Timeouts(ApiModel):
    """Seconds each phase may take before the migration rolls back (or fails after hand-off)."""

    preparing_seconds: int = Field(default=120, ge=1, le=86400)
    """Preparing: starting the target pods."""
    protocol_step_seconds: int = Field(default=600, ge=1, le=86400)
    """Each of the protocol's own phases."""
    finalizing_seconds: int = Field(default=120, ge=1, le=86400)
    """Finalizing (removing the origin pods, measuring the cost, verifying) and RollingBack."""


class MigrationSpec(ApiModel):
    """Which query to migrate, how, and where to; immutable once created."""

    model_config = ConfigDict(
        json_schema_extra={
            "x-kubernetes-validations": [
                cel(
                    "self == oldSelf",
                    "a Migration's spec cannot change once created: "
                    "delete it and create a new Migration",
                ),
                cel(
                    "!(self.protocol == 'unimico' && has(self.target.plan))",
                    "protocol unimico hands the same plan over at a window boundary and cannot "
                    "change the plan: use parallel-track, moving-state, state-transfer or auto",
                    ".protocol",
                ),
            ]
        }
    )

    query_ref: QueryRef
    """The StreamQuery to migrate, in this namespace."""
    protocol: Protocol = Protocol.AUTO
    """The migration protocol; auto lets the operator choose (status.protocol says which)."""
    target: Target
    """Exactly one of parallelism, moveInstances or plan."""
    verify: bool = False
    """Compare the query's whole output with a reference run without migration once the
    windows the migration touched have closed (status.verification, condition Verified)."""
    timeouts: Timeouts = Timeouts()
    """Seconds each phase may take before the migration rolls back (or fails after hand-off)."""


class PhaseRecord(ApiModel):
    """One phase the migration entered."""

    phase: Phase
    """The phase."""
    entered_at: datetime
    """When the migration entered it."""
    message: str | None = None
    """Why, when the phase says something went wrong."""


class Cost(ApiModel):
    """What the migration cost, measured by the operator and the workers."""

    duration_seconds: float | None = Field(default=None, ge=0)
    """The protocol's duration: from entering Preparing to entering Finalizing (the hand-off
    done); removing the origin pods, measuring and verifying are not in it."""
    verification_seconds: float | None = Field(default=None, ge=0)
    """How long the verification took (waiting for windows to close included)."""
    output_gap_seconds: float | None = Field(default=None, ge=0)
    """Longest wall-clock pause between the moving partitions' results during the migration
    (their output topic partitions, read_committed)."""
    output_gap_before_seconds: float | None = Field(default=None, ge=0)
    """The query's steady rhythm: the longest pause between consecutive results over a stretch
    as long just before the migration, the wait for the query's first result not counted."""
    state_bytes_moved: int | None = Field(default=None, ge=0)
    """Bytes of state the protocol moved between workers (moving-state, state-transfer)."""
    events_processed_twice: int | None = Field(default=None, ge=0)
    """Input records both origin and target processed (parallel-track, moving-state)."""


class Verification(ApiModel):
    """The query's output compared with a reference run without migration, result by result:
    every result final at or below `bound` (event time), in both directions."""

    missing: int = Field(default=0, ge=0)
    """Reference results absent from the output."""
    extra: int = Field(default=0, ge=0)
    """Output results the reference does not have."""
    differing: int = Field(default=0, ge=0)
    """Results in both whose window, key or values differ."""
    duplicate: int = Field(default=0, ge=0)
    """Output results written more than once (copies beyond the first)."""
    compared: int = Field(default=0, ge=0)
    """Reference results compared."""
    bound: int | None = None
    """The event time (ms) up to which results were compared: the smaller of the workers'
    committed watermark and the reference's."""
    exact: bool
    """True only when nothing is missing, extra, differing or duplicated and every window
    the migration touched was compared."""
    message: str | None = None
    """What was compared and what differed, with example result ids."""


class AssignedInstance(ApiModel):
    """A target instance and the partitions it takes."""

    id: int = Field(ge=0)
    """The instance number."""
    partitions: list[int]
    """The source partitions (key groups) it owns after the hand-off."""


class MigrationStatus(ApiModel):
    """The phase machine's record: phase, history, the chosen protocol, cost and verification."""

    phase: Phase = Phase.QUEUED
    """Where the migration stands."""
    message: str | None = None
    """What the migration waits for or what went wrong; cleared when that no longer holds."""
    observed_generation: int | None = None
    """The spec generation the status reflects."""
    protocol: Protocol | None = None
    """The protocol that runs: the spec's, or the one auto chose."""
    protocol_reason: str | None = None
    """Why this protocol (auto's reasoning, or that the spec named it)."""
    origin_epoch: int | None = None
    """The query's placement epoch the migration starts from."""
    target_epoch: int | None = None
    """The epoch of the target pods."""
    target_instances: list[AssignedInstance] = Field(default_factory=list)
    """The target instances and their partitions."""
    target_pods_created: list[str] = Field(default_factory=list)
    """The target pods this migration has created. One of them gone before the hand-over was lost
    while starting: it is created again, and the message and a PodCreatedAgain Event say so."""
    phase_history: list[PhaseRecord] = Field(default_factory=list)
    """Every phase entered, with its time."""
    cost: Cost = Cost()
    """What the migration cost: durations, output gaps, state moved, work repeated."""
    verification: Verification | None = None
    """With spec.verify: the output compared with a reference run."""
    conditions: list[Condition] = Field(
        default_factory=list,
        json_schema_extra={"x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["type"]},
    )
    """Progressing (not yet terminal), Ready (Succeeded) and, with spec.verify, Verified."""
