"""The StreamQuery status recorder: pure functions from what was observed to the status patch.

Conditions follow Kubernetes conventions: `lastTransitionTime` changes only when a condition's
status flips. Phase and conditions agree: Running ⇔ Ready, Migrating ⇔ Progressing, Degraded ⇔
Degraded. Aggregates sum throughput and lag over the instances and take the minimum watermark
(the query's output is complete up to the slowest instance); `readyInstances` says how many of
the placed instances run and report (`ready/desired`, the Instances column), and
`watermarkLagSeconds` how far that watermark trails the wall clock. Each dependency checked
(`dependencies`: Kafka and its topics, the snapshot store, the snapshots' age) is a condition of
its own; a failing one makes the query Degraded (its phase too, unless a migration runs) with
the dependency's reason and message.
"""

from collections.abc import Sequence
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
from streamshift_operator.streamquery.dependencies import Finding
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
    previous: list[dict[str, Any]],
    now: datetime,
    reason: str,
    message: str,
    findings: Sequence[Finding] = (),
) -> dict[str, Any]:
    """The status patch of a query that cannot run until the user fixes something, with the
    conditions of its dependencies as found."""
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
                *map(_condition, findings),
            ],
        ),
    }


def _condition(finding: Finding) -> tuple[str, ConditionStatus, str, str]:
    return finding.condition, T if finding.ok else F, finding.reason, finding.message


def observed(
    current: StreamQueryStatus,
    view: QueryView,
    query: str,
    now: datetime,
    previous: list[dict[str, Any]],
    findings: Sequence[Finding] = (),
) -> dict[str, Any]:
    """The status patch from one observation of the query's pods and workers, and of its
    dependencies (`findings`): one failing makes the query Degraded, with its reason."""
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
    failing = [f for f in findings if not f.ok]
    if failing:
        why = "; ".join(f.message for f in failing)
        updates.append(("Degraded", T, failing[0].reason, why))
        if current.active_migration is None:
            phase = QueryPhase.DEGRADED
    else:
        updates.append(("Degraded", F, "Healthy", "no problem found"))
    updates += map(_condition, findings)
    patch.update(phase=phase.value, message=why, conditions=conditions(previous, now, updates))
    return patch
