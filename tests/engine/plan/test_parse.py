"""Plan parsing: what a Plan reports, and PlanError naming the node and field at fault."""

from __future__ import annotations

import copy
from typing import Any

import pytest
import yaml
from streamshift_engine.plan import PlanError, builtin, builtin_names, parse_plan
from streamshift_engine.plan.parse import plan_document

GOOD: dict[str, Any] = {
    "name": "good",
    "inputs": [
        {
            "name": "S",
            "topic": "s",
            "time_field": "ts",
            "key_field": "k",
            "schema": {"ts": "int", "k": "int", "v": "float", "c": "str"},
        }
    ],
    "operators": [
        {"id": "f", "type": "filter", "input": "S", "params": {"predicate": "c in ['a', 'b']"}},
        {
            "id": "w",
            "type": "window_aggregate",
            "input": "f",
            "params": {
                "window": {"kind": "time", "size": 10000, "slide": 2000},
                "group_by": ["k"],
                "aggregates": [{"name": "total", "fn": "sum", "field": "v"}],
            },
        },
    ],
    "output": "w",
}


def broken(path: list[Any], value: Any) -> dict[str, Any]:
    document = copy.deepcopy(GOOD)
    target = document
    for step in path[:-1]:
        target = target[step]
    target[path[-1]] = value
    return document


def test_a_valid_plan_reports_its_window_keying_and_joins() -> None:
    plan = parse_plan(yaml.safe_dump(GOOD))
    assert plan.input("S").topic == "s"
    assert plan.controlling_window is not None
    assert (
        plan.controlling_window.kind,
        plan.controlling_window.size,
        plan.controlling_window.slide,
    ) == ("time", 10000, 2000)
    assert plan.keyed and not plan.joins and not plan.unbounded_state
    assert plan.result_keys == ("k",)


@pytest.mark.parametrize(
    ("path", "value", "node", "field"),
    [
        (["operators", 0, "params", "predicate"], "c in ['a'", "f", "params.predicate"),
        (["operators", 0, "params", "predicate"], "price > 3", "f", "params.predicate"),
        (["operators", 0, "params", "predicate"], "v + 1", "f", "params.predicate"),
        (["operators", 1, "params", "window"], {"kind": "hopping", "size": 1}, "w", "window.kind"),
        (["operators", 1, "params", "window"], {"kind": "time", "size": -5}, "w", "window.size"),
        (
            ["operators", 1, "params", "window"],
            {"kind": "time", "size": 5, "slide": 9},
            "w",
            "window.slide",
        ),
        (
            ["operators", 1, "params", "aggregates"],
            [{"fn": "median", "field": "v"}],
            "w",
            "params.aggregates[0].fn",
        ),
        (
            ["operators", 1, "params", "aggregates"],
            [{"fn": "sum", "field": "c"}],
            "w",
            "params.aggregates[0].field",
        ),
        (["operators", 1, "params", "group_by"], ["nope"], "w", "params.group_by"),
        (["operators", 1, "input"], "missing", "w", "input"),
        (["operators", 1, "type"], "teleport", "w", "type"),
        (["inputs", 0, "time_field"], "when", "S", "time_field"),
        (["inputs", 0, "schema", "v"], "decimal", "S", "schema.v"),
        (["output"], "nowhere", "plan", "output"),
    ],
)
def test_plan_errors_name_the_node_and_field(
    path: list[Any], value: Any, node: str, field: str
) -> None:
    with pytest.raises(PlanError) as raised:
        parse_plan(broken(path, value))
    assert (raised.value.node, raised.value.field) == (node, field)
    assert f"{node}.{field}" in str(raised.value)


def test_join_errors_name_the_side_field() -> None:
    document = builtin("q1")
    assert document.joins and document.keyed
    q1 = {
        "name": "bad",
        "output": "j",
        "inputs": [
            {"name": n, "time_field": "ts", "key_field": "l", "schema": {"ts": "int", "l": "int"}}
            for n in "ST"
        ],
        "operators": [
            {
                "id": "j",
                "type": "window_join",
                "inputs": ["S", "T"],
                "params": {"window": {"kind": "range", "size": 10}, "on": [["l", "x"]]},
            }
        ],
    }
    with pytest.raises(PlanError, match=r"j\.params\.on\[0\].*'x' of T"):
        parse_plan(q1)


def test_builtins_cover_the_seed_queries_and_their_semantics() -> None:
    assert {"q1", "q2", "q3", "smq"} <= set(builtin_names())
    q2, q3, smq = builtin("q2"), builtin("q3"), builtin("smq")
    assert q2.controlling_window is not None and q2.controlling_window.kind == "rows"
    assert not q2.keyed and not q3.keyed
    assert q3.joins and q3.controlling_window == q2.controlling_window
    assert smq.unbounded_state and smq.keyed
    with pytest.raises(KeyError):
        builtin("q42")


@pytest.mark.parametrize("name", ["q3", "smq", "nexmark-q5", "nexmark-q8"])
def test_plan_document_reads_back_as_the_same_plan(name: str) -> None:
    document = plan_document(builtin(name))
    assert plan_document(parse_plan(document)) == document
