"""Small plans the engine tests build over the seed-like schema `(ts, k, v)`: a keyed window
aggregate (with an optional watermark strategy) and a two-input join."""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st
from streamshift_engine.plan import parse_plan
from streamshift_engine.plan.model import Plan

SCHEMA = {"ts": "int", "k": "int", "v": "int"}
AGGREGATES = [
    ("n", "count", "v"),
    ("total", "sum", "v"),
    ("low", "min", "v"),
    ("high", "max", "v"),
    ("mean", "avg", "v"),
]


# The aggregate tests' input: partitions, and the fields' values as hypothesis draws them.
PARTITIONS = 3
FIELDS = {"k": st.integers(0, 3), "v": st.integers(-50, 50)}


def aggregate_plan(
    window: dict[str, Any], group_by: list[str], watermark: dict[str, Any] | None = None
) -> Plan:
    """`AGGREGATES` of `v` over input `S` in `window`, grouped by `group_by`."""
    source: dict[str, Any] = {"name": "S", "time_field": "ts", "key_field": "k", "schema": SCHEMA}
    if watermark is not None:
        source["watermark"] = watermark
    aggregate = {
        "id": "w",
        "type": "window_aggregate",
        "input": "S",
        "params": {
            "window": window,
            "group_by": group_by,
            "aggregates": [{"name": n, "fn": f, "field": x} for n, f, x in AGGREGATES],
        },
    }
    return parse_plan({"name": "agg", "inputs": [source], "operators": [aggregate], "output": "w"})


def join_plan(window: dict[str, Any], schema: dict[str, str] | None = None) -> Plan:
    """Inputs `S` and `T` joined on `k` in `window`."""
    fields = SCHEMA if schema is None else schema
    inputs = [{"name": n, "time_field": "ts", "key_field": "k", "schema": fields} for n in "ST"]
    join = {
        "id": "j",
        "type": "window_join",
        "inputs": ["S", "T"],
        "params": {"window": window, "on": [["k", "k"]]},
    }
    return parse_plan({"name": "join", "inputs": inputs, "operators": [join], "output": "j"})
