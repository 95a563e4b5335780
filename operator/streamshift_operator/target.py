"""Pure decisions of a Migration before it runs: its target placement and its protocol.

A migration places every instance on a new pod at the next epoch (`q-e{n+1}-{i}`): a rescale
reassigns the partitions over the new parallelism, a plan change keeps them, `moveInstances`
moves the named instances (and, as all instances of a query share one epoch, the others with
them). The protocol is the user's, checked for feasibility, or `auto`'s choice.

A plan change (`spec.target.plan`) runs by parallel-track or moving-state, checked against both
plans (`planchange`); `auto` picks by the plan's traits and falls back to moving-state when
parallel-track cannot split the plans. What a user sees: the target pods start with the new
plan (its own ConfigMap, named by content); at the hand-over the query's `status.plan` becomes
the new plan, and so does its `spec.plan` when the user made the Migration (as a rescale writes
`spec.parallelism`), so the spec says what runs and no follow-up Migration changes it back.
Editing `spec.plan` of a StreamQuery makes the operator create such a Migration with protocol
`auto`; until its hand-over the old plan runs.
"""

from dataclasses import dataclass
from typing import Any

from streamshift_operator import planchange
from streamshift_operator.assignment import assign
from streamshift_operator.models.migration import AssignedInstance, MigrationSpec, Protocol
from streamshift_operator.models.streamquery import PlanSource, StreamQuerySpec, StreamQueryStatus
from streamshift_operator.plancheck import check_plan
from streamshift_operator.protocols import TargetKind, choose, refusal

# Protocols that hand each target over from exactly one origin.
ONE_ORIGIN = frozenset({Protocol.UNIMICO, Protocol.PARALLEL_TRACK})


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
    if report.problems or report.traits is None:
        raise Refused(f"the target plan is invalid: {report.message}")
    kind = kind_of(spec)
    if spec.protocol is Protocol.AUTO:
        choice = choose(report.traits, kind, state_bytes)
        protocol, reason = choice.protocol, choice.reason
    else:
        problem = refusal(spec.protocol, report.traits, kind)
        if problem is not None:
            raise Refused(problem)
        protocol, reason = spec.protocol, "chosen in spec.protocol"
    if kind is TargetKind.PLAN:
        protocol, reason = _plan_change(spec, placed.plan, plan, protocol, reason)
    ranges = assign(partitions, count)
    split = _split_targets(placed, ranges)
    if protocol in ONE_ORIGIN and split:
        why = (
            f"target instance(s) {split} would take partitions of several origins, and "
            f"{protocol} hands each target over from one origin"
        )
        if spec.protocol is not Protocol.AUTO:
            raise Refused(
                f"{why}: pick a parallelism that divides or multiplies the current one "
                "or use state-transfer or moving-state"
            )
        protocol, reason = Protocol.STATE_TRANSFER, f"auto prefers {protocol}, but {why}"
    return Resolved(
        protocol=protocol,
        reason=reason,
        instances=[AssignedInstance(id=i, partitions=r) for i, r in enumerate(ranges)],
        plan=plan.wire(),
    )


def _plan_change(
    spec: MigrationSpec, origin: PlanSource, target: PlanSource, protocol: Protocol, reason: str
) -> tuple[Protocol, str]:
    """The protocol checked against both plans; `auto` falls back from parallel-track to
    moving-state when only that one can carry the change."""
    problem = planchange.problem(protocol, origin, target)
    if problem is None:
        return protocol, reason
    if spec.protocol is Protocol.AUTO and protocol is Protocol.PARALLEL_TRACK:
        fallback = planchange.problem(Protocol.MOVING_STATE, origin, target)
        if fallback is None:
            return Protocol.MOVING_STATE, f"auto prefers parallel-track, but {problem}"
        problem = f"{problem}; {fallback}"
    raise Refused(f"{problem} (spec.target.plan)")


def _split_targets(placed: StreamQueryStatus, ranges: list[list[int]]) -> list[int]:
    """Target instances whose partitions come from more than one origin instance."""
    owner = {p: i.id for i in placed.instances for p in i.partitions}
    return [t for t, parts in enumerate(ranges) if len({owner[p] for p in parts}) > 1]
