"""The two runtime modifications of seed 003 (3.3): introduce an operator, replace a function.

Each builds the new plan from the running one; `state-transfer` then applies it exactly once
(seed 003 (Bartnik et al., On-the-fly Reconfiguration) 3.2): the modification marker fixes a
position in every input partition, the old plan processes every record before it, the target
instance of the new plan restores the old plan's state (operators keep their ids, so their state
carries over) and processes every record from it on. Nothing is processed by both plans and nothing
by neither, because the log is the upstream buffer and the snapshot records exactly the positions
its state covers.

- `introduce_operator` (3.3.1): a new operator reads what `after` produced, and every consumer
  of `after` (or the output) reads the new operator instead. A new stateful operator starts
  empty at the marker.
- `replace_function` (3.3.2): an operator keeps its id, type and inputs and gets new parameters;
  only where its state keeps the same shape (stateless operators, and a stateful map over the
  same key), so the old state means the same to the new function.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from streamshift_engine.plan.model import Plan
from streamshift_engine.plan.parse import parse_plan

REPLACEABLE = frozenset({"filter", "map", "project", "stateful_map"})


def document(plan: Plan) -> dict[str, Any]:
    """The plan as the mapping `parse_plan` reads."""
    inputs = [
        {
            "name": spec.name,
            "topic": spec.topic,
            "time_field": spec.time_field,
            "key_field": spec.key_field,
            "schema": dict(spec.schema),
        }
        for spec in plan.inputs
    ]
    operators = [
        {"id": op.id, "type": op.type, "inputs": list(op.inputs), "params": dict(op.params)}
        for op in plan.operators
    ]
    return {"name": plan.name, "inputs": inputs, "operators": operators, "output": plan.output}


def introduce_operator(plan: Plan, operator: Mapping[str, Any], after: str) -> Plan:
    """`plan` with `operator` (id, type, params) inserted after node `after`."""
    raw = document(plan)
    new_id = operator["id"]
    if new_id in plan.nodes:
        raise ValueError(f"node {new_id!r} exists already")
    if after not in plan.nodes:
        raise ValueError(f"no node {after!r} to introduce an operator after")
    for op in raw["operators"]:
        op["inputs"] = [new_id if name == after else name for name in op["inputs"]]
    inserted = {"id": new_id, "type": operator["type"], "inputs": [after]}
    inserted["params"] = dict(operator.get("params", {}))
    position = next(
        (i + 1 for i, op in enumerate(raw["operators"]) if op["id"] == after),
        0,
    )
    raw["operators"].insert(position, inserted)
    if raw["output"] == after:
        raw["output"] = new_id
    return parse_plan(raw)


def replace_function(plan: Plan, node: str, params: Mapping[str, Any]) -> Plan:
    """`plan` with operator `node` given new parameters (its function)."""
    raw = document(plan)
    spec = next((op for op in raw["operators"] if op["id"] == node), None)
    if spec is None:
        raise ValueError(f"no operator {node!r}")
    if spec["type"] not in REPLACEABLE:
        raise ValueError(f"replacing the function of a {spec['type']} would change its state")
    if spec["type"] == "stateful_map" and params.get("key") != spec["params"].get("key"):
        raise ValueError("a stateful map's new function must count over the same key")
    spec["params"] = dict(params)
    return parse_plan(raw)
