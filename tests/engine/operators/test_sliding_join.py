"""Sliding time-window joins (Flink's window join: per window, the pairs of its records) against
brute force, with snapshot/restore and a partition split at a random point."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from streamshift_engine.plan import parse_plan
from streamshift_engine.plan.parse import plan_document

from engine import references
from engine.harness import Record, Run, canonical, partitioned_records
from engine.plans import join_plan

PARTITIONS = 2
FIELDS = {"k": st.integers(0, 2), "v": st.integers(0, 9)}


def sliding_pairs(records: list[Record], size: int, slide: int) -> list[tuple[Any, ...]]:
    """Every window `[s, s + size)`, `s` a multiple of `slide`, and every pair of a left and a
    right record of equal key inside it."""
    rows = []
    for left in (r for r in records if r.source == "S"):
        for right in (r for r in records if r.source == "T"):
            if left.fields["k"] != right.fields["k"]:
                continue
            low, high = min(left.ts, right.ts), max(left.ts, right.ts)
            for start in range((low // slide) * slide, high - size, -slide):
                if start <= low and high < start + size:
                    rows.append(references.join_pair("join", left, right, start, start + size))
    return sorted(rows)


@settings(max_examples=60, deadline=None)
@given(
    records=partitioned_records(["S", "T"], PARTITIONS, FIELDS, max_records=15),
    size_slide=st.sampled_from([(4000, 2000), (5000, 2000), (3000, 1000), (2000, 2000)]),
    chunk=st.integers(1, 5),
    cut=st.integers(0, 6),
)
def test_sliding_join_pairs_matches_once_per_shared_window(
    records: list[Record], size_slide: tuple[int, int], chunk: int, cut: int
) -> None:
    size, slide = size_slide
    plan = join_plan({"kind": "time", "size": size, "slide": slide})
    expected = sliding_pairs(records, size, slide)
    run = Run(plan, records, chunk, range(PARTITIONS))
    assert canonical(run.straight()) == expected
    assert canonical(run.restarted(cut)) == expected
    assert canonical(run.split(cut, {1})) == expected


def test_a_pair_in_two_sliding_windows_joins_in_each() -> None:
    records = [Record("S", 0, 0, 2500, {"k": 0, "v": 1}), Record("T", 0, 0, 3500, {"k": 0, "v": 2})]
    plan = join_plan({"kind": "time", "size": 4000, "slide": 1000})
    windows = [(row[1], row[2]) for row in canonical(Run(plan, records, 1, [0]).straight())]
    assert windows == [(0, 4000), (1000, 5000), (2000, 6000)]


@settings(max_examples=30, deadline=None)
@given(records=partitioned_records(["S", "T"], PARTITIONS, FIELDS, max_records=10))
def test_sliding_join_results_do_not_depend_on_the_side_order(records: list[Record]) -> None:
    window = {"kind": "time", "size": 3000, "slide": 1000}
    join: dict[str, Any] = {"id": "j", "type": "window_join", "inputs": ["T", "S"]}
    join["params"] = {"window": window, "on": [["k", "k"]]}
    flipped = parse_plan({**plan_document(join_plan(window)), "operators": [join]})
    straight = canonical(Run(join_plan(window), records, 3, range(PARTITIONS)).straight())
    assert canonical(Run(flipped, records, 3, range(PARTITIONS)).straight()) == straight
