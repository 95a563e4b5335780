"""State matching for a plan change (seed 001 (Zhu et al., Dynamic Plan Migration), 4.1.1): which
state of the new plan is which old one.

A plan's states are the stores of its stateful operators. For a symmetric join each input side
has a state whose *state id* is its tuple schema (4.1.1): the set of streams its tuples combine,
with the window they were joined under. Field names are not part of the id: `S.m` stays `S.m`
whichever join order produced the tuple, so a state's *layout* is its fields in canonical names
(`canonical_fields`), and a matched state whose layout and join key are unchanged is shared
outright (a new cursor on the old state), otherwise moved field by field. Any other stateful
operator's state is identified by the operator (type and parameters) and its input's id: it
matches only an identical operator over an identical input.

A new state without a match is *recomputable* (Algorithm 1) when it holds the output of a range
join whose own two states are matched or recomputable; anything else makes moving-state refuse
the change up front (`refusal`).
"""

from __future__ import annotations

import json
from collections.abc import Hashable
from dataclasses import dataclass

from streamshift_engine.plan.model import STATEFUL_TYPES, OperatorSpec, Plan

StateId = Hashable
JOIN_SIDES = ("left", "right")


@dataclass(frozen=True)
class StateSlot:
    """One state of a plan: a store of an operator, with what matching and moving need."""

    operator: str
    store: str
    state_id: StateId
    upstream: str | None
    layout: tuple[str, ...] | None
    key: tuple[str, ...] | None


def operator_spec(plan: Plan, node: str) -> OperatorSpec | None:
    return next((op for op in plan.operators if op.id == node), None)


def range_join(plan: Plan, node: str) -> OperatorSpec | None:
    """The node's spec when it is a range join (the joins Algorithm 1 can recompute)."""
    spec = operator_spec(plan, node)
    if spec is None or spec.type != "window_join" or spec.params["window"]["kind"] != "range":
        return None
    return spec


def streams(plan: Plan, node: str) -> frozenset[str] | None:
    """The input streams a node's tuples combine, through inputs and range joins only."""
    if operator_spec(plan, node) is None:
        return frozenset([node])
    spec = range_join(plan, node)
    if spec is None:
        return None
    left, right = (streams(plan, side) for side in spec.inputs)
    return None if left is None or right is None else left | right


def node_state_id(plan: Plan, node: str) -> StateId:
    """The id of a state holding `node`'s output tuples."""
    combined = streams(plan, node)
    spec = operator_spec(plan, node)
    if combined is not None:
        window = range_join(plan, node)
        size = None if window is None else window.params["window"]["size"]
        return ("streams", tuple(sorted(combined)), size)
    assert spec is not None
    params = json.dumps(spec.params, sort_keys=True)
    return (spec.type, params, tuple(node_state_id(plan, up) for up in spec.inputs))


def canonical_fields(plan: Plan, node: str) -> tuple[str, ...] | None:
    """The node's output fields by what they are: `<stream>.<field>` for a base field and
    `id:<streams>` for the id of a combined tuple; None past any operator but a range join."""
    if operator_spec(plan, node) is None:
        return tuple(f"{node}.{field}" for field in plan.nodes[node].fields)
    spec = range_join(plan, node)
    combined = streams(plan, node)
    if spec is None or combined is None:
        return None
    left, right = (canonical_fields(plan, side) for side in spec.inputs)
    assert left is not None and right is not None
    return (*left, *right, "id:" + "".join(sorted(combined)))


def join_key(plan: Plan, spec: OperatorSpec, port: int) -> tuple[str, ...] | None:
    """The canonical names of the fields a join keys side `port`'s state by."""
    layout = canonical_fields(plan, spec.inputs[port])
    if layout is None:
        return None
    fields = list(plan.nodes[spec.inputs[port]].fields)
    return tuple(layout[fields.index(pair[port])] for pair in spec.params["on"])


def slots(plan: Plan) -> list[StateSlot]:
    """Every state of the plan, in the plan's (topological) operator order."""
    found = []
    for spec in plan.operators:
        if spec.type == "window_join" and spec.params["window"]["kind"] in ("range", "rows"):
            for port, store in enumerate(JOIN_SIDES):
                upstream = spec.inputs[port]
                layout = canonical_fields(plan, upstream)
                key = join_key(plan, spec, port)
                kind = spec.params["window"]["kind"]
                # a rows join keeps the last n tuples per key: its state depends on the key
                state_id = (kind, node_state_id(plan, upstream), key if kind == "rows" else None)
                found.append(StateSlot(spec.id, store, state_id, upstream, layout, key))
        elif spec.type in STATEFUL_TYPES:
            found.append(StateSlot(spec.id, "*", node_state_id(plan, spec.id), None, None, None))
    return found


def matches(old: Plan, new: Plan) -> dict[tuple[str, str], StateSlot]:
    """For each new state (operator, store) that has a match, the old state it matches."""
    by_id = {slot.state_id: slot for slot in slots(old)}
    return {
        (slot.operator, slot.store): by_id[slot.state_id]
        for slot in slots(new)
        if slot.state_id in by_id
    }


def refusal(old: Plan, new: Plan) -> str | None:
    """Why moving-state cannot carry `old`'s states into `new`, or None when it can."""
    if sorted(s.name for s in old.inputs) != sorted(s.name for s in new.inputs):
        return "the plans read different inputs"
    matched = matches(old, new)
    filled: set[str] = set()
    for slot in slots(new):
        if (slot.operator, slot.store) in matched:
            filled.add(f"{slot.operator}/{slot.store}")
            continue
        spec = None if slot.upstream is None else range_join(new, slot.upstream)
        if spec is None or slot.layout is None:
            return f"state {slot.operator}/{slot.store} has no match and cannot be recomputed"
        if any(f"{spec.id}/{side}" not in filled for side in JOIN_SIDES):
            return f"state {slot.operator}/{slot.store} depends on a state that is not filled"
        filled.add(f"{slot.operator}/{slot.store}")
    return None
