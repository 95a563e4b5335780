"""Multi-way window joins as trees of binary range joins, in any join order (seed 001 (Zhu et al.,
Dynamic Plan Migration), 2.1).

`A join B join C [Range W]` with one global window constraint (every pair of the combined tuples
lies within `W`) is a binary tree of symmetric range joins, each keeping its two window states;
a combined tuple carries the min and max timestamp of its parts and is purged by lemma 2.2. Any
tree over the same streams gives the same result set, which is what a plan migration (new join
order) needs: `join_tree_plan` builds the plan for one order, ends it with a projection to field
names that do not depend on the order (`S.m`, not `join_ST.S.m`), and the joins name results by
their base tuples' sorted ids (`operators.joins`), so two orders give identical results. So do
trees of tumbling time-window joins (`kind="time"`: the tuples of one window join).

A tree is a stream name or a pair of trees: `(("S", "T"), "U")` joins S with T first.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeAlias

from streamshift_engine.plan.model import Plan
from streamshift_engine.plan.parse import parse_plan

JoinTree: TypeAlias = str | tuple["JoinTree", "JoinTree"]


def streams(tree: JoinTree) -> list[str]:
    """The tree's streams, left to right."""
    if isinstance(tree, str):
        return [tree]
    return [*streams(tree[0]), *streams(tree[1])]


def node_name(tree: JoinTree) -> str:
    """The plan node of a sub-tree: the stream itself, or `join_` and its streams in order."""
    return tree if isinstance(tree, str) else "join_" + "".join(streams(tree))


def _field_path(tree: JoinTree, stream: str, field: str) -> str:
    """Where `stream.field` sits among the output fields of `tree`'s node."""
    if isinstance(tree, str):
        return field
    for child in tree:
        if stream in streams(child):
            inner = _field_path(child, stream, field)
            return f"{node_name(child)}.{inner}"
    raise KeyError(stream)


def _joins(tree: JoinTree, key: str, window: dict[str, Any]) -> list[dict[str, Any]]:
    if isinstance(tree, str):
        return []
    left, right = tree
    on = [_field_path(left, streams(left)[0], key), _field_path(right, streams(right)[0], key)]
    join = {
        "id": node_name(tree),
        "type": "window_join",
        "inputs": [node_name(left), node_name(right)],
        "params": {"window": window, "on": [on]},
    }
    return [*_joins(left, key, window), *_joins(right, key, window), join]


def join_tree_plan(
    name: str,
    tree: JoinTree,
    window_ms: int,
    key: str,
    schema: Mapping[str, str],
    kind: str = "range",
) -> Plan:
    """The plan joining the tree's streams (each with `schema`, keyed and joined on `key`, event
    time in `ts`) in the tree's order, every join with a `kind` window (`range`, or `time`:
    tumbling windows, the tuples of one window joined) of `window_ms`. Inputs are listed by
    name, so every order reads them alike; output fields are `<stream>.<field>` and `id`."""
    if isinstance(tree, str):
        raise ValueError("a join tree needs at least two streams")
    names = streams(tree)
    inputs = [
        {"name": s, "topic": s.lower(), "time_field": "ts", "key_field": key, "schema": schema}
        for s in sorted(names)
    ]
    fields = {f"{s}.{f}": _field_path(tree, s, f) for s in sorted(names) for f in schema}
    output = {
        "id": "output",
        "type": "project",
        "input": node_name(tree),
        "params": {"fields": {**fields, "id": "id"}},
    }
    return parse_plan(
        {
            "name": name,
            "inputs": inputs,
            "operators": [*_joins(tree, key, {"kind": kind, "size": window_ms}), output],
            "output": "output",
        }
    )
