"""A plan source as the engine's plan, and as the document a moving-state target restores the
origin's states with. Which protocol can carry one plan into another is the engine's
`migration.capability`. The engine's plan modules are imported lazily, as in `plan_check`.
"""

from typing import TYPE_CHECKING, Any

from streamshift_engine.plan.parse import plan_document

from streamshift_operator.models.streamquery import PlanSource

if TYPE_CHECKING:
    from streamshift_engine.plan import Plan


def resolve(source: PlanSource) -> "Plan":
    """The engine's plan of a validated `PlanSource`."""
    from streamshift_engine.plan import builtin, parse_plan

    return (
        builtin(source.builtin) if source.builtin is not None else parse_plan(source.inline or {})
    )


def document(source: PlanSource) -> dict[str, Any]:
    """The plan object (`parse_plan`'s input) of `source`: what a moving-state target gets as
    `origin_plan` to restore the origin's states with."""
    if source.inline is not None:
        return source.inline
    return plan_document(resolve(source))
