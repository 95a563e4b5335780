"""A release of several inputs is ranked in the merge order `(ts, input index, partition,
offset)` without sorting each input first (`runner._merge_order`), when only range and rows
joins read that order (`runner._ranks_suffice`): the order equals the four-key sort on any
records, in order or not, and a q3-shaped plan (filters before a range join, a projection
after it) gives the same results merged as run by run, on ordered and on disordered input,
under any slicing."""

from __future__ import annotations

from typing import Any

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from streamshift_engine.events.batch import Batch
from streamshift_engine.plan import parse_plan
from streamshift_engine.plan.builtin import builtin
from streamshift_engine.plan.model import Plan
from streamshift_engine.plan.nexmark_queries import nexmark_plan
from streamshift_engine.runner import _merge_order, _ranks_suffice, _sorted

from engine.harness import Record, partitioned_records
from engine.operators.test_join_slicing import PARTITIONS, run
from engine.plans import aggregate_plan
from engine.test_disorder import arrive_out_of_order

SCHEMA = {"ts": "int", "k": "int", "m": "int"}


SPANS = st.sampled_from([5, 70_000, 1 << 33])
"""Timestamp spans drawn for a release."""


@st.composite
def releases(draw: st.DrawFn) -> list[Batch]:
    """One batch per input, as a release concatenates them (each partition's records
    together, partitions ascending) or not: timestamps with many ties over a drawn span, each
    partition's records in offset order or shuffled, runs of a partition in any order."""
    batches = []
    span = draw(SPANS)
    for source in ("S", "T", "U")[: draw(st.integers(1, 3))]:
        runs = []
        for number in sorted(draw(st.sets(st.integers(0, 4), max_size=3))):
            times = draw(st.lists(st.integers(0, 5), max_size=12))
            times = [t * span // 5 + 1_700_000_000_000 for t in times]
            if draw(st.booleans()):
                times.sort()
            offsets = list(range(len(times)))
            if draw(st.booleans()):
                offsets = draw(st.permutations(offsets))
            runs.append([(t, number, o) for t, o in zip(times, offsets, strict=True)])
        if draw(st.booleans()):
            runs = draw(st.permutations(runs))
        rows = [row for run in runs for row in run]
        if draw(st.integers(0, 9)) == 0:
            rows = draw(st.permutations(rows))
        ts, partition, offset = (np.array([r[i] for r in rows], np.int64) for i in range(3))
        batches.append(Batch(source, ts, partition.astype(np.int32), offset, {}))
    return batches


@settings(max_examples=400, deadline=None)
@given(batches=releases())
def test_the_merge_order_is_the_four_key_sort(batches: list[Batch]) -> None:
    bounds = np.cumsum([len(b) for b in batches])[:-1]
    ts = np.concatenate([b.ts for b in batches])
    index = np.repeat(np.arange(len(batches)), [len(b) for b in batches])
    partition = np.concatenate([b.partition for b in batches])
    offset = np.concatenate([b.offset for b in batches])
    expected = np.lexsort((offset, partition, index, ts))
    assert _merge_order(batches, bounds).tolist() == expected.tolist()
    for batch in batches:
        order = np.lexsort((batch.offset, batch.partition, batch.ts))
        assert _sorted(batch).ts.tolist() == batch.ts[order].tolist()
        assert _sorted(batch).offset.tolist() == batch.offset[order].tolist()


def q3_shaped(
    watermark: dict[str, Any] | None = None,
    window: dict[str, Any] | None = None,
    filtered: str = "ST",
) -> Plan:
    """Filters on the inputs `filtered`, a join (range by default) of what they keep, a
    projection of the join."""
    inputs = [
        {"name": n, "time_field": "ts", "key_field": "k", "schema": SCHEMA, "watermark": watermark}
        for n in "ST"
    ]
    if watermark is None:
        inputs = [{k: v for k, v in spec.items() if k != "watermark"} for spec in inputs]
    predicates = {"S": "m < 5", "T": "m % 2 == 1"}
    operators: list[dict[str, Any]] = [
        {"id": f"kept_{n}", "type": "filter", "input": n, "params": {"predicate": predicates[n]}}
        for n in filtered
    ]
    sides = [f"kept_{n}" if n in filtered else n for n in "ST"]
    operators += [
        {
            "id": "join",
            "type": "window_join",
            "inputs": sides,
            "params": {"window": window or {"kind": "range", "size": 2_000}, "on": [["k", "k"]]},
        },
        {
            "id": "out",
            "type": "project",
            "input": "join",
            "params": {"fields": {"id": "id", "left": f"{sides[0]}.m", "right": f"{sides[1]}.m"}},
        },
    ]
    return parse_plan({"name": "q3s", "inputs": inputs, "operators": operators, "output": "out"})


def test_ranks_suffice_when_only_filtered_range_and_rows_joins_read_the_order() -> None:
    assert _ranks_suffice(q3_shaped())
    assert _ranks_suffice(nexmark_plan("nexmark-q3"))
    assert _ranks_suffice(q3_shaped(window={"kind": "rows", "size": 2}))
    # joins fed unfiltered sort every record themselves: each input is sorted first
    assert not _ranks_suffice(q3_shaped(filtered="S"))
    assert not _ranks_suffice(builtin("q1")) and not _ranks_suffice(builtin("q3"))
    # a tumbling join, a ROWS window, an input passed through to the output: not rank-led
    assert not _ranks_suffice(q3_shaped(window={"kind": "time", "size": 1_000}))
    assert not _ranks_suffice(aggregate_plan({"kind": "rows", "size": 3, "slide": 1}, ["k"]))
    passed = parse_plan(
        {
            "name": "pass",
            "inputs": [{"name": "S", "time_field": "ts", "key_field": "k", "schema": SCHEMA}],
            "operators": [
                {"id": "f", "type": "filter", "input": "S", "params": {"predicate": "m < 5"}}
            ],
            "output": "f",
        }
    )
    assert not _ranks_suffice(passed)


records = partitioned_records(
    ["S", "T"],
    PARTITIONS,
    {"k": st.integers(0, 2), "m": st.integers(0, 9)},
    max_records=16,
    max_gap=1_200,
)


@settings(max_examples=60, deadline=None)
@given(
    records=records,
    sizes=st.lists(st.integers(1, 12), min_size=1, max_size=6),
    hold=st.integers(2, 30),
    jitter=st.sampled_from([0, 500, 3_000]),
    seed=st.integers(0, 1_000),
)
def test_a_q3_shaped_join_merged_equals_run_by_run(
    records: list[Record], sizes: list[int], hold: int, jitter: int, seed: int
) -> None:
    arrived = arrive_out_of_order(records, jitter, 0.1, seed) if jitter else records
    plan = q3_shaped({"out_of_orderness": 1_000} if jitter else None)
    by_runs = run(plan, arrived, [10_000], merged=False)
    assert run(plan, arrived, [10_000]) == by_runs
    assert run(plan, arrived, sizes) == by_runs
    assert run(plan, arrived, sizes, hold=hold) == by_runs
