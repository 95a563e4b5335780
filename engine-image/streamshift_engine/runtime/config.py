"""Worker configuration from env (and optionally a YAML file named by STREAMSHIFT_CONFIG_FILE).

The env names are the operator's pod contract
(`streamshift_operator.resources.pods._env`). The plan comes
as text in STREAMSHIFT_PLAN (the ConfigMap's document: `{builtin: name}`, `{inline: {...}}` or a
plan object) or from the file STREAMSHIFT_PLAN_FILE. Every problem raises `ConfigError` naming
the setting to fix; env values override the file's. The worker runs the plan with its inputs
narrowed to the fields it reads (`projection`), and decodes its inputs with `schemas`: those
fields, the others as unread. STREAMSHIFT_ARENA_CACHE_MB (64 by default, 0 for none) bounds the
memory of freed Python object arenas the worker keeps for reuse (`runtime._arenas`).
STREAMSHIFT_MAX_RECORD_BYTES (1000000 by default, Kafka's own default record limit) bounds every
record the worker writes, key, value and headers: a dead letter whose original record is longer
goes out truncated, with its original size and coordinates in headers (`dead_letters`); keep it
at most the dead-letter topic's `max.message.bytes`. STREAMSHIFT_STALL_S (30 by default) is how
long the worker loop may go without fetching, or without a fetch returning input that waits,
before `/healthz` (the pod's liveness) fails (`liveness`).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import yaml

from streamshift_engine.events.wire import Schema
from streamshift_engine.plan import PlanError, builtin, parse_plan
from streamshift_engine.plan.model import Plan
from streamshift_engine.plan.parse import plan_document
from streamshift_engine.runtime.projection import input_schemas, projected
from streamshift_engine.runtime.settings import ConfigError as ConfigError
from streamshift_engine.runtime.settings import (
    Getter,
    Topic,
    natural,
    port,
    positive,
    settings_file,
    start,
    topics,
)
from streamshift_engine.runtime.settings import partitions as partitions_of

Format = Literal["json", "columnar"]
ARENA_CACHE_MB = 64  # default of STREAMSHIFT_ARENA_CACHE_MB (`streamshift_engine.runtime._arenas`)
MAX_RECORD_BYTES = "1000000"  # default of STREAMSHIFT_MAX_RECORD_BYTES (librdkafka's default)
MIN_RECORD_BYTES = 4096  # room for a dead letter's coordinates and reason


@dataclass(frozen=True)
class S3Settings:
    endpoint: str
    secure: bool
    bucket: str
    prefix: str
    access_key: str
    secret_key: str


@dataclass(frozen=True)
class WorkerConfig:
    """Everything one worker process needs to know."""

    query: str
    namespace: str
    instance: int
    epoch: int
    partitions: tuple[int, ...]
    plan: Plan
    schemas: Mapping[str, Schema]  # per input: the fields `plan` reads, the rest unread
    plan_version: str
    sources: tuple[Topic, ...]
    sinks: tuple[Topic, ...]
    dead_letter_topic: str
    kafka_bootstrap: str
    input_format: Format
    s3: S3Settings
    snapshot_interval_s: float
    snapshot_keep: int
    commit_interval_s: float  # between commits of input positions alone
    output_commit_interval_s: float  # between commits once there is output to make visible
    batch_size: int
    arena_cache_bytes: int  # freed pymalloc arenas kept for reuse (`_arenas.keep`)
    max_record_bytes: int  # the longest record written (dead letters are cut to it)
    stall_s: float  # the loop is not alive once it did not advance this long (`liveness`)
    control_host: str
    control_port: int
    control_token: str
    pod_name: str
    hold: bool = False

    @property
    def identity(self) -> dict[str, str]:
        """The labels of this worker's metrics: which query, instance and pod they measure."""
        return {
            "namespace": self.namespace,
            "query": self.query,
            "instance": str(self.instance),
            "pod": self.pod_name,
        }

    @property
    def writer(self) -> str:
        """This worker's identity in transactional ids and snapshot names."""
        return f"{self.namespace}.{self.query}.e{self.epoch}.i{self.instance}"

    @property
    def group(self) -> str:
        """The consumer group whose offsets record how far committed output reaches, per query
        (partitions move between instances, their committed offsets move with them)."""
        return f"streamshift.{self.namespace}.{self.query}"


def load(env: Mapping[str, str]) -> WorkerConfig:
    """The worker's configuration, or `ConfigError` naming the first bad setting."""
    values = {**settings_file(env), **env}
    get = Getter(values)
    plan, version = _plan(values)
    sources = get.parse("STREAMSHIFT_SOURCES", topics)
    missing = [spec.name for spec in plan.inputs if spec.name not in {s.name for s in sources}]
    if missing:
        raise ConfigError("STREAMSHIFT_SOURCES", f"no topic for plan input(s) {missing}")
    sinks = get.parse("STREAMSHIFT_SINKS", topics)
    if not sinks:
        raise ConfigError("STREAMSHIFT_SINKS", "at least one sink topic is needed")
    partitions = get.parse("STREAMSHIFT_PARTITIONS", partitions_of)
    too_high = [p for p in partitions if p >= sources[0].partitions]
    if too_high:
        raise ConfigError("STREAMSHIFT_PARTITIONS", f"{too_high} not below the topic partitions")
    input_format = get.text("STREAMSHIFT_INPUT_FORMAT", "json")
    if input_format not in ("json", "columnar"):
        raise ConfigError("STREAMSHIFT_INPUT_FORMAT", "must be json or columnar")
    endpoint = get.text("STREAMSHIFT_S3_ENDPOINT")
    arena_cache_mb = get.parse("STREAMSHIFT_ARENA_CACHE_MB", natural, str(ARENA_CACHE_MB))
    secure = endpoint.startswith("https://")
    return WorkerConfig(
        query=get.text("STREAMSHIFT_QUERY"),
        namespace=get.text("STREAMSHIFT_NAMESPACE", "default"),
        instance=get.parse("STREAMSHIFT_INSTANCE", natural),
        epoch=get.parse("STREAMSHIFT_EPOCH", natural, "0"),
        partitions=partitions,
        plan=projected(plan),
        schemas=input_schemas(plan),
        plan_version=version,
        sources=sources,
        sinks=sinks,
        dead_letter_topic=get.text("STREAMSHIFT_DEAD_LETTER_TOPIC", f"{sinks[0].topic}.dead"),
        kafka_bootstrap=get.text("STREAMSHIFT_KAFKA_BOOTSTRAP"),
        input_format="columnar" if input_format == "columnar" else "json",
        s3=S3Settings(
            endpoint=endpoint.removeprefix("https://").removeprefix("http://").rstrip("/"),
            secure=secure,
            bucket=get.text("STREAMSHIFT_S3_BUCKET"),
            prefix=get.text("STREAMSHIFT_S3_PREFIX", ""),
            access_key=get.text("STREAMSHIFT_S3_ACCESS_KEY"),
            secret_key=get.text("STREAMSHIFT_S3_SECRET_KEY"),
        ),
        snapshot_interval_s=get.parse("STREAMSHIFT_SNAPSHOT_INTERVAL_S", positive, "30"),
        snapshot_keep=get.parse("STREAMSHIFT_SNAPSHOT_KEEP", natural, "3") or 1,
        commit_interval_s=get.parse("STREAMSHIFT_COMMIT_INTERVAL_S", positive, "0.5"),
        output_commit_interval_s=get.parse("STREAMSHIFT_OUTPUT_COMMIT_INTERVAL_S", positive, "0.1"),
        batch_size=get.parse("STREAMSHIFT_BATCH_SIZE", natural, "5000") or 1,
        arena_cache_bytes=arena_cache_mb << 20,
        max_record_bytes=get.parse("STREAMSHIFT_MAX_RECORD_BYTES", record_bytes, MAX_RECORD_BYTES),
        stall_s=get.parse("STREAMSHIFT_STALL_S", positive, "30"),
        control_host=get.text("POD_IP", "127.0.0.1"),
        control_port=get.parse("STREAMSHIFT_CONTROL_PORT", port, "8080"),
        control_token=get.text("STREAMSHIFT_CONTROL_TOKEN"),
        pod_name=get.text("POD_NAME", "worker"),
        hold=get.parse("STREAMSHIFT_START", start, "run"),
    )


def _plan(values: Mapping[str, Any]) -> tuple[Plan, str]:
    setting = "STREAMSHIFT_PLAN" if values.get("STREAMSHIFT_PLAN") else "STREAMSHIFT_PLAN_FILE"
    try:
        if setting == "STREAMSHIFT_PLAN":
            text = str(values[setting])
        else:
            text = Path(Getter(values).text(setting)).read_text()
        document = yaml.safe_load(text)
    except (OSError, yaml.YAMLError) as error:
        raise ConfigError(setting, str(error)) from None
    if not isinstance(document, dict):
        raise ConfigError(setting, "the plan must be a mapping")
    try:
        if "builtin" in document:
            plan = builtin(str(document["builtin"]))
        else:
            plan = parse_plan(document.get("inline", document))
    except (PlanError, KeyError) as error:
        raise ConfigError(setting, str(error)) from None
    return plan, plan_version(plan)


def plan_version(plan: Plan) -> str:
    """The plan's computation (its inputs, operators and output; the name aside, as
    `capability.same_computation` compares plans), hashed: a snapshot restores only into a plan
    computing the same thing, whether it was written built-in, inline, or under another name."""
    computation = {k: v for k, v in plan_document(plan).items() if k != "name"}
    return hashlib.sha256(json.dumps(computation, sort_keys=True).encode()).hexdigest()[:16]


def record_bytes(raw: str) -> int:
    """A record size limit: room at least for a dead letter's coordinates and reason."""
    value = int(raw)
    if value < MIN_RECORD_BYTES:
        raise ValueError(f"must be at least {MIN_RECORD_BYTES}")
    return value
