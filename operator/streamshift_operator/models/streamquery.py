"""The StreamQuery resource (short name `sq`): a continuous query and where it runs.

The spec names the plan (a built-in such as `nexmark-q5`, or an inline plan object), the Kafka
topics it reads and writes, its parallelism (one worker pod per instance), resources, snapshot
settings and the Secret holding the control-API token. The status is what the operator
observed: phase, conditions, instances with their partitions, throughput, lag, watermark and
the last snapshot. `status.replicas` and `status.selector` back the `scale` subresource.
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
    inline: dict[str, Any] | None = None


class KafkaSettings(ApiModel):
    bootstrap_servers: str = Field(min_length=1, max_length=1024)


class SourceTopic(ApiModel):
    """An input of the plan, read from a Kafka topic; inputs are co-partitioned by key."""

    name: str = Field(max_length=63, pattern=INPUT_NAME)
    topic: str = Field(max_length=249, pattern=TOPIC)
    partitions: int = Field(ge=1, le=1024)


class SinkTopic(ApiModel):
    """An output of the plan, written to a Kafka topic."""

    name: str = Field(max_length=63, pattern=INPUT_NAME)
    topic: str = Field(max_length=249, pattern=TOPIC)
    partitions: int = Field(default=1, ge=1, le=1024)


class ResourceList(ApiModel):
    cpu: str | None = Field(default=None, max_length=32, pattern=QUANTITY)
    memory: str | None = Field(default=None, max_length=32, pattern=QUANTITY)


class Resources(ApiModel):
    """Requests and limits of each worker pod."""

    requests: ResourceList = ResourceList(cpu="250m", memory="256Mi")
    limits: ResourceList = ResourceList(memory="1Gi")


class RetentionPolicy(StrEnum):
    RETAIN = "Retain"
    DELETE = "Delete"


class Retention(ApiModel):
    """What happens to snapshots: how many a worker keeps, and whether deletion removes them."""

    on_delete: RetentionPolicy = RetentionPolicy.RETAIN
    keep_last: int = Field(default=3, ge=1, le=1000)


class S3Credentials(ApiModel):
    access_key: SecretKeyRef
    secret_key: SecretKeyRef


class SnapshotSettings(ApiModel):
    """Where and how often the workers snapshot their state (any S3 store)."""

    endpoint: str = Field(min_length=1, max_length=1024)
    bucket: str = Field(min_length=3, max_length=63, pattern=r"^[a-z0-9][a-z0-9.-]*[a-z0-9]$")
    interval_seconds: int = Field(default=30, ge=1, le=86400)
    credentials: S3Credentials
    retention: Retention = Retention()


class StreamQuerySpec(ApiModel):
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
            ]
        }
    )

    plan: PlanSource
    kafka: KafkaSettings
    sources: list[SourceTopic] = Field(
        min_length=1,
        max_length=16,
        json_schema_extra={"x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"]},
    )
    sinks: list[SinkTopic] = Field(
        min_length=1,
        max_length=16,
        json_schema_extra={"x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"]},
    )
    parallelism: int = Field(default=1, ge=1, le=1024)
    image: str | None = Field(default=None, max_length=1024)
    resources: Resources = Resources()
    snapshot: SnapshotSettings
    control_token: SecretKeyRef


class QueryPhase(StrEnum):
    PENDING = "Pending"
    DEPLOYING = "Deploying"
    RUNNING = "Running"
    MIGRATING = "Migrating"
    DEGRADED = "Degraded"
    FAILED = "Failed"


class InstanceStatus(ApiModel):
    """One instance: its pod, the partitions it owns, and what its control API reported."""

    id: int = Field(ge=0)
    pod: str
    partitions: list[int]
    ready: bool = False
    throughput: float | None = None
    lag: int | None = None
    watermark: int | None = None


class SnapshotRef(ApiModel):
    key: str
    time: datetime
    bytes: int = Field(ge=0)


class StreamQueryStatus(ApiModel):
    phase: QueryPhase = QueryPhase.PENDING
    message: str | None = None
    conditions: list[Condition] = Field(
        default_factory=list,
        json_schema_extra={"x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["type"]},
    )
    observed_generation: int | None = None
    epoch: int = Field(default=0, ge=0)
    plan: PlanSource | None = None  # the plan the running instances execute
    replicas: int = Field(default=0, ge=0)
    selector: str | None = None
    instances: list[InstanceStatus] = Field(default_factory=list)
    throughput: float | None = None
    lag: int | None = None
    watermark: int | None = None
    last_snapshot: SnapshotRef | None = None
    active_migration: str | None = None
