"""Observe a StreamQuery's actual state: its worker pods and what their control APIs report.

`observe` reads; `pod_view` is the pure reduction of a Pod object to what the decisions need.
Nothing here writes, so a timer may call it as often as it likes.
"""

import asyncio
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from streamshift_operator.clients.control_api import ControlClient, WorkerReport
from streamshift_operator.clients.kube import Kube
from streamshift_operator.resources.names import LABEL_EPOCH, LABEL_INSTANCE, selector_labels


@dataclass(frozen=True)
class PodView:
    """One worker pod as the API server shows it."""

    name: str
    epoch: int
    instance: int
    phase: str
    ready: bool
    ip: str | None
    restarts: int
    deleting: bool
    ready_since: datetime | None = None  # when its Ready condition last changed


@dataclass(frozen=True)
class QueryView:
    """All worker pods of a query, by name, and the reports of those that answered."""

    pods: dict[str, PodView]
    reports: dict[str, WorkerReport]

    def running(self, name: str) -> bool:
        """The pod is Running, not going, and its worker answers `/v1/status`. The worker's
        loop serves that call, and the loop runs only once the worker is ready, so the answer
        says as much as the Ready condition, which the readiness probe sets up to a probe
        period (1 s) later."""
        pod = self.pods.get(name)
        return pod is not None and not pod.deleting and name in self.reports


def pod_view(pod: Any) -> PodView:
    """Reduce a V1Pod to the fields the operator decides on."""
    labels = pod.metadata.labels or {}
    status = pod.status
    conditions = (status.conditions or []) if status is not None else []
    ready = [c for c in conditions if c.type == "Ready"]
    containers = (status.container_statuses or []) if status is not None else []
    return PodView(
        name=pod.metadata.name,
        epoch=int(labels.get(LABEL_EPOCH, "0")),
        instance=int(labels.get(LABEL_INSTANCE, "0")),
        phase=(status.phase if status is not None else None) or "Pending",
        ready=any(c.status == "True" for c in ready),
        ip=status.pod_ip if status is not None else None,
        restarts=sum(c.restart_count or 0 for c in containers),
        deleting=pod.metadata.deletion_timestamp is not None,
        ready_since=ready[0].last_transition_time if ready else None,
    )


async def observe(kube: Kube, control: ControlClient, namespace: str, query: str) -> QueryView:
    """List the query's pods and ask every pod with an address for its status, concurrently."""
    pods = {
        view.name: view
        for view in map(pod_view, await kube.pods(namespace, selector_labels(query)))
    }
    asking = [view for view in pods.values() if view.ip and view.phase == "Running"]
    answers = await asyncio.gather(*(control.status(view.ip or "") for view in asking))
    reports = {
        view.name: report
        for view, report in zip(asking, answers, strict=True)
        if report is not None
    }
    return QueryView(pods=pods, reports=reports)
