"""Compile a validated `Plan` into a `Pipeline` of operator instances."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from streamshift_engine.operators.auction_close import AuctionClose
from streamshift_engine.operators.base import Operator
from streamshift_engine.operators.joins import RangeJoin, RowsJoin
from streamshift_engine.operators.recent_aggregate import RecentAggregate
from streamshift_engine.operators.running_aggregate import RunningAggregate
from streamshift_engine.operators.stateful_map import StatefulMap
from streamshift_engine.operators.stateless import Filter, Map
from streamshift_engine.operators.topk import TopK
from streamshift_engine.operators.union import Union
from streamshift_engine.operators.window_join import TumblingWindowJoin
from streamshift_engine.pipeline import Pipeline
from streamshift_engine.plan.fields import FIELD_TYPES, window_spec
from streamshift_engine.plan.model import NodeInfo, OperatorSpec, Plan
from streamshift_engine.windows.aggregates import AggregateSpec
from streamshift_engine.windows.assigners import RowsWindows, SessionWindows, TimeWindows
from streamshift_engine.windows.rows_aggregate import RowsWindowAggregate
from streamshift_engine.windows.session_aggregate import SessionWindowAggregate
from streamshift_engine.windows.time_aggregate import TimeWindowAggregate


def compile_plan(plan: Plan) -> Pipeline:
    """One instance's pipeline for `plan` (operators hold no state yet)."""
    operators = [_build(spec, plan) for spec in plan.operators]
    edges: dict[str, list[tuple[int, int]]] = {}
    for index, spec in enumerate(plan.operators):
        for port, upstream in enumerate(spec.inputs):
            edges.setdefault(upstream, []).append((index, port))
    return Pipeline(plan.name, operators, edges, plan.output, plan.result_keys)


def origin(plan: Plan, node: str) -> str:
    """The node whose name the records reaching `node` carry as their source: the first node
    upstream that is not a filter or map (records keep their identity through those)."""
    operators = {op.id: op for op in plan.operators}
    while node in operators and operators[node].type in (
        "filter",
        "map",
        "project",
        "stateful_map",
    ):
        node = operators[node].inputs[0]
    return node


def extent(plan: Plan, node: str) -> int | None:
    """The most `max_ts - min_ts` of a record `node` emits (None: no bound known): 0 for an
    input's records, kept through filters, maps and unions, a range join's `W` for its results
    (`RangeJoin.joinable`)."""
    operators = {op.id: op for op in plan.operators}
    spec = operators.get(node)
    if spec is None:
        return 0
    if spec.type in ("filter", "map", "project", "stateful_map"):
        return extent(plan, spec.inputs[0])
    if spec.type == "union":
        extents = [extent(plan, name) for name in spec.inputs]
        return None if None in extents else max(e for e in extents if e is not None)
    window = plan.nodes[node].window
    if spec.type == "window_join" and window is not None and window.kind == "range":
        return int(window.size)
    return None


def _windowed(plan: Plan, node: str) -> bool:
    """Whether the records `node` emits carry window bounds."""
    for spec in plan.operators:
        if spec.id == node:
            window = plan.nodes[node].window
            kind = window.kind if window is not None else None
            return spec.type in ("window_aggregate", "topk") or kind == "time"
    return False


def _joins(plan: Plan, node: str) -> bool:
    return any(spec.id == node and spec.type == "window_join" for spec in plan.operators)


def _dtypes(info: NodeInfo) -> dict[str, Any]:
    return {name: FIELD_TYPES[kind] for name, kind in info.fields.items()}


def _build(spec: OperatorSpec, plan: Plan) -> Operator:
    params: Mapping[str, Any] = spec.params
    info = plan.nodes[spec.id]
    upstream = [plan.nodes[name] for name in spec.inputs]
    if spec.type == "union":
        return Union(spec.id, len(spec.inputs))
    if spec.type == "filter":
        return Filter(spec.id, params["predicate"])
    if spec.type in ("map", "project"):
        return Map(spec.id, params["fields"], keep_input=spec.type == "map")
    if spec.type == "stateful_map":
        return StatefulMap(spec.id, params["key"], params.get("output", "count"), info.keyed)
    if spec.type == "auction_close":
        carry = params.get("carry", [])
        carried = {n: _dtypes(upstream[0])[n] for n in carry}
        reserve, until = params.get("reserve", True), params.get("until", "expires")
        return AuctionClose(spec.id, carry, carried, reserve, until)
    if spec.type == "topk":
        window = window_spec(spec.id, params["window"], ("time",)) if "window" in params else None
        return TopK(
            spec.id,
            source=origin(plan, spec.inputs[0]),
            by=params["by"],
            k=params.get("k", 1),
            keep_ties=params.get("ties", "all") == "all",
            group_by=params.get("group_by", []),
            windows=TimeWindows(window.size, window.slide) if window else None,
            field_dtypes=_dtypes(upstream[0]),
            identify=not upstream[0].result_keys,
            keyed=info.keyed,
        )
    if spec.type == "window_join":
        on = [(pair[0], pair[1]) for pair in params["on"]]
        window = info.window
        assert window is not None
        fields = [list(side.fields) for side in upstream]
        keys = [side.result_keys for side in upstream]
        if window.kind == "time":
            dtypes = [_dtypes(side) for side in upstream]
            origins = [origin(plan, name) for name in spec.inputs]
            # a join's results are named by their base tuples alone, whatever window they had
            windowed = [_windowed(plan, name) and not _joins(plan, name) for name in origins]
            return TumblingWindowJoin(
                spec.id, spec.inputs, on, window.size, dtypes, keys, origins, windowed, info.keyed,
                window.slide,
            )  # fmt: skip
        if window.kind == "range":
            first, second = (extent(plan, name) for name in spec.inputs)
            return RangeJoin(
                spec.id, spec.inputs, on, window.size, fields, keys, info.keyed, (first, second)
            )
        return RowsJoin(spec.id, spec.inputs, on, window.size, fields, keys, info.keyed)
    aggregates = [
        AggregateSpec(a.get("name", a["fn"]), a["fn"], a.get("field")) for a in params["aggregates"]
    ]
    group_by = params.get("group_by", [])
    if spec.type == "running_aggregate":
        if "last" in params:
            last = params["last"]
            rows, by = last["rows"], last.get("by", [])
            return RecentAggregate(spec.id, group_by, aggregates, info.keyed, rows, by)
        return RunningAggregate(spec.id, group_by, aggregates, info.keyed)
    window = info.window
    assert window is not None and spec.type == "window_aggregate"
    if window.kind == "time":
        windows = TimeWindows(window.size, window.slide)
        return TimeWindowAggregate(
            spec.id, windows, group_by, aggregates, _dtypes(upstream[0]), info.keyed
        )
    if window.kind == "rows":
        return RowsWindowAggregate(
            spec.id,
            RowsWindows(window.size, window.slide),
            group_by,
            aggregates,
            upstream[0].result_keys,
            info.keyed,
        )
    return SessionWindowAggregate(
        spec.id, SessionWindows(window.size), group_by, aggregates, info.keyed
    )
