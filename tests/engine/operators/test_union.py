"""`union`: the merged stream is every input record once, renamed by the union, whatever the
slicing of the input, a restore or a partition split; a union feeding a window aggregate equals
the aggregate over all inputs' records; inputs with different fields are refused."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from streamshift_engine.plan import parse_plan
from streamshift_engine.plan.errors import PlanError
from streamshift_engine.plan.model import Plan

from engine import references
from engine.harness import Record, Run, canonical, partitioned_records
from engine.plans import AGGREGATES, SCHEMA

PARTITIONS = 2
INPUTS = ["S", "T", "U"]
FIELDS = {"k": st.integers(0, 2), "v": st.integers(0, 9)}


def union_plan(downstream: dict[str, Any] | None = None) -> Plan:
    """Inputs S, T and U merged by union `u`, optionally feeding `downstream` (node `w`)."""
    inputs = [{"name": n, "time_field": "ts", "key_field": "k", "schema": SCHEMA} for n in INPUTS]
    operators: list[dict[str, Any]] = [{"id": "u", "type": "union", "inputs": INPUTS}]
    if downstream is not None:
        operators.append({"id": "w", "input": "u", **downstream})
    output = "w" if downstream else "u"
    return parse_plan({"name": "q", "inputs": inputs, "operators": operators, "output": output})


def renamed(records: list[Record]) -> list[Record]:
    """Each record as the union names it: `u@partition:offset*3+input index`."""
    return [
        Record("u", r.partition, r.offset * len(INPUTS) + INPUTS.index(r.source), r.ts, r.fields)
        for r in records
    ]


def as_results(records: list[Record]) -> list[tuple[Any, ...]]:
    """The union's output in the canonical result form: every record, with its fields."""
    rows = []
    for r in records:
        values = tuple(sorted({"id": r.identity, "ts": r.ts, **r.fields}.items()))
        rows.append((f"q|-1|-1|{r.identity}", -1, -1, r.ts, r.ts, values))
    return sorted(rows)


records = partitioned_records(INPUTS, PARTITIONS, FIELDS, max_records=12)


@settings(max_examples=50, deadline=None)
@given(records=records, chunk=st.integers(1, 5), cut=st.integers(0, 6))
def test_union_is_the_sorted_concatenation_under_any_slicing(
    records: list[Record], chunk: int, cut: int
) -> None:
    expected = as_results(renamed(records))
    assert len(expected) == len(records)
    run = Run(union_plan(), records, chunk, range(PARTITIONS))
    assert canonical(run.straight()) == expected
    assert canonical(run.restarted(cut)) == expected
    assert canonical(run.split(cut, {1})) == expected


@settings(max_examples=50, deadline=None)
@given(
    records=records,
    size_slide=st.sampled_from([(4000, 4000), (6000, 2000)]),
    keyed=st.booleans(),
    chunk=st.integers(1, 5),
    cut=st.integers(0, 6),
)
def test_union_feeding_a_time_aggregate_aggregates_all_inputs(
    records: list[Record], size_slide: tuple[int, int], keyed: bool, chunk: int, cut: int
) -> None:
    size, slide = size_slide
    group_by = ["k"] if keyed else []
    aggregate = {
        "type": "window_aggregate",
        "params": {
            "window": {"kind": "time", "size": size, "slide": slide},
            "group_by": group_by,
            "aggregates": [{"name": n, "fn": f, "field": x} for n, f, x in AGGREGATES],
        },
    }
    expected = references.time_windows("q", renamed(records), size, slide, group_by, AGGREGATES)
    run = Run(union_plan(aggregate), records, chunk, range(PARTITIONS))
    assert canonical(run.straight()) == expected
    assert canonical(run.restarted(cut)) == expected
    if keyed:
        assert canonical(run.split(cut, {0})) == expected


def test_union_of_inputs_with_different_fields_is_refused() -> None:
    inputs = [
        {"name": "S", "time_field": "ts", "key_field": "k", "schema": SCHEMA},
        {"name": "T", "time_field": "ts", "key_field": "k", "schema": {**SCHEMA, "v": "float"}},
    ]
    document = {
        "name": "q",
        "inputs": inputs,
        "operators": [{"id": "u", "type": "union", "inputs": ["S", "T"]}],
        "output": "u",
    }
    differ = r"u\.inputs: T differs in fields from S \(v: float, v: int"
    with pytest.raises(PlanError, match=differ):
        parse_plan(document)
    document["operators"] = [{"id": "u", "type": "union", "inputs": ["S"]}]
    with pytest.raises(PlanError, match="two or more distinct inputs"):
        parse_plan(document)


def rows_sums(records: list[Record], size: int) -> list[tuple[Any, ...]]:
    """A global `ROWS size` sum of `v` over the union, sliding by one tuple: the records in the
    merge order of the inputs `(ts, input index, partition, offset)`."""
    ordered = sorted(records, key=lambda r: (r.ts, INPUTS.index(r.source), r.partition, r.offset))
    window: list[Record] = []
    rows = []
    for named in renamed(ordered):
        window = [*window, named][-size:]
        start, end = window[0].ts, named.ts + 1
        values = (("row", named.identity), ("total", sum(r.fields["v"] for r in window)))
        rows.append((f"q|{start}|{end}|{named.identity}", start, end, start, named.ts, values))
    return sorted(rows)


@settings(max_examples=50, deadline=None)
@given(records=records, size=st.integers(1, 4), chunk=st.integers(1, 5), cut=st.integers(0, 6))
def test_union_feeding_rows_windows_follows_the_inputs_merge_order(
    records: list[Record], size: int, chunk: int, cut: int
) -> None:
    aggregate = {
        "type": "window_aggregate",
        "params": {
            "window": {"kind": "rows", "size": size, "slide": 1},
            "aggregates": [{"name": "total", "fn": "sum", "field": "v"}],
        },
    }
    expected = rows_sums(records, size)
    run = Run(union_plan(aggregate), records, chunk, range(PARTITIONS))
    assert canonical(run.straight()) == expected
    assert canonical(run.restarted(cut)) == expected
