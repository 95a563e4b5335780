"""Symmetric joins (range, rows, tumbling) against brute force, with snapshot/restore and a
partition split at a random point."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from engine import references
from engine.harness import Record, Run, canonical, partitioned_records
from engine.plans import join_plan

PARTITIONS = 2
FIELDS = {"k": st.integers(0, 2), "v": st.integers(0, 9)}
SCHEMA = {"ts": "int", "k": "int", "v": "int"}


records = partitioned_records(["S", "T"], PARTITIONS, FIELDS, max_records=15)


@settings(max_examples=50, deadline=None)
@given(
    records=records,
    size=st.sampled_from([0, 1000, 4000]),
    chunk=st.integers(1, 5),
    cut=st.integers(0, 6),
)
def test_range_join_pairs_every_match_within_the_range_once(
    records: list[Record], size: int, chunk: int, cut: int
) -> None:
    plan = join_plan({"kind": "range", "size": max(size, 1)})
    within = max(size, 1)
    expected = references.join("join", records, "k", lambda a, b: abs(a.ts - b.ts) <= within)
    run = Run(plan, records, chunk, range(PARTITIONS))
    assert canonical(run.straight()) == expected
    assert canonical(run.restarted(cut)) == expected
    assert canonical(run.split(cut, {1})) == expected


@settings(max_examples=50, deadline=None)
@given(
    records=records,
    size=st.sampled_from([1000, 5000]),
    chunk=st.integers(1, 5),
    cut=st.integers(0, 6),
)
def test_tumbling_join_pairs_matches_of_the_same_window(
    records: list[Record], size: int, chunk: int, cut: int
) -> None:
    plan = join_plan({"kind": "time", "size": size})
    expected = references.join(
        "join", records, "k", lambda a, b: a.ts // size == b.ts // size, window=size
    )
    run = Run(plan, records, chunk, range(PARTITIONS))
    assert canonical(run.straight()) == expected
    assert canonical(run.restarted(cut)) == expected
    assert canonical(run.split(cut, {0})) == expected


@settings(max_examples=50, deadline=None)
@given(records=records, size=st.integers(1, 4), chunk=st.integers(1, 5), cut=st.integers(0, 6))
def test_rows_join_pairs_with_the_last_rows_of_the_other_side(
    records: list[Record], size: int, chunk: int, cut: int
) -> None:
    plan = join_plan({"kind": "rows", "size": size})
    expected = references.rows_join("join", records, "k", size)
    run = Run(plan, records, chunk, range(PARTITIONS))
    assert canonical(run.straight()) == expected
    assert canonical(run.restarted(cut)) == expected
    assert canonical(run.split(cut, {1})) == expected
