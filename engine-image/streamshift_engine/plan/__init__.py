"""Query plans: parse and validate (`parse_plan`), named built-ins (`builtin`), `compile`."""

from __future__ import annotations

from typing import TYPE_CHECKING

from streamshift_engine.plan.builtin import builtin, builtin_names
from streamshift_engine.plan.errors import PlanError
from streamshift_engine.plan.model import InputSpec, OperatorSpec, Plan, WindowSpec
from streamshift_engine.plan.parse import parse_plan

if TYPE_CHECKING:
    from streamshift_engine.pipeline import Pipeline


def compile(plan: Plan) -> Pipeline:
    """One instance's `Pipeline` for `plan` (imported here: operators import `plan.expressions`)."""
    from streamshift_engine.plan.compiler import compile_plan

    return compile_plan(plan)


__all__ = [
    "InputSpec",
    "OperatorSpec",
    "Plan",
    "PlanError",
    "WindowSpec",
    "builtin",
    "builtin_names",
    "compile",
    "parse_plan",
]
