"""Stateful map (SMQ counter), top-k per window, filter and map against brute force."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from streamshift_engine.plan import parse_plan

from engine import references
from engine.harness import Record, Run, canonical, partitioned_records

PARTITIONS = 3
FIELDS = {"k": st.integers(0, 3), "v": st.integers(0, 6)}
INPUT = {
    "name": "S",
    "time_field": "ts",
    "key_field": "k",
    "schema": {"ts": "int", "k": "int", "v": "int"},
}


def single(operator: dict[str, Any]) -> Any:
    return parse_plan({"name": "op", "inputs": [INPUT], "operators": [operator], "output": "o"})


@settings(max_examples=50, deadline=None)
@given(
    records=partitioned_records(["S"], PARTITIONS, FIELDS, max_records=30),
    chunk=st.integers(1, 7),
    cut=st.integers(0, 8),
    key=st.sampled_from(["k", "v"]),
)
def test_stateful_map_counts_per_key_in_merge_order(
    records: list[Record], chunk: int, cut: int, key: str
) -> None:
    """Keyed by the partitioning key (`k`: counts per partition, which can be split between
    instances) or not (`v`: one count per value across partitions, in the merge order of all of
    them; a global operator, which one instance runs whole)."""
    plan = single({"id": "o", "type": "stateful_map", "input": "S", "params": {"key": key}})
    expected = references.counter("op", records, ["S"], key)
    run = Run(plan, records, chunk, range(PARTITIONS))
    assert canonical(run.straight()) == expected
    assert canonical(run.restarted(cut)) == expected
    if key == "k":
        assert canonical(run.split(cut, {0, 1})) == expected


@settings(max_examples=50, deadline=None)
@given(
    records=partitioned_records(["S"], PARTITIONS, FIELDS, max_records=30),
    size_slide=st.sampled_from([(4000, 4000), (6000, 2000)]),
    k=st.integers(1, 3),
    chunk=st.integers(1, 7),
    cut=st.integers(0, 8),
)
def test_topk_keeps_the_largest_of_each_window_with_ties(
    records: list[Record], size_slide: tuple[int, int], k: int, chunk: int, cut: int
) -> None:
    size, slide = size_slide
    params = {"by": "v", "k": k, "window": {"kind": "time", "size": size, "slide": slide}}
    plan = single({"id": "o", "type": "topk", "input": "S", "params": params})
    expected = references.top_k("op", records, size, slide, "v", k)
    run = Run(plan, records, chunk, range(PARTITIONS))
    assert canonical(run.straight()) == expected
    assert canonical(run.restarted(cut)) == expected


@settings(max_examples=30, deadline=None)
@given(
    records=partitioned_records(["S"], PARTITIONS, FIELDS, max_records=20), chunk=st.integers(1, 7)
)
def test_filter_and_map_compute_over_fields(records: list[Record], chunk: int) -> None:
    plan = parse_plan(
        {
            "name": "op",
            "inputs": [INPUT],
            "output": "m",
            "operators": [
                {
                    "id": "f",
                    "type": "filter",
                    "input": "S",
                    "params": {"predicate": "v % 2 == 0 and not k in [1, 5] or v > 5"},
                },
                {
                    "id": "m",
                    "type": "map",
                    "input": "f",
                    "params": {"fields": {"w": "(v + 1) * -2 // 3"}},
                },
            ],
        }
    )
    kept = [
        r
        for r in records
        if (r.fields["v"] % 2 == 0 and r.fields["k"] not in (1, 5)) or r.fields["v"] > 5
    ]
    rows = canonical(Run(plan, records, chunk, range(PARTITIONS)).straight())
    assert [(row[0], dict(row[5])["w"]) for row in rows] == sorted(
        (f"op|-1|-1|{r.identity}", (r.fields["v"] + 1) * -2 // 3) for r in kept
    )
