"""Faults in each phase of a Migration, on a query whose input keeps arriving: its origin or
target pod deleted, the operator SIGKILLed, its Kafka broker restarted (in the middle phase).

Each runs one `runtime_cases` case (Nexmark q5, one instance moved) through
`runtime_run.run_case`, which feeds the input as the Migration goes and compares the output
topic and the dead-letter topic with the in-process reference, while a `MigrationWatch` injects
the fault at the chosen phase and times what followed. A Migration rolled back and one that
succeeded pass alike when the output is exact: the query must end with every result once.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from kubernetes.client.exceptions import ApiException
from streamshift_operator.migration.phase_machine import STEPS
from streamshift_operator.models.migration import Protocol

from streamshift_dev.chaos.context import Context
from streamshift_dev.chaos.results import Outcome, Verdict
from streamshift_dev.chaos.watch import Fault, MigrationWatch
from streamshift_dev.private_kafka import PrivateKafka
from streamshift_dev.runtime_cases import RuntimeCase, draw, refusal
from streamshift_dev.runtime_run import Observed, run_case

FAMILY = "nexmark-q5"
MIDDLE = {
    "unimico": "DrainingOrigin",
    "parallel-track": "DrainingOrigin",  # TrackingInParallel ends at its first tick
    "moving-state": "MovingState",
    "state-transfer": "TransferringState",
    "savepoint-restart": "Restoring",
}
"""Each protocol's middle phase: after its roles began and before the hand-off."""
ORIGIN_PHASE = {
    "state-transfer": "PausingAtMarker",
    "savepoint-restart": "StoppingWithSnapshot",
    "moving-state": "MovingState",
}
"""The last phase that needs an origin pod (where a lost one is the middle's case when the
middle no longer needs it): a state-transfer or savepoint-restart origin has let its partitions
go once its snapshot is taken (the target restores from the snapshot), a moving-state origin
once its state moved (MovingState), so it is lost only before (`lost_pods.needs`)."""


def phases(protocol: str) -> tuple[str, ...]:
    """The phases a Migration by `protocol` passes through on its way to Succeeded."""
    steps = [str(phase) for phase in STEPS[Protocol(protocol)]]
    return ("Preparing", *steps, "HandingOver", "Finalizing")


def lost_pod_phases(protocol: str, side: str) -> tuple[str, ...]:
    """The phases in which `side`'s pod exists and runs its part: an origin up to the hand-off
    (a savepoint-restart, state-transfer or moving-state one only up to `ORIGIN_PHASE`), a
    target from its start (a savepoint-restart one after the origin stopped) to the end."""
    every = phases(protocol)
    if side == "origin":
        last = ORIGIN_PHASE.get(protocol, every[every.index("HandingOver") - 1])
        return every[: every.index(last) + 1]
    first = "StartingTarget" if protocol == "savepoint-restart" else "Preparing"
    return every[every.index(first) :]


BROKER_DOWN_S = 8.0
CREATED_S = 15.0


def chaos_case(protocol: str) -> RuntimeCase:
    """The first accepted q5 case of `protocol`, moving its one instance."""
    for seed in range(100):
        case = draw(protocol, seed, FAMILY)
        if case.family != FAMILY:
            continue
        case = replace(case, parallelism=1, target={"moveInstances": [0]}, new_plan=None)
        if refusal(case) is None:
            return case
    raise ValueError(f"no accepted {FAMILY} case of {protocol}")


def judged(
    name: str, observed: Observed, watch: MigrationWatch, fault: Fault, began: float
) -> Outcome:
    """Exact when the fault was injected, the Migration ended Succeeded or RolledBack and the
    output and dead letters equal the reference; FAILED with the reason otherwise."""
    seconds = time.monotonic() - began
    detection, recovery = watch.detection_s, watch.recovery_s
    phases = " ".join(p or "-" for p in watch.phases)
    own = f"Migration {observed.phase}:"
    problems = [p for p in observed.problems if not p.startswith(own)]
    ending = f"Migration {observed.phase or 'unfinished'}: {observed.message[:160]}".strip()
    counts = f"{observed.results} results, {observed.dead_letters} dead letters"
    silent = fault.silent_if_succeeded and observed.phase == "Succeeded"
    reason = None
    if watch.error is not None:
        reason = f"the watch failed: {watch.error}"
    elif watch.injected_at is None and f"{fault.phase}=" in observed.timeline:
        missed = f"phase {fault.phase} passed between two polls ({observed.timeline})"
        return Outcome(name, Verdict.MISSED, None, None, missed, seconds)
    elif watch.injected_at is None:
        reason = f"phase {fault.phase} not reached (phases {phases})"
    elif observed.phase not in ("Succeeded", "RolledBack"):
        reason = "; ".join([ending, *problems])
    elif problems:
        reason = "; ".join(problems)
    elif watch.mention is not None and detection is None and not silent:
        reason = f"the status never named {watch.mention} ({ending})"
    elif recovery is None:
        reason = f"the query was not Running again ({ending})"
    if reason is not None:
        return Outcome(name, Verdict.FAILED, detection, recovery, reason, seconds)
    return Outcome(name, Verdict.EXACT, detection, recovery, f"{ending}; {counts} exact", seconds)


def run_with_fault(
    name: str, ctx: Context, case: RuntimeCase, fault: Fault, stack_override: Any = None
) -> Outcome:
    """`case` in `ctx.ns` with `fault` injected at its phase; the namespace removed after."""
    stack = stack_override or ctx.stack
    watch = MigrationWatch(ctx.kube, ctx.ns, fault)
    began = time.monotonic()
    watch.start()
    try:
        ctx.kube.namespace(ctx.ns)
        observed = run_case(case, ctx.kube, stack, ctx.ns)
        watch.join(60)
    finally:
        watch.done.set()
        ctx.clean_up(stack)
    return judged(name, observed, watch, fault, began)


def _pod(status: dict[str, Any], side: str) -> str:
    epoch = status.get("originEpoch" if side == "origin" else "targetEpoch")
    return f"q-e{epoch}-0"


def middle(protocol: str, side: str) -> str:
    """The phase of `protocol` where losing `side`'s pod is the issue's first case."""
    return ORIGIN_PHASE.get(protocol, MIDDLE[protocol]) if side == "origin" else MIDDLE[protocol]


def lost_pod(protocol: str, side: str, phase: str) -> Callable[[str, Context], Outcome]:
    """The origin or target pod deleted in `phase` of `protocol`."""

    def scenario(name: str, ctx: Context) -> Outcome:
        def inject(status: dict[str, Any], mark: Callable[[], None]) -> str:
            pod = _pod(status, side)
            _delete_once_created(ctx, pod)
            mark()
            return pod

        fault = Fault(phase, inject, silent_if_succeeded=side == "origin")
        return run_with_fault(name, ctx, chaos_case(protocol), fault)

    return scenario


def _delete_once_created(ctx: Context, pod: str) -> None:
    """Delete `pod`, waiting up to `CREATED_S` for it to exist (in Preparing the target pods
    are still being created when the phase begins)."""
    deadline = time.monotonic() + CREATED_S
    while True:
        try:
            ctx.kube.core.delete_namespaced_pod(pod, ctx.ns)
            return
        except ApiException as error:
            if error.status != 404 or time.monotonic() > deadline:
                raise
            time.sleep(0.1)


def operator_killed(protocol: str, phase: str) -> Callable[[str, Context], Outcome]:
    """The operator SIGKILLed in `phase` and started again at once (its Deployment's restart)."""

    def scenario(name: str, ctx: Context) -> Outcome:
        def inject(status: dict[str, Any], mark: Callable[[], None]) -> None:
            mark()
            ctx.operator.kill()
            ctx.operator.start()
            return None

        return run_with_fault(name, ctx, chaos_case(protocol), Fault(phase, inject))

    return scenario


def broker_restarted(protocol: str) -> Callable[[str, Context], Outcome]:
    """The query's Kafka broker (a private one) stopped in `protocol`'s middle phase and started
    again `BROKER_DOWN_S` later; recovery counts from its return."""

    def scenario(name: str, ctx: Context) -> Outcome:
        folder = ctx.folder / f"{name}-kafka"
        folder.mkdir(parents=True)
        broker = PrivateKafka(folder)
        broker.start()
        stack = replace(ctx.stack, kafka=broker.bootstrap)

        def inject(status: dict[str, Any], mark: Callable[[], None]) -> None:
            broker.stop()
            time.sleep(BROKER_DOWN_S)
            broker.start()
            mark()
            return None

        try:
            return run_with_fault(
                name, ctx, chaos_case(protocol), Fault(MIDDLE[protocol], inject), stack
            )
        finally:
            broker.stop()

    return scenario
