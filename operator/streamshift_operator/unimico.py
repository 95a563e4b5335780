"""UniMiCo (seed 000) driven through the workers' control API (docs/control-api.openapi.yaml).

1. Each target `begin`s with `protocol: unimico`: it reads its partitions from the log end and
   probes the first event time on each; its `/v1/status` shows `handoff.ts_start` once probed.
2. `ts_start` is the maximum over the targets (a later start only makes the origins do more).
   Each origin gets `handoff` with it and answers its activation `A`; each target `activate`s
   with the `A` of the one origin its partitions come from (admission refuses a target that
   would draw from several origins).
3. Once an origin's status shows `handoff.done` (it committed its last result before `A` and
   released the partitions), its targets get `release-output`: their held results become
   visible after the origin's, so per-key order holds for a `read_committed` reader.
Every call is keyed by the migration's name, so a repeated tick repeats nothing.
"""

from typing import Any

from streamshift_operator.control import ControlError
from streamshift_operator.run import Run


async def begin_targets(run: Run) -> None:
    for pod, parts in run.targets():
        await run.role(pod, "begin", parts, protocol="unimico")


def _handoff(run: Run, pod: str) -> dict[str, Any] | None:
    report = run.view.reports.get(pod)
    return None if report is None else report.handoff


def _start(run: Run) -> int | None:
    starts = [(_handoff(run, pod) or {}).get("ts_start") for pod, _ in run.targets()]
    if not starts or None in starts:
        return None
    return max(int(s) for s in starts if s is not None)


async def collect_start(run: Run) -> bool:
    """Every target has probed its first event times (needs input flowing)."""
    return _start(run) is not None


def _origin_of(run: Run, partitions: list[int]) -> str:
    owners = {pod for pod, parts in run.origin() if set(parts) & set(partitions)}
    if len(owners) != 1:
        raise ControlError(f"partitions {partitions} come from origins {sorted(owners)}", 409)
    return owners.pop()


async def drain_origin(run: Run) -> bool:
    """Hand off at each origin's activation; release the targets' output once it is done."""
    start = _start(run)
    if start is None:
        raise ControlError("the targets' ts_start is gone: a target restarted", 409)
    activation = {}
    for pod, parts in run.origin():
        answer = await run.role(pod, "handoff", parts, ts_start=start)
        activation[pod] = int(answer["activation"])
    for pod, parts in run.targets():
        await run.role(pod, "activate", None, activation=activation[_origin_of(run, parts)])
    drained = {pod for pod, _ in run.origin() if (_handoff(run, pod) or {}).get("done")}
    released = 0
    for pod, parts in run.targets():
        if _origin_of(run, parts) in drained:
            await run.role(pod, "release-output", None)
            released += 1
    return released == len(run.status.target_instances)
