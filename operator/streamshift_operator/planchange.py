"""A plan change's two plans together: which protocol can carry the origin plan into the target
plan, and the origin plan as the document a moving-state target restores it from.

Only the two protocols that run the target with its own plan change plans (seed 001, 4):
- moving-state (4.1): the target matches the origin's states by state id and recomputes the
  rest (Algorithm 1); the engine's `plan_change.refusal` says when a state of the new plan has
  no match and cannot be recomputed from matched join states.
- parallel-track (4.2): the origin keeps the results that combine an old tuple, the target
  (its own plan, empty state) those of new tuples alone, split at the origin's watermark `A`.
  Both plans must pass the old/new split (`marking.refusal`), and the target may drop input only
  from where the origin's split offsets begin: the origin computes them with its own plan's
  readback, so the target plan's readback must not be longer.
The engine is imported lazily, as in `plancheck`.
"""

from typing import TYPE_CHECKING, Any

from streamshift_engine.plan.parse import plan_document

from streamshift_operator.models.migration import Protocol
from streamshift_operator.models.streamquery import PlanSource

if TYPE_CHECKING:
    from streamshift_engine.plan import Plan


def resolve(source: PlanSource) -> "Plan":
    """The engine's plan of a validated `PlanSource`."""
    from streamshift_engine.plan import builtin, parse_plan

    return (
        builtin(source.builtin) if source.builtin is not None else parse_plan(source.inline or {})
    )


def problem(protocol: Protocol, origin: PlanSource, target: PlanSource) -> str | None:
    """Why `protocol` cannot change `origin` into `target` (what to do instead), or None."""
    from streamshift_engine.migration import marking, plan_change

    old, new = resolve(origin), resolve(target)
    if old == new:
        return None
    if protocol is Protocol.MOVING_STATE:
        reason = plan_change.refusal(old, new)
        return None if reason is None else f"moving-state cannot carry the plan's states: {reason}"
    if protocol is Protocol.PARALLEL_TRACK:
        for side, plan in (("origin", old), ("target", new)):
            reason = marking.refusal(plan)
            if reason is not None:
                return f"parallel-track cannot split the {side} plan {plan.name!r}: {reason}"
        if marking.readback(new) > marking.readback(old):
            return (
                f"parallel-track: the target plan reads {marking.readback(new)} ms of input "
                f"before the split, the origin plan's split offsets only "
                f"{marking.readback(old)} ms: use moving-state"
            )
        return None
    return f"protocol {protocol} cannot change the plan: use parallel-track, moving-state or auto"


def document(source: PlanSource) -> dict[str, Any]:
    """The plan object (`parse_plan`'s input) of `source`: what a moving-state target gets as
    `origin_plan` to restore the origin's states with."""
    if source.inline is not None:
        return source.inline
    return plan_document(resolve(source))
