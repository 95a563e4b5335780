"""Plans of several operators (the seed Q3 shape: a range join feeding a global `Rows` sum)
against brute force, with a snapshot and restore at a random point."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st
from streamshift_engine.plan import Plan, parse_plan

from engine.harness import Record, Run, canonical, merge_order, partitioned_records

SCHEMA = {"ts": "int", "k": "int", "v": "int"}
RANGE_MS, ROWS = 2000, 3


def q3_shape() -> Plan:
    inputs = [{"name": n, "time_field": "ts", "key_field": "k", "schema": SCHEMA} for n in "ST"]
    operators = [
        {
            "id": "j",
            "type": "window_join",
            "inputs": ["S", "T"],
            "params": {"window": {"kind": "range", "size": RANGE_MS}, "on": [["k", "k"]]},
        },
        {
            "id": "sum",
            "type": "window_aggregate",
            "input": "j",
            "params": {
                "window": {"kind": "rows", "size": ROWS, "slide": 1},
                "aggregates": [{"name": "total", "fn": "sum", "field": "S.v"}],
            },
        },
    ]
    return parse_plan({"name": "q3s", "inputs": inputs, "operators": operators, "output": "sum"})


def reference(records: list[Record]) -> list[tuple[object, ...]]:
    """Join results in emission order (each arriving tuple meets the earlier tuples of the
    other side in their arrival order), then the sum of `S.v` over the last ROWS results."""
    seen: list[Record] = []
    emitted = []
    for record in merge_order(records, ["S", "T"]):
        for other in seen:
            same_key = other.fields["k"] == record.fields["k"]
            if other.source != record.source and same_key and abs(other.ts - record.ts) <= RANGE_MS:
                left, right = (record, other) if record.source == "S" else (other, record)
                emitted.append((record.ts, left, right))
        seen.append(record)
    rows = []
    for index, (ts, left, right) in enumerate(emitted):
        window = emitted[max(0, index - ROWS + 1) : index + 1]
        pair = f"{left.identity}*{right.identity}"
        low = min(min(s.ts, t.ts) for _, s, t in window)
        high = max(max(s.ts, t.ts) for _, s, t in window)
        values = (("row", pair), ("total", sum(s.fields["v"] for _, s, _ in window)))
        rows.append(
            (f"q3s|{window[0][0]}|{ts + 1}|{pair}", window[0][0], ts + 1, low, high, values)
        )
    return sorted(rows)


@settings(max_examples=40, deadline=None)
@given(
    records=partitioned_records(
        ["S", "T"],
        2,
        {"k": st.integers(0, 1), "v": st.integers(0, 9)},
        max_records=12,
        max_gap=1500,
    ),
    chunk=st.integers(1, 4),
    cut=st.integers(0, 5),
)
def test_join_then_rows_sum_matches_brute_force_across_a_restore(
    records: list[Record], chunk: int, cut: int
) -> None:
    run = Run(q3_shape(), records, chunk, range(2))
    expected = reference(records)
    assert canonical(run.straight()) == expected
    assert canonical(run.restarted(cut)) == expected
