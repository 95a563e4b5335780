"""Pure decisions of a Migration before it runs: its target placement and its protocol.

A migration places every instance on a new pod at the next epoch (`q-e{n+1}-{i}`): a rescale
reassigns the partitions over the new parallelism, a plan change keeps them, `moveInstances`
moves the named instances (and, as all instances of a query share one epoch, the others with
them). The protocol is the user's, or `auto`'s choice, and the engine's `capability` (the one
place the engine's checks and the workers ask too) refuses what a protocol cannot do exactly
with the two plans, so a Migration is refused here, before any pod starts, never by a worker.

A plan change (`spec.target.plan`) runs by parallel-track or moving-state. What a user sees: the
target pods start with the new plan (its own ConfigMap, named by content); at the hand-over the
query's `status.plan` becomes the new plan, and so does its `spec.plan` when the user made the
Migration (as a rescale writes `spec.parallelism`), so the spec says what runs and no follow-up
Migration changes it back. Editing `spec.plan` of a StreamQuery makes the operator create such a
Migration with protocol `auto`; until its hand-over the old plan runs."""

from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from streamshift_engine.migration import capability
from streamshift_engine.plan.model import Plan

from streamshift_operator.migration import plan_change
from streamshift_operator.models.migration import AssignedInstance, MigrationSpec, Protocol
from streamshift_operator.models.streamquery import StreamQuerySpec, StreamQueryStatus
from streamshift_operator.resources.partition_assignment import assign
from streamshift_operator.streamquery.plan_check import check_plan

# Protocols that hand each target over from exactly one origin.
ONE_ORIGIN = frozenset({Protocol.UNIMICO, Protocol.PARALLEL_TRACK})
# Above this much event time of windows, `auto` moves state rather than wait them out.
LONG_WINDOW_MS = 300_000


class TargetKind(StrEnum):
    RESCALE = "rescale"
    MOVE = "move"
    PLAN = "plan"


@dataclass(frozen=True)
class Resolved:
    protocol: Protocol
    reason: str
    instances: list[AssignedInstance]
    plan: dict[str, Any]


class Refused(Exception):
    """The migration cannot run; the message says what to change."""


def kind_of(spec: MigrationSpec) -> TargetKind:
    if spec.target.plan is not None:
        return TargetKind.PLAN
    return TargetKind.RESCALE if spec.target.parallelism is not None else TargetKind.MOVE


def resolve(
    spec: MigrationSpec, query: StreamQuerySpec, placed: StreamQueryStatus, state_bytes: int
) -> Resolved:
    """Target placement and protocol, or `Refused`."""
    if placed.plan is None or not placed.instances:
        raise Refused("the StreamQuery is not running yet: wait until it is placed")
    partitions = query.sources[0].partitions
    count = spec.target.parallelism or len(placed.instances)
    if count > partitions:
        raise Refused(
            f"spec.target.parallelism {count} exceeds the sources' {partitions} partitions: "
            "lower it or give the topics more partitions"
        )
    unknown = sorted(set(spec.target.move_instances or ()) - {i.id for i in placed.instances})
    if unknown:
        raise Refused(f"spec.target.moveInstances: no instance {unknown} runs: name running ones")
    plan = placed.plan if spec.target.plan is None else spec.target.plan
    report = check_plan(query.model_copy(update={"plan": plan, "parallelism": count}))
    if report.problems or report.plan is None:
        raise Refused(f"the target plan is invalid: {report.message}")
    old, new = plan_change.resolve(placed.plan), report.plan
    ranges = assign(partitions, count)
    split = _split_targets(placed, ranges)
    if spec.protocol is Protocol.AUTO:
        protocol, reason = _auto(old, new, state_bytes, split, len(placed.instances), count)
    else:
        protocol, reason = spec.protocol, "chosen in spec.protocol"
        problem = capability.refusal(str(protocol), old, new)
        if problem is None and protocol in ONE_ORIGIN and split:
            problem = _one_origin(protocol, split, len(placed.instances), count)
        if problem is not None:
            raise Refused(problem + (" (spec.target.plan)" if spec.target.plan else ""))
    return Resolved(
        protocol=protocol,
        reason=reason,
        instances=[AssignedInstance(id=i, partitions=r) for i, r in enumerate(ranges)],
        plan=plan.wire(),
    )


def _auto(
    old: Plan, new: Plan, state_bytes: int, split: list[int], current: int, count: int
) -> tuple[Protocol, str]:
    """`auto`'s choice (`capability.choose`), moving state instead where a stateless protocol
    would draw a target from several origins."""
    try:
        choice = capability.choose(old, new, state_bytes, max_overlap_ms=LONG_WINDOW_MS)
    except ValueError as error:
        raise Refused(f"auto: {error} (spec.target.plan)") from None
    protocol = Protocol(choice.protocol)
    if protocol not in ONE_ORIGIN or not split:
        return protocol, choice.reason
    why = _one_origin(protocol, split, current, count)
    for fallback in (Protocol.MOVING_STATE, Protocol.STATE_TRANSFER):
        if capability.refusal(str(fallback), old, new) is None:
            return fallback, f"auto prefers {protocol}, but {why}"
    raise Refused(f"auto: {why}, and no state-moving protocol can carry this plan change")


def _one_origin(protocol: Protocol, split: list[int], current: int, count: int) -> str:
    """Why a target drawing partitions from several origins cannot run `protocol`, and what
    parallelism would do."""
    why = (
        f"target instance(s) {split} would take partitions of several origins, and {protocol} "
        "hands each target over from one origin"
    )
    if count < current:
        return f"{why}: scaling down merges origins, use state-transfer, moving-state or auto"
    return (
        f"{why}: pick a multiple of the current parallelism {current} (each origin's "
        "partitions then split among whole targets), or use state-transfer, moving-state or auto"
    )


def _split_targets(placed: StreamQueryStatus, ranges: list[list[int]]) -> list[int]:
    """Target instances whose partitions come from more than one origin instance."""
    owner = {p: i.id for i in placed.instances for p in i.partitions}
    return [t for t, parts in enumerate(ranges) if len({owner[p] for p in parts}) > 1]
