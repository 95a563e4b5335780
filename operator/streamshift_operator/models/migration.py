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
from streamshift_operator.models.streamquery import PlanSource


class Protocol(StrEnum):
    UNIMICO = "unimico"
    PARALLEL_TRACK = "parallel-track"
    MOVING_STATE = "moving-state"
    STATE_TRANSFER = "state-transfer"
    SAVEPOINT_RESTART = "savepoint-restart"
    AUTO = "auto"


class Phase(StrEnum):
    """Every phase a Migration passes through; the protocol sub-phases sit in the middle."""

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


class Target(ApiModel):
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
    move_instances: list[Annotated[int, Field(ge=0, le=1023)]] | None = Field(
        default=None,
        min_length=1,
        max_length=1024,
        json_schema_extra={"x-kubernetes-list-type": "set"},
    )
    plan: PlanSource | None = None


class Timeouts(ApiModel):
    """Seconds each phase may take before the migration rolls back (or fails after hand-off)."""

    preparing_seconds: int = Field(default=120, ge=1, le=86400)
    protocol_step_seconds: int = Field(default=600, ge=1, le=86400)
    finalizing_seconds: int = Field(default=120, ge=1, le=86400)


class MigrationSpec(ApiModel):
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
    protocol: Protocol = Protocol.AUTO
    target: Target
    verify: bool = False
    timeouts: Timeouts = Timeouts()


class PhaseRecord(ApiModel):
    phase: Phase
    entered_at: datetime
    message: str | None = None


class Cost(ApiModel):
    """What the migration cost, measured by the operator and the workers."""

    duration_seconds: float | None = Field(default=None, ge=0)
    output_gap_seconds: float | None = Field(
        default=None,
        ge=0,
        description="Longest wall-clock pause between the moving partitions' results during "
        "the migration (their output topic partitions, read_committed).",
    )
    output_gap_before_seconds: float | None = Field(
        default=None,
        ge=0,
        description="The same over a stretch as long just before the migration.",
    )
    state_bytes_moved: int | None = Field(default=None, ge=0)
    events_processed_twice: int | None = Field(default=None, ge=0)


class Verification(ApiModel):
    """The output over the migration compared with a reference run without migration."""

    missing: int = Field(ge=0)
    duplicate: int = Field(ge=0)
    exact: bool


class AssignedInstance(ApiModel):
    id: int = Field(ge=0)
    partitions: list[int]


class MigrationStatus(ApiModel):
    phase: Phase = Phase.QUEUED
    message: str | None = None
    observed_generation: int | None = None
    protocol: Protocol | None = None
    protocol_reason: str | None = None
    origin_epoch: int | None = None
    target_epoch: int | None = None
    target_instances: list[AssignedInstance] = Field(default_factory=list)
    phase_history: list[PhaseRecord] = Field(default_factory=list)
    cost: Cost = Cost()
    verification: Verification | None = None
    conditions: list[Condition] = Field(
        default_factory=list,
        json_schema_extra={"x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["type"]},
    )
