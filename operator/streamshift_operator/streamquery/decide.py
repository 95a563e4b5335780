"""Pure decisions of StreamQuery reconciliation: placement, pods to create, follow-up Migrations.

The placement (epoch, instances with partitions, plan) lives in status, not in the spec: the
spec says what the user wants, the status what runs. A new query is placed at epoch 0 from its
spec; afterwards only a Migration's hand-over changes the placement. A spec that differs from
what runs becomes one Migration per kind of change, named after the generation, so a retried
handler creates nothing twice.
"""

from typing import Any

from streamshift_operator.models.common import API_VERSION
from streamshift_operator.models.migration import TERMINAL, Phase
from streamshift_operator.models.streamquery import StreamQuerySpec, StreamQueryStatus
from streamshift_operator.resources.names import pod_name
from streamshift_operator.resources.partition_assignment import assign
from streamshift_operator.streamquery.observe import QueryView
from streamshift_operator.streamquery.spec_diff import DiffType


def initial_status(spec: StreamQuerySpec) -> StreamQueryStatus:
    """Where a new query runs: epoch 0, the spec's parallelism, the spec's plan."""
    ranges = assign(spec.sources[0].partitions, spec.parallelism)
    return StreamQueryStatus.model_validate(
        {
            "epoch": 0,
            "plan": spec.plan.wire(),
            "instances": [
                {"id": i, "pod": "", "partitions": partitions}
                for i, partitions in enumerate(ranges)
            ],
        }
    )


def missing_pods(query: str, status: StreamQueryStatus, view: QueryView) -> list[int]:
    """Instances of the current placement without a live pod (never created, or deleted)."""
    return [
        instance.id
        for instance in status.instances
        if (pod := view.pods.get(pod_name(query, status.epoch, instance.id))) is None
        or pod.deleting
    ]


def live(migration: dict[str, Any]) -> bool:
    return Phase(migration.get("status", {}).get("phase", Phase.QUEUED)) not in TERMINAL


def follow_ups(
    query: str,
    generation: int,
    diff: DiffType,
    spec: StreamQuerySpec,
    status: StreamQueryStatus,
    migrations: list[dict[str, Any]],
) -> list[dict[str, Any]]:
    """The Migrations a spec change needs, none while a Migration of the query is live.

    Level-based for plan and parallelism (the spec against what runs, so a Migration the user
    made, whose hand-over writes its target into the spec, needs no follow-up); a `RESTART`
    change of the spec moves every running instance to new pods by savepoint-restart.
    """
    if any(m["spec"]["queryRef"]["name"] == query and live(m) for m in migrations):
        return []
    targets: list[tuple[str, dict[str, Any], str]] = []
    if diff is DiffType.RESTART:
        running = [instance.id for instance in status.instances]
        targets.append(("restart", {"moveInstances": running}, "savepoint-restart"))
    if status.plan is not None and spec.plan.wire() != status.plan.wire():
        targets.append(("plan", {"plan": spec.plan.wire()}, "auto"))
    if status.instances and spec.parallelism != len(status.instances):
        targets.append(("scale", {"parallelism": spec.parallelism}, "auto"))
    return [
        {
            "apiVersion": API_VERSION,
            "kind": "Migration",
            "metadata": {
                "name": f"{query}-g{generation}-{suffix}",
                "labels": {"streamshift.io/query": query, "streamshift.io/cause": "spec-change"},
            },
            "spec": {"queryRef": {"name": query}, "protocol": protocol, "target": target},
        }
        for suffix, target, protocol in targets
    ]
