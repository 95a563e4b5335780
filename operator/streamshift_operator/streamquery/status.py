"""The StreamQuery status recorder: pure functions from what was observed to the status patch.

Conditions follow Kubernetes conventions: `lastTransitionTime` changes only when a condition's
status flips. Phase and conditions agree: Running ⇔ Ready, Migrating ⇔ Progressing, Degraded ⇔
Degraded. Aggregates sum throughput and lag over the instances and take the minimum watermark
(the query's output is complete up to the slowest instance); `readyInstances` says how many of
the placed instances run and report (`ready/desired`, the Instances column), and
`watermarkLagSeconds` how far that watermark trails the wall clock.
"""

from datetime import datetime
from typing import Any

from streamshift_operator.models.common import Condition, ConditionStatus
from streamshift_operator.models.streamquery import (
    InstanceStatus,
    QueryPhase,
    SnapshotRef,
    StreamQueryStatus,
)
from streamshift_operator.resources.names import pod_name
from streamshift_operator.streamquery.observe import QueryView

T, F = ConditionStatus.TRUE, ConditionStatus.FALSE


def conditions(
    previous: list[dict[str, Any]],
    now: datetime,
    updates: list[tuple[str, ConditionStatus, str, str]],
) -> list[dict[str, Any]]:
    """Conditions `(type, status, reason, message)` replacing those of the same type."""
    old = {c["type"]: c for c in previous}
    result = {c["type"]: c for c in previous}
    for kind, status, reason, message in updates:
        before = old.get(kind)
        since = before["lastTransitionTime"] if before and before["status"] == status else now
        condition = Condition(
            type=kind, status=status, reason=reason, message=message, last_transition_time=since
        )
        result[kind] = condition.wire()
    return [result[kind] for kind in sorted(result)]


def degraded(
    previous: list[dict[str, Any]], now: datetime, reason: str, message: str
) -> dict[str, Any]:
    """The status patch of a query that cannot run until the user fixes something."""
    return {
        "phase": QueryPhase.DEGRADED.value,
        "message": message,
        "conditions": conditions(
            previous,
            now,
            [
                ("Ready", F, reason, message),
                ("Progressing", F, reason, message),
                ("Degraded", T, reason, message),
            ],
        ),
    }


def observed(
    current: StreamQueryStatus,
    view: QueryView,
    query: str,
    now: datetime,
    previous: list[dict[str, Any]],
) -> dict[str, Any]:
    """The status patch from one observation of the query's pods and workers."""
    instances = []
    for instance in current.instances:
        name = pod_name(query, current.epoch, instance.id)
        report = view.reports.get(name)
        instances.append(
            InstanceStatus(
                id=instance.id,
                pod=name,
                partitions=instance.partitions,
                ready=view.running(name),
                throughput=None if report is None else report.throughput,
                lag=None if report is None else report.lag,
                watermark=None if report is None else report.watermark,
            )
        )
    reports = [r for i in instances if (r := view.reports.get(i.pod)) is not None]
    watermarks = [r.watermark for r in reports if r.watermark is not None]
    snapshots = [r.last_snapshot for r in reports if r.last_snapshot is not None]
    latest = max(snapshots, key=lambda s: s.created, default=None)
    ready = bool(instances) and all(i.ready for i in instances)
    running = sum(1 for i in instances if i.ready)
    watermark = min(watermarks) if len(watermarks) == len(instances) and watermarks else None
    patch: dict[str, Any] = {
        "instances": [i.wire() for i in instances],
        "replicas": running,
        "readyInstances": f"{running}/{len(instances)}",
        "throughput": round(sum(r.throughput for r in reports), 1) if reports else None,
        "lag": sum(r.lag for r in reports) if reports else None,
        "watermark": watermark,
        "watermarkLagSeconds": None
        if watermark is None
        else round(now.timestamp() - watermark / 1000),
        "lastSnapshot": None
        if latest is None
        else SnapshotRef(key=latest.key, time=latest.created, bytes=latest.bytes).wire(),
    }
    waiting = [i.pod for i in instances if not i.ready]
    if current.active_migration is not None:
        phase, why = QueryPhase.MIGRATING, f"migration {current.active_migration} is running"
        updates = [("Progressing", T, "Migrating", why), ("Ready", F, "Migrating", why)]
    elif ready:
        phase, why = QueryPhase.RUNNING, f"all {len(instances)} instances running and reporting"
        updates = [("Ready", T, "InstancesReady", why), ("Progressing", F, "Stable", why)]
    else:
        phase = QueryPhase.DEPLOYING
        why = f"waiting for pods to run and report: {', '.join(waiting)}"
        updates = [("Ready", F, "InstancesNotReady", why), ("Progressing", T, "Deploying", why)]
    updates.append(("Degraded", F, "Healthy", "no problem found"))
    patch.update(phase=phase.value, message=why, conditions=conditions(previous, now, updates))
    return patch
