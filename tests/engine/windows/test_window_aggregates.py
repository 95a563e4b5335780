"""Window aggregates (time, rows, session) against brute force, with snapshot/restore and a
partition split at a random point."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from engine import references
from engine.harness import Run, canonical, partitioned_records
from engine.plans import AGGREGATES, FIELDS, PARTITIONS, aggregate_plan


@settings(max_examples=50, deadline=None)
@given(
    records=partitioned_records(["S"], PARTITIONS, FIELDS),
    size_slide=st.sampled_from([(4000, 4000), (6000, 2000), (5000, 3000), (1000, 1000)]),
    keyed=st.booleans(),
    chunk=st.integers(1, 7),
    cut=st.integers(0, 10),
)
def test_time_windows_match_brute_force_and_survive_restore(
    records: list[Any], size_slide: tuple[int, int], keyed: bool, chunk: int, cut: int
) -> None:
    size, slide = size_slide
    group_by = ["k"] if keyed else []
    query = aggregate_plan({"kind": "time", "size": size, "slide": slide}, group_by)
    expected = references.time_windows("agg", records, size, slide, group_by, AGGREGATES)
    run = Run(query, records, chunk, range(PARTITIONS))
    assert canonical(run.straight()) == expected
    assert canonical(run.restarted(cut)) == expected
    if keyed:
        assert canonical(run.split(cut, {0, 2})) == expected


@settings(max_examples=50, deadline=None)
@given(
    records=partitioned_records(["S"], PARTITIONS, FIELDS, max_records=15),
    size_slide=st.sampled_from([(5, 1), (3, 3), (4, 2)]),
    keyed=st.booleans(),
    chunk=st.integers(1, 5),
    cut=st.integers(0, 8),
)
def test_rows_windows_follow_the_merge_order(
    records: list[Any], size_slide: tuple[int, int], keyed: bool, chunk: int, cut: int
) -> None:
    size, slide = size_slide
    group_by = ["k"] if keyed else []
    query = aggregate_plan({"kind": "rows", "size": size, "slide": slide}, group_by)
    expected = references.rows_windows("agg", records, ["S"], size, slide, group_by, AGGREGATES)
    run = Run(query, records, chunk, range(PARTITIONS))
    assert canonical(run.straight()) == expected
    assert canonical(run.restarted(cut)) == expected
    if keyed:
        assert canonical(run.split(cut, {1})) == expected


@settings(max_examples=50, deadline=None)
@given(
    records=partitioned_records(["S"], PARTITIONS, FIELDS, max_records=20),
    gap=st.sampled_from([500, 2000, 4000]),
    keyed=st.booleans(),
    chunk=st.integers(1, 5),
    cut=st.integers(0, 8),
)
def test_session_windows_match_brute_force(
    records: list[Any], gap: int, keyed: bool, chunk: int, cut: int
) -> None:
    group_by = ["k"] if keyed else []
    query = aggregate_plan({"kind": "session", "gap": gap}, group_by)
    expected = references.sessions("agg", records, ["S"], gap, group_by, AGGREGATES)
    run = Run(query, records, chunk, range(PARTITIONS))
    assert canonical(run.straight()) == expected
    assert canonical(run.restarted(cut)) == expected
    if keyed:
        assert canonical(run.split(cut, {0})) == expected


def _exact(results: list[Any]) -> list[tuple[Any, ...]]:
    """Results with their values unrounded."""
    return sorted(
        (rid, tuple(sorted(row.items())))
        for b in results
        for rid, row in zip(b.ids(), b.rows(), strict=True)
    )


@settings(max_examples=40, deadline=None)
@given(
    records=partitioned_records(
        ["S"], PARTITIONS, {"k": st.integers(0, 3), "v": st.floats(-1e9, 1e9)}, max_records=20
    ),
    window=st.sampled_from(
        [{"kind": "rows", "size": 4, "slide": 1}, {"kind": "session", "gap": 3000}]
    ),
    keyed=st.booleans(),
    chunk=st.integers(2, 6),
    cut=st.integers(0, 8),
)
def test_float_sums_do_not_depend_on_batch_cuts_or_restores(
    records: list[Any], window: dict[str, Any], keyed: bool, chunk: int, cut: int
) -> None:
    """Sums of floats are added left to right in merge order, bit for bit the same however the
    input is cut into batches and wherever a snapshot is restored."""
    group_by = ["k"] if keyed else []
    query = aggregate_plan(window, group_by)
    one_by_one = _exact(Run(query, records, 1, range(PARTITIONS)).straight())
    run = Run(query, records, chunk, range(PARTITIONS))
    assert _exact(run.straight()) == one_by_one
    assert _exact(run.restarted(cut)) == one_by_one
    if window["kind"] == "rows":
        expected = references.rows_windows("agg", records, ["S"], 4, 1, group_by, AGGREGATES)
    else:
        expected = references.sessions("agg", records, ["S"], 3000, group_by, AGGREGATES)
    assert canonical(run.straight()) == expected
