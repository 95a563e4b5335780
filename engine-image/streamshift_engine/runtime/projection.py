"""The input fields a plan reads, so a worker decodes only those (projection).

A field is read when the plan stops validating without it (an operator names it: a predicate,
an expression, a group, join or rank field) or when the output stream's fields change without it
(it reaches the results). Validation checks every field an operator names, so what is left out
never reaches an operator. The time and key fields are always read. A worker runs `projected(plan)`,
the same operators over inputs narrowed to those fields (operators that keep whole rows, such as
a join's stored sides, then keep only what is read); the columnar decoder reads only those
columns, and the JSON decoder builds and type-checks only those fields (a record missing a field
the plan never reads is decoded, not dead-lettered). `input_schemas` gives the decoder the fields
left out as `Schema.unread`, so records holding exactly the input's fields take the engine's typed
JSON fast path (`events.typed_json`) instead of the slower orjson one.
"""

from __future__ import annotations

from typing import Any

from streamshift_engine.events.wire import Schema
from streamshift_engine.plan import PlanError, parse_plan
from streamshift_engine.plan.model import Plan
from streamshift_engine.plan.parse import input_document


def fields_read(plan: Plan) -> dict[str, tuple[str, ...]]:
    """Per input, the schema fields the plan reads, in schema order."""
    return {
        spec.name: tuple(
            name
            for name in spec.schema
            if name in (spec.time_field, spec.key_field) or _needed(plan, spec.name, name)
        )
        for spec in plan.inputs
    }


def projected(plan: Plan) -> Plan:
    """`plan` with each input's schema narrowed to the fields it reads (same output fields)."""
    return parse_plan(_document(plan, fields_read(plan)))


def input_schemas(plan: Plan) -> dict[str, Schema]:
    """Per input of `plan` (not yet projected), the decoder's schema: the fields it reads, in
    schema order (those of `projected(plan)`), and the rest as `unread`."""
    reads = fields_read(plan)
    return {
        spec.name: Schema(
            spec.name,
            tuple(spec.schema.items()),  # type: ignore[arg-type]
            spec.time_field,
        ).project(reads[spec.name])
        for spec in plan.inputs
    }


def _needed(plan: Plan, source: str, field: str) -> bool:
    reads = {
        spec.name: tuple(n for n in spec.schema if spec.name != source or n != field)
        for spec in plan.inputs
    }
    try:
        without = parse_plan(_document(plan, reads))
    except PlanError:
        return True
    return dict(without.nodes[plan.output].fields) != dict(plan.nodes[plan.output].fields)


def _document(plan: Plan, reads: dict[str, tuple[str, ...]]) -> dict[str, Any]:
    """The plan as a document, each input's schema narrowed to `reads`."""
    inputs = [
        {
            **input_document(spec),
            "schema": {n: t for n, t in spec.schema.items() if n in reads[spec.name]},
        }
        for spec in plan.inputs
    ]
    operators = [
        {"id": op.id, "type": op.type, "inputs": list(op.inputs), "params": dict(op.params)}
        for op in plan.operators
    ]
    return {"name": plan.name, "inputs": inputs, "operators": operators, "output": plan.output}
