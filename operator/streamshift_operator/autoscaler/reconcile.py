"""The autoscaler's step of a StreamQuery's reconcile pass: observe, decide, act.

Observe: the workers' load (`/v1/status` `load`, already read by the pass) and the input
partitions' end offsets (Kafka), into the query's metric window. Decide: the pure `decide`.
Act: record the decision in `status.autoscaler`; in `act` mode create the Migration (owned by
the query, the reason in an annotation and an Event) and decide nothing more while any
Migration of the query is live: the next decision waits for it to finish and for the
stabilization window after it.
"""

import asyncio
import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from confluent_kafka import KafkaException

from streamshift_operator import metrics
from streamshift_operator.autoscaler.decision import decide
from streamshift_operator.autoscaler.inputs import Policy
from streamshift_operator.autoscaler.offsets import end_offsets
from streamshift_operator.autoscaler.record import (
    loaded_of,
    migration_body,
    pending_of,
    status_patch,
    waiting_patch,
)
from streamshift_operator.autoscaler.window import Reading, Window
from streamshift_operator.clients import events
from streamshift_operator.clients.kube import MIGRATIONS, STREAM_QUERIES, Kube
from streamshift_operator.models.migration import TERMINAL, Phase
from streamshift_operator.models.streamquery import (
    AutoscalerMode,
    AutoscalerSpec,
    AutoscalerStatus,
    StreamQuerySpec,
    StreamQueryStatus,
)
from streamshift_operator.streamquery.plan_check import check_plan

WINDOWS: dict[str, Window] = {}
"""Each query's metric window (by uid), in this operator's memory."""
EndOffsets = Callable[[str, Iterable[tuple[str, int]]], dict[str, int]]


def policy(spec: AutoscalerSpec, partitions: int, keyed: bool = True) -> Policy:
    """The decision's policy from `spec.autoscaler` (no maximum: the partitions). A plan with
    global (not keyed) state runs on one instance only (`plan_check`): its maximum is 1, so the
    autoscaler never proposes a Migration the plan check refuses."""
    most = spec.max_parallelism or partitions
    return Policy(
        min_parallelism=spec.min_parallelism,
        max_parallelism=most if keyed else 1,
        target_utilization=spec.target_utilization,
        lag_tolerance_seconds=spec.lag_tolerance_seconds,
        stabilization_seconds=spec.stabilization_seconds,
        scale_down_delay_seconds=spec.scale_down_delay_seconds,
        recommend_only=spec.mode is AutoscalerMode.RECOMMEND,
    )


def live_migration(query: str, migrations: list[dict[str, Any]]) -> str | None:
    """The name of a Migration of `query` that has not ended, if any."""
    for migration in migrations:
        phase = Phase(migration.get("status", {}).get("phase", Phase.QUEUED))
        if migration["spec"]["queryRef"]["name"] == query and phase not in TERMINAL:
            return str(migration["metadata"]["name"])
    return None


async def _wait(
    kube: Kube,
    query: dict[str, Any],
    previous: AutoscalerStatus | None,
    reason: str,
    keep_pending: bool = True,
) -> None:
    """Record that no decision could be made, and why."""
    meta = query["metadata"]
    patch = {"autoscaler": waiting_patch(previous, reason, keep_pending)}
    await kube.patch_status(STREAM_QUERIES, meta["namespace"], meta["name"], patch)


def reading(at: float, loads: Mapping[str, Mapping[str, Any]], ends: Mapping[str, int]) -> Reading:
    """One reading from the workers' `load` reports (by pod) and the end offsets."""
    return Reading(
        at=at,
        instances={
            pod: (float(load["busy_seconds"]), int(load["processed"]))
            for pod, load in loads.items()
        },
        ends=ends,
        lag_records=sum(
            int(lag) for load in loads.values() for lag in load["lag_records"].values()
        ),
    )


async def autoscale(
    kube: Kube,
    query: dict[str, Any],
    spec: StreamQuerySpec,
    status: StreamQueryStatus,
    loads: Mapping[str, Mapping[str, Any]],
    ends_of: EndOffsets = end_offsets,
    clock: Callable[[], float] = time.time,
) -> None:
    """One autoscaler step for `query` (its API object) after the pass observed `status` and
    the workers' `loads` (by pod, those of the placement's instances that answered)."""
    uid, namespace, name = (query["metadata"][k] for k in ("uid", "namespace", "name"))
    settings = spec.autoscaler
    if settings is None or not settings.enabled:
        WINDOWS.pop(uid, None)
        return
    previous = status.autoscaler
    migrations = await kube.list(MIGRATIONS, namespace)
    live = live_migration(name, migrations)
    pods = {instance.pod for instance in status.instances}
    waiting = None
    if live is not None:
        waiting = f"waiting for Migration {live}"
    elif not pods or not pods <= set(loads):
        waiting = "waiting for every instance to report its load"
    if waiting is not None:
        WINDOWS.pop(uid, None)
        await _wait(kube, query, previous, waiting, keep_pending=False)
        return
    topics = [(source.topic, source.partitions) for source in spec.sources]
    try:
        ends = await asyncio.to_thread(ends_of, spec.kafka.bootstrap_servers, topics)
    except KafkaException as error:
        reason = f"the input topics' end offsets are unavailable: {error}"
        await _wait(kube, query, previous, reason)
        return
    window = WINDOWS.setdefault(uid, Window())
    window.add(
        reading(clock(), {pod: loads[pod] for pod in pods}, ends),
        settings.metric_window_seconds,
    )
    last = status.last_migration
    finished = None if last is None or last.finished_at is None else last.finished_at.timestamp()
    partitions = spec.sources[0].partitions
    obs = window.observation(settings.metric_window_seconds, partitions, finished)
    if obs is None:
        reason = f"collecting a {settings.metric_window_seconds}s metric window"
        await _wait(kube, query, previous, reason)
        return
    plan = check_plan(spec).plan
    keyed = plan is None or plan.keyed  # an invalid plan is the query's condition to report
    loaded = loaded_of(previous)
    decision = decide(obs, policy(settings, partitions, keyed), pending_of(previous), loaded)
    created = None
    if decision.act:
        taken = {str(m["metadata"]["name"]) for m in migrations}
        body = migration_body(query, status.epoch, decision, settings, taken, plan)
        if await kube.create(MIGRATIONS, namespace, body):
            created = body["metadata"]["name"]
            events.normal(
                query,
                "AutoscalerRescale",
                f"{decision.action.value} {obs.parallelism} -> {decision.parallelism}: "
                f"{decision.reason} (Migration {created})",
            )
        WINDOWS.pop(uid, None)
    metrics.record_decision(
        namespace,
        name,
        decision.action.value,
        decision.act,
        decision.parallelism,
        (obs.input_rate, decision.decided_rate, obs.lag_seconds),
    )
    patch = status_patch(previous, decision, obs, created)
    await kube.patch_status(STREAM_QUERIES, namespace, name, {"autoscaler": patch})
