"""Named built-in plans: the seed queries and, when present, the Nexmark queries.

- `q1`: `SELECT * FROM S [Range 10 seconds], T [Range 10 seconds] WHERE S.l = T.l` (seed 000 (Pham
  et al., UniMiCo), section 4): a symmetric range join, keyed by `l`.
- `q2`: `SELECT sum(m) FROM S [Rows 5]` (seed 000, section 4): slide 1 tuple, global.
- `q3`: `SELECT sum(S.m) FROM (Q1) [ROWS 5]` (seed 000, section 4.2): the join feeds a global
  `Rows 5` sum, which is the controlling window.
- `smq`: the stateful map query of seed 003 (Bartnik et al., On-the-fly Reconfiguration), 6.3.1:
  each record gets its key's running count.
- `nexmark-q0` ... `nexmark-q8`: from `plan.nexmark_queries`, imported only when asked for.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

from streamshift_engine.plan.model import Plan
from streamshift_engine.plan.parse import parse_plan

SEED_RANGE_MS = 10_000
SEED_ROWS = 5
SEED_SCHEMA = {"ts": "int", "l": "int", "m": "int"}


def _seed_input(name: str) -> dict[str, Any]:
    return {
        "name": name,
        "topic": name.lower(),
        "time_field": "ts",
        "key_field": "l",
        "schema": dict(SEED_SCHEMA),
    }


def _join() -> dict[str, Any]:
    return {
        "id": "join",
        "type": "window_join",
        "inputs": ["S", "T"],
        "params": {"window": {"kind": "range", "size": SEED_RANGE_MS}, "on": [["l", "l"]]},
    }


def _rows_sum(node_id: str, upstream: str, field: str) -> dict[str, Any]:
    return {
        "id": node_id,
        "type": "window_aggregate",
        "input": upstream,
        "params": {
            "window": {"kind": "rows", "size": SEED_ROWS, "slide": 1},
            "aggregates": [{"name": "sum", "fn": "sum", "field": field}],
        },
    }


def q1() -> dict[str, Any]:
    return {
        "name": "q1",
        "inputs": [_seed_input("S"), _seed_input("T")],
        "operators": [_join()],
        "output": "join",
    }


def q2() -> dict[str, Any]:
    return {
        "name": "q2",
        "inputs": [_seed_input("S")],
        "operators": [_rows_sum("sum", "S", "m")],
        "output": "sum",
    }


def q3() -> dict[str, Any]:
    operators = [_join(), _rows_sum("sum", "join", "S.m")]
    return {
        "name": "q3",
        "inputs": [_seed_input("S"), _seed_input("T")],
        "operators": operators,
        "output": "sum",
    }


def smq() -> dict[str, Any]:
    source = {
        "name": "numbers",
        "topic": "numbers",
        "time_field": "ts",
        "key_field": "key",
        "schema": {"ts": "int", "key": "int", "value": "int"},
    }
    counter = {
        "id": "counter",
        "type": "stateful_map",
        "input": "numbers",
        "params": {"key": "key", "output": "count"},
    }
    return {"name": "smq", "inputs": [source], "operators": [counter], "output": "counter"}


SEEDS: dict[str, Callable[[], dict[str, Any]]] = {"q1": q1, "q2": q2, "q3": q3, "smq": smq}
NEXMARK_MODULE = "streamshift_engine.plan.nexmark_queries"


def _nexmark() -> Any:
    try:
        return importlib.import_module(NEXMARK_MODULE)
    except ModuleNotFoundError:
        return None


def builtin_names() -> list[str]:
    """Every built-in plan name: the seeds, then the Nexmark queries if their module exists."""
    module = _nexmark()
    return [*SEEDS, *(module.DOCUMENTS if module is not None else [])]


def builtin(name: str) -> Plan:
    """The validated built-in plan `name` (`q1 q2 q3 smq`, `nexmark-q0` ... `nexmark-q8`)."""
    if name in SEEDS:
        return parse_plan(SEEDS[name]())
    module = _nexmark()
    if module is not None and name in module.DOCUMENTS:
        plan: Plan = module.nexmark_plan(name)
        return plan
    raise KeyError(f"unknown built-in plan {name!r}; known: {', '.join(builtin_names())}")
