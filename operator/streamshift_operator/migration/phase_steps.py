"""Perform a Migration phase's actions (phase_machine.py's `Action`s) against pods and workers.

Each step is idempotent and reports whether it is complete: pods are created if missing and
deleted if present, and worker role calls are keyed by the migration's name, so a worker answers
a repeated call with its first answer. Steps run in the phase's order and stop at the first one
that is not complete yet; the next tick (or a restarted operator) repeats them. A worker's
refusal (an HTTP 4xx) is a failure, which the machine turns into a rollback; an unreachable
worker is only "not yet", bounded by the phase's timeout.
"""

from collections.abc import Awaitable, Callable

from streamshift_operator.clients.control_api import ControlError
from streamshift_operator.migration.lost_pods import lost_while_starting
from streamshift_operator.migration.phase_machine import Action
from streamshift_operator.migration.protocols import moving_state, parallel_track, unimico
from streamshift_operator.migration.run import Run
from streamshift_operator.models.migration import Protocol
from streamshift_operator.resources.names import pod_name
from streamshift_operator.resources.pods import build_pod
from streamshift_operator.streamquery import act
from streamshift_operator.streamquery.decide import missing_pods


async def drain_origin(run: Run) -> bool:
    """The origin finishes what it owes; then the targets' held output is released."""
    if run.status.protocol is Protocol.PARALLEL_TRACK:
        return await parallel_track.drain_origin(run)
    return await unimico.drain_origin(run)


async def perform(run: Run, actions: tuple[Action, ...]) -> bool:
    """Run the actions in order; True when every one is complete. Raises `ControlError`."""
    for action in actions:
        step = STEPS.get(action)
        if step is None:
            raise ControlError(f"the worker runtime offers no role for step {action}", 501)
        if not await step(run):
            return False
    return True


async def start_targets(run: Run) -> bool:
    """Target pods (held until `begin`) exist and answer."""
    epoch = run.status.target_epoch or 0
    await act.plan_config(run.ctx.kube, run.query, run.plan)
    names = [name for name, _ in run.targets()]
    lost = lost_while_starting(names, run.status.target_pods_created, run.view.pods)
    if lost:
        run.notes.append(f"target pod {', '.join(lost)} lost while starting: created again")
    for instance in run.status.target_instances:
        pod = build_pod(
            run.query,
            run.spec,
            run.plan,
            epoch,
            instance.id,
            instance.partitions,
            run.ctx.image,
            hold=True,
        )
        await run.ctx.kube.ensure(pod)
    run.status.target_pods_created = names
    return all(run.view.running(name) for name in names)


async def begin_roles(run: Run) -> bool:
    """UniMiCo targets begin reading from the log end; state-transfer, moving-state and
    savepoint-restart origins take their role with the pause."""
    if run.status.protocol is Protocol.UNIMICO:
        await unimico.begin_targets(run)
    return True


async def pause_origin(run: Run) -> bool:
    """Every origin pod pauses its partitions at the current positions (the markers); an origin
    pod lost before the hand-over fails the step (the machine rolls back: it recovers)."""
    lost = [
        pod for pod, _ in run.origin() if pod not in run.view.pods or run.view.pods[pod].deleting
    ]
    if lost:
        raise ControlError(f"origin pod(s) {', '.join(lost)} lost before the hand-over", 410)
    answers = [await run.role(pod, "pause", parts) for pod, parts in run.origin()]
    run.learned["markers"] = sum(sum(a["positions"].values()) for a in answers)
    return all(a["paused"] for a in answers)


async def snapshot_origin(run: Run) -> bool:
    """Pause (if not yet), snapshot the moving partitions, release them; learn the bytes.
    Done for good once the bytes are in status: the origin may be gone by the next tick."""
    if run.status.cost.state_bytes_moved is not None:
        return True
    if not await pause_origin(run):
        return False
    covered = moved = 0
    for pod, parts in run.origin():
        manifest = await run.role(pod, "snapshot", parts)
        await run.role(pod, "release", parts)
        moved += int(manifest["size"])
        covered += sum(int(entry[2]) for entry in manifest["covered"])
    run.learned["state_bytes"] = moved
    run.learned["twice"] = max(0, run.learned["markers"] - covered)
    return True


async def delete_pods(run: Run, epoch: int | None) -> bool:
    for name in run.pods(epoch):
        await run.ctx.kube.delete_pod(run.query.namespace, name)
    return not run.pods(epoch)


async def stop_origin(run: Run) -> bool:
    return await delete_pods(run, run.status.origin_epoch)


async def retire_origin(run: Run) -> bool:
    """After the hand-over the origin pods own nothing: their deletion asked for is enough (a
    pod's grace period is no part of the migration; the query's reconciler sees it go), and
    `delete_pod` returns only once the API server accepted it (or the pod is gone). A target
    pod lost meanwhile runs the query's placement now: it is created again (recovering its
    partitions from their snapshots and the committed offsets), as the query's reconciler
    would once the migration ended, so Finalizing does not wait on it until its timeout."""
    for name in run.pods(run.status.origin_epoch):
        await run.ctx.kube.delete_pod(run.query.namespace, name)
    if run.placed.epoch == run.status.target_epoch:  # the hand-over is recorded
        lost = missing_pods(run.query.name, run.placed, run.view)
        if lost:
            await act.deploy(run.ctx.kube, run.query, run.spec, run.placed, lost, run.ctx.image)
            names = ", ".join(pod_name(run.query.name, run.placed.epoch, i) for i in lost)
            run.notes.append(f"target pod {names} lost after the hand-over: created again")
    return True


async def restore_target(run: Run) -> bool:
    """Each target adopts its partitions: restores their snapshots, replays, runs live."""
    for pod, parts in run.targets():
        await run.role(pod, "begin", parts)
    return True


async def resume_origin(run: Run) -> bool:
    """Origin pods that paused, released or split their output with a target (or are going)
    are replaced; the new ones recover their partitions from snapshots and the committed
    offsets, and after a split from what the output holds (the workers' `published`): the
    targets are gone by then (this step follows their deletion), so the output holds all it
    will of theirs."""
    healthy = True
    for pod, parts in run.origin():
        view = run.view.pods.get(pod)
        report = run.view.reports.get(pod)
        fine = report is not None and report.phase in ("running", "replaying")
        split = report is not None and (report.role(run.name) or {}).get("splitting_output")
        if fine and not split and report is not None and sorted(report.partitions) == parts:
            continue
        healthy = False
        if view is not None and (view.deleting or report is not None):
            await run.ctx.kube.delete_pod(run.query.namespace, pod)
    missing = [
        i.id
        for i in run.placed.instances
        if pod_name(run.query.name, run.placed.epoch, i.id) not in run.view.pods
    ]
    await act.deploy(run.ctx.kube, run.query, run.spec, run.placed, missing, run.ctx.image)
    return healthy


STEPS: dict[Action, Callable[[Run], Awaitable[bool]]] = {
    Action.START_TARGET_PODS: start_targets,
    Action.BEGIN_ROLES: begin_roles,
    Action.PAUSE_AT_MARKER: pause_origin,
    Action.PAUSE_ORIGIN: pause_origin,
    Action.MOVE_MATCHED_STATE: moving_state.move_states,
    Action.RECOMPUTE_UNMATCHED: moving_state.recompute,
    Action.SNAPSHOT_ORIGIN: snapshot_origin,
    Action.STOP_ORIGIN: stop_origin,
    Action.RESTORE_TARGET: restore_target,
    Action.DELETE_ORIGIN_PODS: retire_origin,
    Action.DELETE_TARGET_PODS: lambda run: delete_pods(run, run.status.target_epoch),
    Action.RESUME_ORIGIN: resume_origin,
    Action.COLLECT_START_TIMESTAMP: unimico.collect_start,
    Action.DRAIN_ORIGIN: drain_origin,
    Action.RUN_TARGET_FROM_SPLIT: parallel_track.run_targets_from_split,
}
