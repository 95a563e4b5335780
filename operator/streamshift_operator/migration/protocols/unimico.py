"""UniMiCo (seed 000 (Pham et al.), 3.2) driven through the workers' control API
(docs/control-api.openapi.yaml): the coordinator's part of the roles in
`streamshift_engine.migration.unimico_roles`.

1. Each target `begin`s: it reads its partitions from the log end and probes the first event
   times; its role's report shows `ts_start` once probed.
2. `ts_start` is the maximum over the targets (`unimico_roles.start_of`). Each origin gets
   `handoff` with it and answers its activation `A` (or, for a `ROWS` window, its boundary once
   its count before it is final: until then it answers `ready: false` and is asked again);
   each target `activate`s with the answer of the one origin its partitions come from
   (admission refuses a target that would draw from several origins).
3. Once an origin's role for THIS migration is done (it committed its last result before `A` and
   handed the partitions over), its targets get `release-output` with the offsets the origin
   handed over at: their held results become visible after the origin's, and their held dead
   letters of records the origin never read go out.
Every call is keyed by the migration's name, so a repeated tick repeats nothing.
"""

from typing import Any

from streamshift_engine.migration.unimico_roles import start_of

from streamshift_operator.clients.control_api import ControlError
from streamshift_operator.migration.run import Run

# What a target activates with: the time split `A`, or a ROWS boundary with its discard.
SPLIT = ("activation", "boundary", "discard", "history_complete")


async def begin_targets(run: Run) -> None:
    for pod, parts in run.targets():
        await run.role(pod, "begin", parts)


def role_report(run: Run, pod: str) -> dict[str, Any]:
    """`pod`'s part in this migration, as its last status showed it (empty when none yet)."""
    report = run.view.reports.get(pod)
    return {} if report is None else report.role(run.name) or {}


def _start(run: Run) -> int | None:
    return start_of([role_report(run, pod).get("ts_start") for pod, _ in run.targets()])


async def collect_start(run: Run) -> bool:
    """Every target has probed its first event times (needs input flowing)."""
    return _start(run) is not None


def origin_of(run: Run, partitions: list[int]) -> str:
    owners = {pod for pod, parts in run.origin() if set(parts) & set(partitions)}
    if len(owners) != 1:
        raise ControlError(f"partitions {partitions} come from origins {sorted(owners)}", 409)
    return owners.pop()


async def drain_origin(run: Run) -> bool:
    """Call `handoff` at each origin's split; release a target's output once its origin is done."""
    start = _start(run)
    if start is None:
        raise ControlError("the targets' ts_start is gone: a target restarted", 409)
    answers = {}
    for pod, parts in run.origin():
        answer = await run.role(pod, "handoff", parts, ts_start=start)
        if not answer["ready"]:
            return False  # a ROWS window still counts the tuples before its boundary
        answers[pod] = answer
    for pod, parts in run.targets():
        answer = answers[origin_of(run, parts)]
        split = {k: answer[k] for k in SPLIT if k in answer}
        await run.role(pod, "activate", None, **split)
    return await release_done_targets(run)


async def release_done_targets(run: Run) -> bool:
    """Release the held output of each target whose origin is done (at the hand-over positions
    it reports); True once every target's is released."""
    released = 0
    for pod, parts in run.targets():
        origin = role_report(run, origin_of(run, parts))
        if origin.get("done"):
            at = origin.get("handed_over_at") or {}
            await run.role(pod, "release-output", None, handed_over_at=at)
            released += 1
    return released == len(run.status.target_instances)
