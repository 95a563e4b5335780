"""UniMiCo's hook on a global ROWS window: the origin's count and split, the target's discard."""

from __future__ import annotations

import numpy as np
from streamshift_engine.events.batch import Batch
from streamshift_engine.migration.timestamps import counted_tuple_discard
from streamshift_engine.migration.tuple_gate import TupleGate
from streamshift_engine.pipeline import Pipeline
from streamshift_engine.plan import compile
from streamshift_engine.plan.parse import parse_plan


def rows_pipeline(size: int, slide: int) -> Pipeline:
    schema = {"ts": "int", "m": "int"}
    window = {"kind": "rows", "size": size, "slide": slide}
    params = {"window": window, "aggregates": [{"name": "total", "fn": "sum", "field": "m"}]}
    return compile(
        parse_plan(
            {
                "name": "rows",
                "inputs": [
                    {
                        "name": "S",
                        "topic": "s",
                        "time_field": "ts",
                        "key_field": "m",
                        "schema": schema,
                    }
                ],
                "operators": [
                    {"id": "w", "type": "window_aggregate", "input": "S", "params": params}
                ],
                "output": "w",
            }
        )
    )


def tuples(times: range) -> Batch:
    ts = np.array(times, np.int64)
    return Batch("S", ts, np.zeros(len(ts), np.int32), ts - 1, {"ts": ts, "m": ts})


def windows(pipeline: Pipeline, times: range) -> list[tuple[int, int]]:
    """(window start, sum) of every window fired while the tuples pass, one by one."""
    fired: list[tuple[int, int]] = []
    for ts in times:
        for results in pipeline.process(tuples(range(ts, ts + 1))):
            starts, totals = results.window_start.tolist(), results.values["total"].tolist()
            fired += zip(starts, totals, strict=True)
    return fired


# ROWS 3 slide 2 over tuples at 1..10 (m = ts): fires after tuples 2, 4, 6, 8, 10.
REFERENCE = [(1, 3), (2, 9), (4, 15), (6, 21), (8, 27)]


def test_the_reference_fires_every_second_tuple_over_the_last_three() -> None:
    assert windows(rows_pipeline(3, 2), range(1, 11)) == REFERENCE


def test_origin_counts_around_the_boundary_and_keeps_the_windows_before_it() -> None:
    origin = rows_pipeline(3, 2)
    assert windows(origin, range(1, 4)) == REFERENCE[:1]
    gate = TupleGate.install(origin, "w")
    gate.watch(6)
    assert (gate.counted_before, gate.count_before_final) == (3, False)
    assert windows(origin, range(4, 6)) == REFERENCE[1:2]
    assert (gate.counted_before, gate.counted_from, gate.count_before_final) == (5, 0, False)
    origin.advance(6)
    assert gate.count_before_final
    assert windows(origin, range(6, 11)) == REFERENCE[2:3]
    assert (gate.counted_before, gate.counted_from) == (5, 5)


def test_target_discards_s_minus_delta_and_fires_on_the_origins_tuples() -> None:
    # The origin counted 5 tuples before the boundary 6: delta = 1, the target's first tuple
    # completes the origin's slide (it closes the window starting at 4, partial here).
    assert counted_tuple_discard(5, 2) == 1
    target = rows_pipeline(3, 2)
    TupleGate.install(target, "w").open(6, discard=1, history_complete=False)
    assert windows(target, range(3, 11)) == REFERENCE[3:]


def test_target_without_discard_suppresses_its_partial_windows() -> None:
    assert counted_tuple_discard(4, 2) == 0
    target = rows_pipeline(3, 2)
    TupleGate.install(target, "w").open(5, discard=0, history_complete=False)
    assert windows(target, range(1, 11)) == REFERENCE[3:]


def test_target_that_saw_the_whole_stream_keeps_the_first_partial_windows() -> None:
    target = rows_pipeline(3, 2)
    TupleGate.install(target, "w").open(1, discard=0, history_complete=True)
    assert windows(target, range(1, 11)) == REFERENCE
