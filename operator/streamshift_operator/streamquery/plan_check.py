"""Validate a StreamQuery's plan with the engine's parser, against the rest of its spec.

The engine (`streamshift_engine.plan`) is imported lazily, so importing the operator's pure
modules stays cheap. Every problem is one message naming the spec field to fix. On success the
report carries the engine's plan (what `streamshift_engine.migration.capability` decides the
protocols by) and the document written to the plan's ConfigMap: the spec's plan in wire form
(`{builtin: name}` or `{inline: {...}}`), which the worker resolves with the same `builtin` /
`parse_plan` the operator validated it with."""

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from streamshift_operator.models.streamquery import PlanSource, StreamQuerySpec

if TYPE_CHECKING:
    from streamshift_engine.plan import Plan


@dataclass(frozen=True)
class PlanReport:
    problems: tuple[str, ...]
    plan: "Plan | None"
    document: dict[str, Any]

    @property
    def message(self) -> str:
        return "; ".join(self.problems)


def check_plan(spec: StreamQuerySpec) -> PlanReport:
    """Resolve and validate `spec.plan`, then check sources and parallelism against it."""
    document = spec.plan.wire()
    plan, problem = _resolve(spec.plan)
    if plan is None:
        return PlanReport((problem,), None, document)
    problems = [*_source_problems(plan, spec), *_parallelism_problems(plan, spec)]
    return PlanReport(tuple(problems), plan, document)


def _resolve(source: PlanSource) -> tuple["Plan | None", str]:
    from streamshift_engine.plan import PlanError, builtin, parse_plan

    if source.builtin is not None:
        try:
            return builtin(source.builtin), ""
        except KeyError as error:
            return None, f"spec.plan.builtin: {error.args[0]}"
    try:
        return parse_plan(source.inline or {}), ""
    except PlanError as error:
        where = f"operator or input {error.node!r}, field {error.field!r}"
        return None, f"spec.plan.inline: {where}: {error.message}"


def _source_problems(plan: "Plan", spec: StreamQuerySpec) -> list[str]:
    inputs = [spec_input.name for spec_input in plan.inputs]
    named = {source.name for source in spec.sources}
    problems = [
        f"spec.sources: the plan reads input {name!r} but no source is named {name!r}: "
        f"add a source with name {name}, its topic and partitions"
        for name in inputs
        if name not in named
    ]
    problems += [
        f"spec.sources: source {name!r} is not an input of plan {plan.name!r} "
        f"(inputs: {', '.join(inputs)}): remove it or rename it"
        for name in sorted(named - set(inputs))
    ]
    return problems


def _parallelism_problems(plan: "Plan", spec: StreamQuerySpec) -> list[str]:
    if plan.keyed or spec.parallelism == 1:
        return []
    return [
        f"spec.parallelism: plan {plan.name!r} keeps global (not keyed) state and runs on one "
        f"instance: set spec.parallelism to 1 (it is {spec.parallelism})"
    ]
