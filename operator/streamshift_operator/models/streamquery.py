"""The StreamQuery resource (short name `sq`): a continuous query and where it runs.

The spec names the plan (a built-in such as `nexmark-q5`, or an inline plan object), the Kafka
topics it reads and writes, its parallelism (one worker pod per instance), resources, snapshot
settings, the Secret holding the control-API token, and the autoscaler's bounds and targets.
The status is what the operator observed: phase, conditions, instances with their partitions,
throughput, lag, watermark, the last snapshot and the autoscaler's recommendation.
`status.replicas` and `status.selector` back the `scale` subresource.
"""

from datetime import datetime
from enum import StrEnum
from typing import Any

from pydantic import ConfigDict, Field

from streamshift_operator.models.common import (
    QUANTITY,
    ApiModel,
    Condition,
    SecretKeyRef,
    cel,
)
from streamshift_operator.models.protocol import Protocol

TOPIC = r"^[a-zA-Z0-9._-]+$"
INPUT_NAME = r"^[A-Za-z_][A-Za-z0-9_.-]*$"  # as the plan names its inputs and outputs


class PlanSource(ApiModel):
    """A plan: exactly one of a built-in name or an inline plan object."""

    model_config = ConfigDict(
        json_schema_extra={
            "x-kubernetes-validations": [
                cel(
                    "has(self.builtin) != has(self.inline)",
                    "set exactly one of plan.builtin (a named query such as nexmark-q5) "
                    "or plan.inline (a plan object)",
                )
            ]
        }
    )

    builtin: str | None = Field(default=None, max_length=63, pattern=r"^[a-z0-9-]+$")
    """A built-in plan by name: the seed queries q1, q2, q3, smq, or nexmark-q0 ... nexmark-q8."""
    inline: dict[str, Any] | None = None
    """A plan object (name, inputs with their schemas, operators, output), as the engine's
    plan documents are written (docs/design/engine-api.md)."""


class KafkaSettings(ApiModel):
    """The Kafka cluster the query reads and writes."""

    bootstrap_servers: str = Field(min_length=1, max_length=1024)
    """Comma-separated host:port list of Kafka brokers, as the workers reach them."""


class SourceTopic(ApiModel):
    """An input of the plan, read from a Kafka topic; inputs are co-partitioned by key."""

    name: str = Field(max_length=63, pattern=INPUT_NAME)
    """The plan input this topic feeds (an input name of the plan)."""
    topic: str = Field(max_length=249, pattern=TOPIC)
    """The Kafka topic holding the input's JSON records."""
    partitions: int = Field(ge=1, le=1024)
    """The topic's partition count (must match the topic; every source has the same)."""


class SinkTopic(ApiModel):
    """An output of the plan, written to a Kafka topic."""

    name: str = Field(max_length=63, pattern=INPUT_NAME)
    """A name for this output."""
    topic: str = Field(max_length=249, pattern=TOPIC)
    """The Kafka topic the results are written to (transactionally, one JSON record each)."""
    partitions: int = Field(default=1, ge=1, le=1024)
    """The topic's partition count: a key group's results go to partition `group mod n`."""


class ResourceList(ApiModel):
    """CPU and memory quantities, as in a container's resources."""

    cpu: str | None = Field(default=None, max_length=32, pattern=QUANTITY)
    """CPU quantity, such as 250m or 2."""
    memory: str | None = Field(default=None, max_length=32, pattern=QUANTITY)
    """Memory quantity, such as 256Mi or 1Gi."""


class Resources(ApiModel):
    """Requests and limits of each worker pod."""

    requests: ResourceList = ResourceList(cpu="250m", memory="256Mi")
    """What each worker pod is scheduled with."""
    limits: ResourceList = ResourceList(memory="1Gi")
    """The most each worker pod may use."""


class RetentionPolicy(StrEnum):
    """Retain keeps the snapshots when the query is deleted; Delete removes them."""

    RETAIN = "Retain"
    DELETE = "Delete"


class Retention(ApiModel):
    """What happens to snapshots: how many a worker keeps, and whether deletion removes them."""

    on_delete: RetentionPolicy = RetentionPolicy.RETAIN
    """Retain keeps the snapshots when the query is deleted; Delete stops the workers (each
    writes a last snapshot) and then removes every snapshot object."""
    keep_last: int = Field(default=3, ge=1, le=1000)
    """How many snapshots each worker keeps; older ones are removed."""


class S3Credentials(ApiModel):
    """The S3 access key pair, from Secrets in the query's namespace."""

    access_key: SecretKeyRef
    """The Secret key holding the S3 access key id."""
    secret_key: SecretKeyRef
    """The Secret key holding the S3 secret access key."""


class SnapshotSettings(ApiModel):
    """Where and how often the workers snapshot their state (any S3 store)."""

    endpoint: str = Field(min_length=1, max_length=1024)
    """The S3 endpoint URL (http:// or https://), as the workers reach it."""
    bucket: str = Field(min_length=3, max_length=63, pattern=r"^[a-z0-9][a-z0-9.-]*[a-z0-9]$")
    """The bucket the snapshots are written to (it must exist)."""
    interval_seconds: int = Field(default=30, ge=1, le=86400)
    """Seconds between a worker's periodic snapshots."""
    credentials: S3Credentials
    """Where the S3 keys are."""
    retention: Retention = Retention()
    """How many snapshots are kept, and what deleting the query does with them."""


class AutoscalerMode(StrEnum):
    """act rescales by Migrations; recommend only writes the decision to status."""

    ACT = "act"
    RECOMMEND = "recommend"


class AutoscalerSpec(ApiModel):
    """DS2-style autoscaling: the parallelism that keeps up with the input at the target
    utilization, from each instance's busy time and the topics' input rate."""

    model_config = ConfigDict(
        json_schema_extra={
            "x-kubernetes-validations": [
                cel(
                    "!has(self.maxParallelism) || self.minParallelism <= self.maxParallelism",
                    "autoscaler.minParallelism must not exceed autoscaler.maxParallelism: "
                    "lower the minimum or raise the maximum",
                    ".minParallelism",
                ),
                cel(
                    "self.targetUtilization > 0.0 && self.targetUtilization <= 1.0",
                    "autoscaler.targetUtilization is the busy fraction each instance aims at: "
                    "give a number above 0 and at most 1, such as 0.7",
                    ".targetUtilization",
                ),
            ]
        }
    )

    enabled: bool = False
    """Whether the operator observes the load and decides the parallelism."""
    mode: AutoscalerMode = AutoscalerMode.ACT
    """act rescales by Migrations; recommend only writes the decision to status."""
    min_parallelism: int = Field(default=1, ge=1, le=1024)
    """The fewest instances the autoscaler scales down to."""
    max_parallelism: int | None = Field(default=None, ge=1, le=1024)
    """The most instances the autoscaler scales up to (at most the partitions; the partition
    count when unset)."""
    target_utilization: float = 0.7
    """The fraction of time each instance should be busy processing, above 0 and at most 1."""
    lag_tolerance_seconds: int = Field(default=60, ge=1, le=86400)
    """Lag (seconds of input behind the log end) beyond this scales up at once, enough to drain
    it within this time."""
    metric_window_seconds: int = Field(default=30, ge=5, le=3600)
    """The window the busy time, processed records and input rate are averaged over."""
    stabilization_seconds: int = Field(default=60, ge=0, le=86400)
    """No decision for this long after a rescale (its metrics settle first)."""
    scale_down_delay_seconds: int = Field(default=300, ge=0, le=86400)
    """A lower parallelism must be recommended this long without a break before it is used."""
    protocol: Protocol = Protocol.AUTO
    """The protocol of the autoscaler's Migrations (auto lets the operator choose)."""


class StreamQuerySpec(ApiModel):
    """The desired query: its plan, its Kafka topics, how many worker pods run it, and where
    their snapshots go."""

    model_config = ConfigDict(
        json_schema_extra={
            "x-kubernetes-validations": [
                cel(
                    "self.sources.all(s, s.partitions == self.sources[0].partitions)",
                    "all sources must have the same number of partitions "
                    "(inputs are co-partitioned by key)",
                    ".sources",
                ),
                cel(
                    "self.sources.all(s, self.parallelism <= s.partitions)",
                    "parallelism must not exceed the sources' partition count: "
                    "lower spec.parallelism or give the topics more partitions",
                    ".parallelism",
                ),
                cel(
                    "!has(self.autoscaler) || !has(self.autoscaler.maxParallelism) || "
                    "self.sources.all(s, self.autoscaler.maxParallelism <= s.partitions)",
                    "autoscaler.maxParallelism must not exceed the sources' partition count "
                    "(an instance owns at least one partition): lower it or give the topics "
                    "more partitions",
                    ".autoscaler.maxParallelism",
                ),
                cel(
                    "!has(self.autoscaler) || "
                    "self.sources.all(s, self.autoscaler.minParallelism <= s.partitions)",
                    "autoscaler.minParallelism must not exceed the sources' partition count: "
                    "lower it or give the topics more partitions",
                    ".autoscaler.minParallelism",
                ),
            ]
        }
    )

    plan: PlanSource
    """The plan the workers run: a built-in name or an inline plan object."""
    kafka: KafkaSettings
    """The Kafka cluster of the source and sink topics."""
    sources: list[SourceTopic] = Field(
        min_length=1,
        max_length=16,
        json_schema_extra={"x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"]},
    )
    """One topic per plan input, co-partitioned by key."""
    sinks: list[SinkTopic] = Field(
        min_length=1,
        max_length=16,
        json_schema_extra={"x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"]},
    )
    """The output topics; the results go to the first."""
    parallelism: int = Field(default=1, ge=1, le=1024)
    """How many instances (one worker pod each) share the partitions; change it with a
    Migration (or `kubectl scale`)."""
    image: str | None = Field(default=None, max_length=1024)
    """The worker image; the operator's default when unset."""
    resources: Resources = Resources()
    """Requests and limits of each worker pod."""
    snapshot: SnapshotSettings
    """Where and how often the workers snapshot their state."""
    control_token: SecretKeyRef
    """The Secret key holding the bearer token of the workers' control API."""
    autoscaler: AutoscalerSpec | None = None
    """Rescale by the load: bounds, target utilization, tolerated lag, delays, protocol."""


class QueryPhase(StrEnum):
    """Pending, Deploying, Running, Migrating, Degraded or Failed."""

    PENDING = "Pending"
    DEPLOYING = "Deploying"
    RUNNING = "Running"
    MIGRATING = "Migrating"
    DEGRADED = "Degraded"
    FAILED = "Failed"


class InstanceStatus(ApiModel):
    """One instance: its pod, the partitions it owns, and what its control API reported."""

    id: int = Field(ge=0)
    """The instance number."""
    pod: str
    """The instance's worker pod."""
    partitions: list[int]
    """The source partitions (key groups) the instance owns."""
    ready: bool = False
    """Whether the pod runs and its worker answered the control API."""
    throughput: float | None = None
    """Input records processed per second, as the worker reported it."""
    lag: int | None = None
    """Input records not yet read on the instance's partitions."""
    watermark: int | None = None
    """The instance's watermark (event time, ms): its windows ending at or below it fired."""


class SnapshotRef(ApiModel):
    """A snapshot object in S3."""

    key: str
    """The object key in the snapshot bucket."""
    time: datetime
    """When it was written."""
    bytes: int = Field(ge=0)
    """Its size."""


class LastMigration(ApiModel):
    """The query's most recent finished Migration."""

    name: str
    """The Migration's name."""
    phase: str
    """How it ended: Succeeded, Failed or RolledBack."""
    protocol: str | None = None
    """The protocol it ran (the one `auto` chose, if it chose)."""
    verified: bool | None = None
    """With spec.verify: whether the output equalled the reference run exactly; unset
    without verification."""
    finished_at: datetime | None = None
    """When it ended."""


class AutoscalerDecision(ApiModel):
    """One decision of the autoscaler that changed (or, in recommend mode, recommended to
    change) the parallelism."""

    time: datetime
    """When it was decided."""
    action: str = Field(max_length=16)
    """scale-up or scale-down."""
    from_parallelism: int = Field(ge=0)
    """The parallelism it was decided at."""
    to_parallelism: int = Field(ge=1)
    """The parallelism it chose."""
    reason: str = Field(max_length=1024)
    """Why: the input rate, lag and true processing rate it saw."""
    migration: str | None = None
    """The Migration it created (none in recommend mode)."""


class PendingScaleDown(ApiModel):
    """A scale-down waiting out the scale-down delay."""

    since: datetime
    """Since when lower parallelisms were recommended without a break."""
    parallelism: int = Field(ge=1)
    """The highest of them: the one used when the delay is over."""


class AutoscalerStatus(ApiModel):
    """What the autoscaler saw and decided last, and its recent decisions."""

    recommended_parallelism: int | None = Field(default=None, ge=1)
    """The parallelism the load needs now, within the bounds."""
    action: str | None = Field(default=None, max_length=16)
    """The last decision: hold, scale-up or scale-down."""
    reason: str | None = Field(default=None, max_length=1024)
    """Why it was decided so."""
    last_decision_time: datetime | None = None
    """When the last decision was made."""
    input_rate: float | None = None
    """Input records per second over the metric window, over all partitions."""
    true_rate: float | None = None
    """Records one instance processes per second it is busy (DS2's true processing rate)."""
    loaded_true_rate: float | None = None
    """The true rate the decisions use below saturation: the one measured at the busiest load
    seen (a poll's fixed cost weighs on few records, so light load understates the rate), or
    last measured saturated (a growing backlog, or every instance at least 90% busy)."""
    loaded_busy_ratio: float | None = None
    """The instances' mean busy fraction when `loadedTrueRate` was measured (1: saturated)."""
    lag_seconds: float | None = None
    """How far behind the log end the query reads, in seconds of input."""
    pending_scale_down: PendingScaleDown | None = None
    """A scale-down waiting out its delay."""
    last_rescale_time: datetime | None = None
    """When the autoscaler's last Migration finished (the stabilization window starts then)."""
    history: list[AutoscalerDecision] = Field(default_factory=list, max_length=10)
    """The most recent rescaling decisions, newest last (at most 10)."""


class StreamQueryStatus(ApiModel):
    """What the operator observed of the query's pods and workers."""

    phase: QueryPhase = QueryPhase.PENDING
    """Pending, Deploying, Running, Migrating, Degraded or Failed."""
    message: str | None = None
    """What the phase means now: what runs, what is awaited, or what to fix."""
    conditions: list[Condition] = Field(
        default_factory=list,
        json_schema_extra={"x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["type"]},
    )
    """Ready, Progressing and Degraded, with their reasons."""
    observed_generation: int | None = None
    """The spec generation the status reflects."""
    epoch: int = Field(default=0, ge=0)
    """The placement's generation: each migration's target pods are the next epoch."""
    plan: PlanSource | None = None
    """The plan the running instances execute (a plan-changing Migration replaces it)."""
    replicas: int = Field(default=0, ge=0)
    """Instances whose pods run and report (the scale subresource's replicas)."""
    ready_instances: str | None = None
    """Instances ready out of those placed, as `ready/desired`."""
    selector: str | None = None
    """The label selector of the worker pods (for the scale subresource)."""
    instances: list[InstanceStatus] = Field(default_factory=list)
    """Each instance, its pod and partitions, and what its worker reported."""
    throughput: float | None = None
    """Input records per second over all instances."""
    lag: int | None = None
    """Input records not yet read, over all instances."""
    watermark: int | None = None
    """The query's watermark (event time, ms): the smallest instance watermark; the output
    is complete up to it."""
    watermark_lag_seconds: int | None = None
    """Wall-clock time minus the watermark, in whole seconds: how far the complete output
    trails now, when the input's event time is wall-clock time."""
    last_snapshot: SnapshotRef | None = None
    """The newest snapshot any instance wrote."""
    active_migration: str | None = None
    """The Migration now moving or rescaling the query, if any."""
    last_migration: LastMigration | None = None
    """The most recent Migration that finished, how it ended, and whether it was verified."""
    autoscaler: AutoscalerStatus | None = None
    """With spec.autoscaler enabled: the recommendation, its reason, and recent decisions."""
