"""Per operator type: check a node's params against its upstream fields and describe its output.

Each validator returns the `NodeInfo` of the node's output stream (fields and types, the field
that still carries the partition key, the fields that key its results, whether its state is
keyed by the partition key, and its window), or raises `PlanError` naming node and field.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from streamshift_engine.plan.errors import PlanError
from streamshift_engine.plan.fields import AGGREGATES, expression_type, window_spec
from streamshift_engine.plan.model import NodeInfo

Validator = Callable[[str, Sequence[NodeInfo], Sequence[str], Mapping[str, Any]], NodeInfo]


def _single(node: str, upstream: Sequence[NodeInfo]) -> NodeInfo:
    if len(upstream) != 1:
        raise PlanError(node, "input", f"takes one input, got {len(upstream)}")
    return upstream[0]


def _field_list(node: str, key: str, raw: Any, fields: Mapping[str, str]) -> tuple[str, ...]:
    if not isinstance(raw, list) or not all(isinstance(name, str) for name in raw):
        raise PlanError(node, key, "must be a list of field names")
    for name in raw:
        if name not in fields:
            raise PlanError(node, key, f"unknown field {name!r}")
    return tuple(raw)


def _filter(
    node: str, up: Sequence[NodeInfo], _: Sequence[str], params: Mapping[str, Any]
) -> NodeInfo:
    source = _single(node, up)
    if expression_type(node, "params.predicate", params.get("predicate"), source.fields) != "bool":
        raise PlanError(node, "params.predicate", "must be a condition (true or false)")
    return NodeInfo(source.fields, source.key_field, source.result_keys, True, source.window)


def _computed(node: str, source: NodeInfo, params: Mapping[str, Any]) -> dict[str, str]:
    computed = params.get("fields")
    if not isinstance(computed, Mapping) or not computed:
        raise PlanError(node, "params.fields", "must map new field names to expressions")
    return {
        name: expression_type(node, f"params.fields.{name}", text, source.fields)
        for name, text in computed.items()
    }


def _map(
    node: str, up: Sequence[NodeInfo], _: Sequence[str], params: Mapping[str, Any]
) -> NodeInfo:
    source = _single(node, up)
    computed = _computed(node, source, params)
    key = None if source.key_field in computed else source.key_field
    return NodeInfo({**source.fields, **computed}, key, source.result_keys, True, source.window)


def _project(
    node: str, up: Sequence[NodeInfo], _: Sequence[str], params: Mapping[str, Any]
) -> NodeInfo:
    source = _single(node, up)
    computed = _computed(node, source, params)
    raw = params.get("fields", {})
    key = next((n for n, text in raw.items() if text == source.key_field), None)
    result_keys = tuple(k for k in source.result_keys if raw.get(k) == k)
    return NodeInfo(computed, key, result_keys, True, source.window)


def _window_aggregate(
    node: str, up: Sequence[NodeInfo], _: Sequence[str], params: Mapping[str, Any]
) -> NodeInfo:
    source = _single(node, up)
    window = window_spec(node, params.get("window"), ("time", "rows", "session"))
    group_by = _field_list(node, "params.group_by", params.get("group_by", []), source.fields)
    aggregates = params.get("aggregates")
    if not isinstance(aggregates, list) or not aggregates:
        raise PlanError(node, "params.aggregates", "must be a non-empty list")
    fields = {name: source.fields[name] for name in group_by}
    for i, aggregate in enumerate(aggregates):
        where = f"params.aggregates[{i}]"
        if not isinstance(aggregate, Mapping):
            raise PlanError(node, where, "must be a mapping with name, fn and field")
        function = aggregate.get("fn")
        if function not in AGGREGATES:
            raise PlanError(node, f"{where}.fn", f"unknown aggregate {function!r}")
        name = aggregate.get("name", function)
        if not isinstance(name, str) or name in fields:
            raise PlanError(node, f"{where}.name", f"missing or duplicate name {name!r}")
        if function == "count":
            fields[name] = "int"
            continue
        field = aggregate.get("field")
        if not isinstance(field, str) or field not in source.fields:
            raise PlanError(node, f"{where}.field", f"unknown field {field!r}")
        if source.fields[field] not in ("int", "float"):
            raise PlanError(node, f"{where}.field", f"field {field!r} is not numeric")
        fields[name] = "float" if function == "avg" else source.fields[field]
    keyed = source.key_field is not None and source.key_field in group_by
    result_keys = group_by + (("row",) if window.kind == "rows" else ())
    if window.kind == "rows":
        fields["row"] = "str"
    key = source.key_field if keyed else None
    return NodeInfo(fields, key, result_keys, keyed, window)


def _window_join(
    node: str, up: Sequence[NodeInfo], names: Sequence[str], params: Mapping[str, Any]
) -> NodeInfo:
    if len(up) != 2:
        raise PlanError(node, "inputs", f"a join takes two inputs, got {len(up)}")
    window = window_spec(node, params.get("window"), ("range", "time", "rows"))
    pairs = params.get("on")
    if not isinstance(pairs, list) or not pairs:
        raise PlanError(node, "params.on", "must list [left_field, right_field] pairs")
    for i, pair in enumerate(pairs):
        if not isinstance(pair, list) or len(pair) != 2:
            raise PlanError(node, f"params.on[{i}]", "must be [left_field, right_field]")
        for side, name in enumerate(pair):
            if name not in up[side].fields:
                raise PlanError(node, f"params.on[{i}]", f"unknown field {name!r} of {names[side]}")
    left, right = up
    fields = {f"{names[0]}.{n}": t for n, t in left.fields.items()}
    fields.update({f"{names[1]}.{n}": t for n, t in right.fields.items()})
    fields["id"] = "str"
    keyed = [left.key_field, right.key_field] in pairs
    key = f"{names[0]}.{left.key_field}" if keyed else None
    return NodeInfo(fields, key, ("id",), keyed, window)


def _stateful_map(
    node: str, up: Sequence[NodeInfo], _: Sequence[str], params: Mapping[str, Any]
) -> NodeInfo:
    source = _single(node, up)
    key = params.get("key")
    if key not in source.fields:
        raise PlanError(node, "params.key", f"unknown field {key!r}")
    output = params.get("output", "count")
    if not isinstance(output, str) or output in source.fields:
        raise PlanError(node, "params.output", f"missing or clashing output field {output!r}")
    keyed = key == source.key_field
    return NodeInfo({**source.fields, output: "int"}, source.key_field, source.result_keys, keyed)


def _topk(
    node: str, up: Sequence[NodeInfo], _: Sequence[str], params: Mapping[str, Any]
) -> NodeInfo:
    source = _single(node, up)
    by = params.get("by")
    if not isinstance(by, str) or source.fields.get(by) not in ("int", "float"):
        raise PlanError(node, "params.by", f"must name a numeric field, got {by!r}")
    k = params.get("k", 1)
    if isinstance(k, bool) or not isinstance(k, int) or k <= 0:
        raise PlanError(node, "params.k", f"must be a positive integer, got {k!r}")
    if params.get("ties", "all") not in ("all", "first"):
        raise PlanError(node, "params.ties", "must be all or first")
    group_by = _field_list(node, "params.group_by", params.get("group_by", []), source.fields)
    window = source.window
    if "window" in params:
        window = window_spec(node, params["window"], ("time",))
    if window is None or window.kind != "time":
        raise PlanError(node, "params.window", "needs a time window, its own or its input's")
    keyed = source.key_field is not None and source.key_field in group_by
    if source.result_keys:
        return NodeInfo(source.fields, source.key_field, source.result_keys, keyed, window)
    fields = {**source.fields, "id": "str"}
    return NodeInfo(fields, source.key_field, ("id",), keyed, window)


AUCTION_FIELDS = ("id", "expires", "reserve")
BID_FIELDS = ("auction", "price", "bidder")


def _auction_close(
    node: str, up: Sequence[NodeInfo], names: Sequence[str], params: Mapping[str, Any]
) -> NodeInfo:
    if len(up) != 2:
        raise PlanError(node, "inputs", f"takes auctions then bids, got {len(up)} inputs")
    for side, required in enumerate((AUCTION_FIELDS, BID_FIELDS)):
        for name in required:
            if up[side].fields.get(name) != "int":
                raise PlanError(node, "inputs", f"{names[side]} needs an int field {name!r}")
    carry = _field_list(node, "params.carry", params.get("carry", []), up[0].fields)
    if not isinstance(params.get("reserve", True), bool):
        raise PlanError(node, "params.reserve", "must be true or false")
    if params.get("until", "expires") not in ("expires", "before_expires"):
        raise PlanError(node, "params.until", "must be expires or before_expires")
    fields = {"auction": "int", **{name: up[0].fields[name] for name in carry}}
    for name in ("price", "bidder"):
        if name in fields:
            raise PlanError(node, "params.carry", f"field {name!r} clashes with the winning bid")
        fields[name] = "int"
    return NodeInfo(fields, None, ("auction",), False)


def _running_aggregate(
    node: str, up: Sequence[NodeInfo], names: Sequence[str], params: Mapping[str, Any]
) -> NodeInfo:
    source = _single(node, up)
    if "window" in params:
        raise PlanError(node, "params.window", "a running aggregate has no window")
    if "last" in params:
        last = params["last"]
        rows = last.get("rows") if isinstance(last, dict) else None
        if isinstance(rows, bool) or not isinstance(rows, int) or rows <= 0:
            raise PlanError(node, "params.last.rows", f"must be a positive integer, got {rows!r}")
        _field_list(node, "params.last.by", last.get("by", []), source.fields)
    info = _window_aggregate(node, up, names, {**params, "window": {"kind": "time", "size": 1}})
    if "at" in info.fields:
        raise PlanError(node, "params", "the field name 'at' is reserved for the update time")
    fields = {**{g: source.fields[g] for g in info.result_keys}, "at": "int"}
    fields.update({n: t for n, t in info.fields.items() if n not in info.result_keys})
    return NodeInfo(fields, info.key_field, (*info.result_keys, "at"), info.keyed)


def _union(
    node: str, up: Sequence[NodeInfo], names: Sequence[str], params: Mapping[str, Any]
) -> NodeInfo:
    """Two or more distinct streams of records (inputs, or their filters and maps) with the same
    fields and types; the key field stays where all of them have the same one."""
    if len(up) < 2 or len(set(names)) != len(names):
        raise PlanError(node, "inputs", f"a union takes two or more distinct inputs, got {names}")
    if params:
        raise PlanError(node, "params", f"a union takes no params, got {sorted(params)}")
    first = dict(up[0].fields)
    for name, info in zip(names, up, strict=True):
        if info.result_keys or info.window is not None:
            raise PlanError(node, "inputs", f"{name} is a stream of results, not of records")
        fields = dict(info.fields)
        if fields != first:
            differ = sorted(set(fields.items()) ^ set(first.items()))
            raise PlanError(
                node,
                "inputs",
                f"{name} differs in fields from {names[0]} "
                f"({', '.join(f'{n}: {t}' for n, t in differ)}): a union needs the same fields",
            )
    keys = {info.key_field for info in up}
    return NodeInfo(first, keys.pop() if len(keys) == 1 else None, (), True, None)


VALIDATORS: dict[str, Validator] = {
    "union": _union,
    "filter": _filter,
    "map": _map,
    "project": _project,
    "window_aggregate": _window_aggregate,
    "window_join": _window_join,
    "stateful_map": _stateful_map,
    "topk": _topk,
    "auction_close": _auction_close,
    "running_aggregate": _running_aggregate,
}
