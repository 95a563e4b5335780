"""The status a pod reports, built from what the node agent knows about its one process."""

from __future__ import annotations

from dataclasses import dataclass

from streamshift_dev.ipam import NODE_IP
from streamshift_dev.kube import Obj, get


@dataclass
class ContainerView:
    """What is known about the pod's (first) container at one moment."""

    name: str
    image: str
    restart_count: int = 0
    running_since: str = ""  # startedAt while the process runs
    waiting: tuple[str, str] | None = None  # (reason, message)
    terminated: Obj | None = None  # the state of the last run, while not restarted
    last_terminated: Obj | None = None
    ready: bool = False
    pid: int = 0


def container_status(c: ContainerView) -> Obj:
    """The containerStatuses entry for C."""
    if c.running_since:
        state: Obj = {"running": {"startedAt": c.running_since}}
    elif c.terminated is not None:
        state = {"terminated": c.terminated}
    else:
        reason, message = c.waiting or ("ContainerCreating", "")
        state = {"waiting": {"reason": reason, "message": message}}
    return {
        "name": c.name,
        "image": c.image,
        "imageID": "",
        "containerID": f"process://{c.pid}" if c.pid else None,
        "ready": c.ready,
        "started": bool(c.running_since),
        "restartCount": c.restart_count,
        "state": state,
        "lastState": {"terminated": c.last_terminated} if c.last_terminated else {},
    }


def condition(kind: str, ok: bool, since: str, reason: str = "") -> Obj:
    """One pod condition."""
    cond: Obj = {"type": kind, "status": "True" if ok else "False", "lastTransitionTime": since}
    if reason:
        cond["reason"] = reason
    return cond


def pod_status(pod: Obj, phase: str, ip: str, start_time: str, c: ContainerView, now: str) -> Obj:
    """The pod's whole status (sent as a merge patch: lists are replaced, not merged). A
    condition's `lastTransitionTime` is when its status last changed (`now` if it changes in
    this report), the pod's start for its first report."""
    old = {x.get("type"): x for x in get(pod, "status", "conditions", default=[])}

    def cond(kind: str, ok: bool, reason: str = "") -> Obj:
        prev = old.get(kind) or {}
        same = prev.get("status") == ("True" if ok else "False")
        since = prev.get("lastTransitionTime") if same else (now if prev else start_time)
        return condition(kind, ok, since or start_time, "" if ok else reason)

    terminal = phase in ("Succeeded", "Failed")
    reason = "PodCompleted" if terminal else "ContainersNotReady"
    ready = c.ready and not terminal
    return {
        "phase": phase,
        "hostIP": NODE_IP,
        "hostIPs": [{"ip": NODE_IP}],
        "podIP": ip,
        "podIPs": [{"ip": ip}],
        "startTime": start_time,
        "conditions": [
            cond("PodScheduled", True),
            cond("Initialized", True),
            cond("ContainersReady", ready, reason),
            cond("Ready", ready, reason),
        ],
        "containerStatuses": [container_status(c)],
    }
