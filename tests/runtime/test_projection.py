"""Projection: the fields a plan reads, and results unchanged when only those are decoded."""

from __future__ import annotations

import json

import pytest
from streamshift_engine.events import typed_json
from streamshift_engine.events.batch import Batch
from streamshift_engine.events.wire import decode_json, encode_json
from streamshift_engine.nexmark.config import GeneratorConfig
from streamshift_engine.nexmark.generator import generate
from streamshift_engine.plan import builtin, builtin_names, parse_plan
from streamshift_engine.plan.parse import input_document, plan_document
from streamshift_engine.runner import collect, run_plan
from streamshift_engine.runtime.projection import fields_read, input_schemas, projected

NEXMARK = [name for name in builtin_names() if name.startswith("nexmark-")]


def test_reads_what_operators_name_and_what_reaches_the_output() -> None:
    assert fields_read(builtin("nexmark-q5")) == {"bid": ("auction", "date_time")}
    assert fields_read(builtin("nexmark-q8")) == {
        "person": ("id", "name", "date_time"),
        "auction": ("date_time", "seller"),
    }
    everything = builtin("nexmark-q0").input("bid").schema
    assert fields_read(builtin("nexmark-q0")) == {"bid": tuple(everything)}


def test_a_filter_field_is_read_though_it_never_reaches_the_output() -> None:
    plan = parse_plan(
        {
            "name": "filtered",
            "inputs": [
                {
                    "name": "s",
                    "time_field": "ts",
                    "key_field": "k",
                    "schema": {"ts": "int", "k": "int", "flag": "int", "note": "str"},
                }
            ],
            "operators": [
                {"id": "f", "type": "filter", "input": "s", "params": {"predicate": "flag > 0"}},
                {"id": "p", "type": "project", "input": "f", "params": {"fields": {"k": "k"}}},
            ],
            "output": "p",
        }
    )
    assert fields_read(plan) == {"s": ("ts", "k", "flag")}


@pytest.mark.parametrize("name", NEXMARK)
def test_projected_input_gives_the_same_results(name: str) -> None:
    plan = builtin(name)
    events = generate(5, 0, 20_000, GeneratorConfig(partitions=2, events_per_second=200))
    inputs = {spec.name: events[spec.name] for spec in plan.inputs}
    reads = fields_read(plan)
    narrowed = {n: _only(b, reads[n]) for n, b in inputs.items()}
    assert any(len(narrowed[n].columns) < len(b.columns) for n, b in inputs.items()) or (
        name in ("nexmark-q0", "nexmark-q1", "nexmark-q7")
    )
    full, _ = run_plan(plan, {n: [b] for n, b in inputs.items()})
    narrow, _ = run_plan(projected(plan), {n: [b] for n, b in narrowed.items()})
    expected = sorted(json.dumps(r, sort_keys=True) for r in collect(full))
    assert expected and sorted(json.dumps(r, sort_keys=True) for r in collect(narrow)) == expected


@pytest.mark.parametrize("name", NEXMARK)
def test_input_schemas_read_the_projected_fields_and_let_records_take_the_typed_path(
    name: str,
) -> None:
    plan = builtin(name)
    events = generate(3, 0, 4000, GeneratorConfig(partitions=2))
    for spec, narrow in zip(plan.inputs, projected(plan).inputs, strict=True):
        schema = input_schemas(plan)[spec.name]
        assert dict(schema.fields) == dict(narrow.schema)
        assert dict(schema.fields + schema.unread) == dict(spec.schema)
        batch = events[spec.name]
        records = encode_json(batch)
        # the typed decoder accepts whole Nexmark records: the fast path is the one taken
        typed = typed_json.decode_columns(records, schema.fields + schema.unread, schema.fields)
        decoded, dead = decode_json(spec.name, records, batch.partition, batch.offset, schema)
        assert dead == [] and list(decoded.columns) == list(narrow.schema)
        for field in narrow.schema:
            assert typed[field].tolist() == batch.columns[field].tolist()
            assert decoded.columns[field].tolist() == batch.columns[field].tolist()


def _only(batch: Batch, names: tuple[str, ...]) -> Batch:
    columns = {n: c for n, c in batch.columns.items() if n in names}
    return Batch(batch.source, batch.ts, batch.partition, batch.offset, columns)


def test_the_projected_plan_keeps_each_input_watermark_strategy() -> None:
    """The worker runs the projected plan: an input's bounded out-of-orderness and far-future
    guard must survive the projection (they once fell back to the defaults)."""
    document = plan_document(builtin("nexmark-q5"))
    strategy = {"out_of_orderness": 2_000, "max_future": 60_000}
    document["inputs"] = [
        {**input_document(spec), "watermark": strategy} for spec in builtin("nexmark-q5").inputs
    ]
    plan = parse_plan(document)
    assert [spec.watermark for spec in projected(plan).inputs] == [
        spec.watermark for spec in plan.inputs
    ]
    assert plan.inputs[0].watermark.out_of_orderness == 2_000
