"""Parse and validate a query plan given as YAML text, JSON text or a mapping.

Layout::

    name: q1
    inputs:                      # one entry per input stream
      - {name: S, topic: s, time_field: ts, key_field: l, schema: {ts: int, l: int, m: int},
         watermark: {out_of_orderness: 2000}}   # optional, see below
    operators:                   # a DAG in topological order; `input` or `inputs` name upstreams
      - {id: f, type: filter, input: S, params: {predicate: "m > 3 and l in [1, 2]"}}
    output: f                    # the node whose stream is the query's result

Operator types and params (expressions use `plan.expressions`):

- `filter`: `predicate`.  `map`: `fields: {name: expr}` added to the record.  `project`: the same,
  keeping only those fields.
- `window_aggregate`: `window` (`{kind: time, size, slide}` in ms, `{kind: rows, size, slide}`
  in tuples, or `{kind: session, gap}`), `group_by: [fields]`, `aggregates: [{name, fn, field}]`
  with fn in count, sum, min, max, avg.
- `window_join` (two inputs, left then right): `window` (`{kind: range, size}`: symmetric join of
  tuples at most `size` ms apart, seed 001 (Zhu et al., Dynamic Plan Migration) section 2;
  `{kind: time, size}`: tumbling windows; `{kind: rows, size}`: the last `size` tuples of each
  side), `on: [[left_field, right_field]]`. Output fields are prefixed with the upstream node's
  name: `S.m`, `T.l`. `{kind: time, size, slide}` with `slide < size`: sliding windows (Flink's
  sliding window join): per window, the pairs of its records; a pair in several windows joins in
  each.
- `union` (two or more `inputs`, no params): the records of streams with the same fields, merged
  (`UNION ALL`); each keeps its partition and event time.
- `stateful_map`: `key`, `output` (default `count`): a per-key counter (SMQ, seed 003 (Bartnik et
  al., On-the-fly Reconfiguration) 6.3.1).
- `topk`: `by`, `k` (default 1), `ties` (`all` or `first`), `group_by`, and optionally its own
  time `window`; otherwise it ranks within the windows of its (windowed) input.
- `auction_close` (two inputs: auctions with int `id`, `expires`, `reserve`, then bids with int
  `auction`, `price`, `bidder`): `carry: [auction fields]`, `reserve` (default true: bids
  below it do not count), `until` (`expires`, default: bids up to and at `expires` count;
  `before_expires`); per auction its winning bid (`auction`, the carried fields, `price`,
  `bidder`) at `expires` (Nexmark q4, q6). Global.
- `running_aggregate`: `group_by`, `aggregates` as above, no window: per group, the aggregates
  over all records so far at each event time `at` where they change; with `last: {rows: n,
  by: [fields]}`, over the group's last `n` records by (`_max_ts`, those fields) (q6).

An input's optional `watermark` is its watermark strategy (`model.WatermarkSpec`):
`out_of_orderness` and `allowed_lateness` in ms (non-negative integers, default 0),
`idle_timeout` in seconds (positive, default none) and `max_future` in ms (a positive integer
above the other two together, default none: off). Without it an input keeps the strictest
strategy: a record below its partition's largest event time is late.

Every error is a `PlanError` naming the node and the field at fault.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

import yaml

from streamshift_engine.plan.errors import PlanError
from streamshift_engine.plan.fields import FIELD_TYPES, positive
from streamshift_engine.plan.model import (
    InputSpec,
    NodeInfo,
    OperatorSpec,
    Plan,
    WatermarkSpec,
)
from streamshift_engine.plan.validate import VALIDATORS


def parse_plan(source: str | Mapping[str, Any]) -> Plan:
    """Validate a plan document (YAML or JSON text, or an already loaded mapping)."""
    document: Any = source
    if isinstance(source, str):
        try:
            document = (
                json.loads(source) if source.lstrip().startswith("{") else yaml.safe_load(source)
            )
        except (ValueError, yaml.YAMLError) as error:
            raise PlanError("plan", "document", f"not valid YAML or JSON: {error}") from error
    if not isinstance(document, Mapping):
        raise PlanError("plan", "document", "must be a mapping")
    name = _string(document, "name", "plan")
    raw_inputs = document.get("inputs")
    if not isinstance(raw_inputs, list) or not raw_inputs:
        raise PlanError("plan", "inputs", "must be a non-empty list")
    inputs = tuple(_input(raw, i) for i, raw in enumerate(raw_inputs))
    nodes: dict[str, NodeInfo] = {}
    for spec in inputs:
        if spec.name in nodes:
            raise PlanError(spec.name, "name", "duplicate input name")
        nodes[spec.name] = NodeInfo(dict(spec.schema), spec.key_field, ())
    raw_operators = document.get("operators", [])
    if not isinstance(raw_operators, list):
        raise PlanError("plan", "operators", "must be a list")
    operators = []
    for i, raw in enumerate(raw_operators):
        operator = _operator(raw, i, nodes)
        operators.append(operator)
    output = document.get("output")
    if isinstance(output, Mapping):
        output = output.get("from")
    if not isinstance(output, str) or output not in nodes:
        raise PlanError("plan", "output", f"must name an input or operator, got {output!r}")
    return Plan(name, inputs, tuple(operators), output, nodes)


def plan_document(plan: Plan) -> dict[str, Any]:
    """The document `parse_plan` reads back as `plan` (inputs, operators, output)."""
    return {
        "name": plan.name,
        "inputs": [input_document(spec) for spec in plan.inputs],
        "operators": [
            {"id": op.id, "type": op.type, "inputs": list(op.inputs), "params": op.params}
            for op in plan.operators
        ],
        "output": plan.output,
    }


def input_document(spec: InputSpec) -> dict[str, Any]:
    """The document of one input; `watermark` only where it is not the default."""
    document: dict[str, Any] = {
        "name": spec.name,
        "topic": spec.topic,
        "time_field": spec.time_field,
        "key_field": spec.key_field,
        "schema": dict(spec.schema),
    }
    if spec.watermark != WatermarkSpec():
        strategy = vars(spec.watermark)
        document["watermark"] = {k: v for k, v in strategy.items() if v is not None}
    return document


def _string(raw: Mapping[str, Any], key: str, node: str, default: str | None = None) -> str:
    value = raw.get(key, default)
    if not isinstance(value, str) or not value:
        raise PlanError(node, key, f"must be a non-empty string, got {value!r}")
    return value


def _input(raw: Any, index: int) -> InputSpec:
    if not isinstance(raw, Mapping):
        raise PlanError(f"inputs[{index}]", "input", "must be a mapping")
    name = _string(raw, "name", f"inputs[{index}]")
    schema = raw.get("schema")
    if not isinstance(schema, Mapping) or not schema:
        raise PlanError(name, "schema", "must map field names to types")
    for field_name, field_type in schema.items():
        if field_type not in FIELD_TYPES:
            raise PlanError(name, f"schema.{field_name}", f"unknown type {field_type!r}")
    time_field = _string(raw, "time_field", name)
    key_field = _string(raw, "key_field", name)
    for key, value in (("time_field", time_field), ("key_field", key_field)):
        if value not in schema:
            raise PlanError(name, key, f"field {value!r} is not in the schema")
    topic = _string(raw, "topic", name, name)
    strategy = watermark_spec(name, raw.get("watermark", {}))
    return InputSpec(name, topic, time_field, key_field, dict(schema), strategy)


def watermark_spec(node: str, raw: Any) -> WatermarkSpec:
    """Validate an input's `watermark` strategy (layout in the module docstring)."""
    if not isinstance(raw, Mapping):
        raise PlanError(node, "watermark", "must be a mapping")
    unknown = sorted(set(raw) - set(vars(WatermarkSpec())))
    if unknown:
        raise PlanError(node, f"watermark.{unknown[0]}", "unknown watermark setting")
    bounds = {}
    for key in ("out_of_orderness", "allowed_lateness"):
        value = raw.get(key, 0)
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise PlanError(
                node, f"watermark.{key}", f"must be a non-negative integer (ms), got {value!r}"
            )
        bounds[key] = value
    idle = raw.get("idle_timeout")
    if idle is not None and (
        isinstance(idle, bool) or not isinstance(idle, (int, float)) or idle <= 0
    ):
        raise PlanError(
            node, "watermark.idle_timeout", f"must be a positive number (s), got {idle!r}"
        )
    strategy = WatermarkSpec(
        bounds["out_of_orderness"],
        bounds["allowed_lateness"],
        None if idle is None else float(idle),
    )
    if raw.get("max_future") is not None:
        future = positive(raw, "max_future", node, prefix="watermark.")
        if future <= strategy.delay:
            raise PlanError(
                node,
                "watermark.max_future",
                f"{future} must exceed out_of_orderness + allowed_lateness ({strategy.delay})",
            )
        strategy = replace(strategy, max_future=future)
    return strategy


def _operator(raw: Any, index: int, nodes: dict[str, NodeInfo]) -> OperatorSpec:
    if not isinstance(raw, Mapping):
        raise PlanError(f"operators[{index}]", "operator", "must be a mapping")
    op_id = _string(raw, "id", f"operators[{index}]")
    if op_id in nodes:
        raise PlanError(op_id, "id", "duplicate node id")
    op_type = _string(raw, "type", op_id)
    upstream = raw.get("inputs", [raw["input"]] if "input" in raw else None)
    if not isinstance(upstream, list) or not upstream:
        raise PlanError(op_id, "input", "must name an upstream node")
    for name in upstream:
        if name not in nodes:
            raise PlanError(op_id, "input", f"unknown upstream node {name!r}")
    params = raw.get("params", {})
    if not isinstance(params, Mapping):
        raise PlanError(op_id, "params", "must be a mapping")
    validator = VALIDATORS.get(op_type)
    if validator is None:
        raise PlanError(op_id, "type", f"unknown operator type {op_type!r}")
    nodes[op_id] = validator(op_id, [nodes[name] for name in upstream], list(upstream), params)
    return OperatorSpec(op_id, op_type, tuple(upstream), dict(params))
