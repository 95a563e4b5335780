"""What the protocols can do with the new plan shapes: a union and a sliding window join are
compared by structure (not name), and a union is moved as what it feeds is: with a time window
every protocol accepts it, with session windows the protocols that split at an event time refuse
it with the reason and what to use instead."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from streamshift_engine.migration import capability
from streamshift_engine.plan import parse_plan
from streamshift_engine.plan.builtin import SEED_SCHEMA
from streamshift_engine.plan.model import Plan


def union_plan(window: dict[str, Any]) -> Plan:
    inputs = [
        {"name": n, "topic": n.lower(), "time_field": "ts", "key_field": "l", "schema": SEED_SCHEMA}
        for n in ("S", "T")
    ]
    aggregate = {
        "id": "agg",
        "type": "window_aggregate",
        "input": "all",
        "params": {"window": window, "aggregates": [{"name": "n", "fn": "count"}]},
    }
    union = {"id": "all", "type": "union", "inputs": ["S", "T"]}
    document = {"name": "u", "inputs": inputs, "operators": [union, aggregate], "output": "agg"}
    return parse_plan(document)


def test_a_union_feeding_a_time_window_is_moved_by_every_protocol() -> None:
    plan = union_plan({"kind": "time", "size": 4_000, "slide": 2_000})
    assert all(capability.refusal(p, plan) is None for p in capability.PROTOCOLS)
    assert capability.same_computation(plan, replace(plan, name="renamed"))
    assert capability.choose(plan).protocol == "unimico"


def test_a_union_feeding_sessions_is_refused_by_the_event_time_splits() -> None:
    plan = union_plan({"kind": "session", "gap": 2_000})
    refused = {p for p in capability.PROTOCOLS if capability.refusal(p, plan) is not None}
    assert refused == {"unimico", "parallel-track"}
    reason = capability.refusal("unimico", plan)
    assert reason is not None and "session windows" in reason and "use state-transfer" in reason
    assert capability.choose(plan).protocol == "moving-state"


def test_a_changed_union_is_a_plan_change() -> None:
    plan = union_plan({"kind": "time", "size": 4_000, "slide": 4_000})
    other = union_plan({"kind": "time", "size": 4_000, "slide": 2_000})
    assert not capability.same_computation(plan, other)
    reason = capability.refusal("state-transfer", plan, other)
    assert reason is not None and "cannot change it" in reason
